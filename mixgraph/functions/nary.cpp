#include <mixgraph/functions/nary.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void NaryFunction::setup_impl(const Variables& in, const Variables& out) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i]->shape() != in[0]->shape()) {
      throw std::invalid_argument(
          msg(tag(), "x", i, " with shape ", shape_str(in[i]->shape()),
              " differs from x0 with shape ", shape_str(in[0]->shape()),
              " (every input must have one shape)"));
    }
  }
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr add_n(std::vector<VariablePtr> xs) {
  return apply_function1(decl::AddN, NaryOptions{}, std::move(xs));
}

VariablePtr mul_n(std::vector<VariablePtr> xs) {
  return apply_function1(decl::MulN, NaryOptions{}, std::move(xs));
}

}  // namespace functions

}  // namespace mg
