#include <mixgraph/graph/function.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/profile.hpp>

namespace mg {

std::string shapes_str(const Variables& vars) {
  std::string s;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (i) s += ", ";
    s += shape_str(vars[i]->shape());
  }
  return s;
}

const FunctionDecl Function::kUndeclared{"Undeclared", "undeclared", {}, {}};

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::reduced:
      return "reduced";
    case Precision::float32:
      return "float";
  }
  return "invalid";
}

std::string Function::tag() const { return decl_->tag(); }

void Function::setup(const Variables& inputs, const Variables& outputs) {
  const int n = static_cast<int>(inputs.size());
  if (n < min_inputs() || n > max_inputs()) {
    const std::string expected = min_inputs() == max_inputs()
                                     ? std::to_string(min_inputs())
                                     : std::to_string(min_inputs()) + " to " +
                                           std::to_string(max_inputs());
    throw std::invalid_argument(msg(tag(), "takes ", expected,
                                    " inputs, but got ", n, " with shapes ",
                                    shapes_str(inputs)));
  }
  const int m = num_outputs_for(inputs);
  if (static_cast<int>(outputs.size()) != m) {
    throw std::invalid_argument(
        msg(tag(), "has ", m, " outputs, but ", outputs.size(), " were given"));
  }
  setup_impl(inputs, outputs);
}

void Function::forward(const Variables& inputs, const Variables& outputs) {
  const FunctionProfile::Scope timed(decl_->name, "forward");
  forward_impl(inputs, outputs);
}

void Function::backward(const Variables& inputs, const Variables& outputs,
                        const std::vector<bool>& propagate_down,
                        const std::vector<bool>& accum) {
  const FunctionProfile::Scope timed(decl_->name, "backward");
  backward_impl(inputs, outputs, propagate_down, accum);
}

}  // namespace mg
