#include <mixgraph/graph/function.hpp>

#include <cctype>
#include <stdexcept>

namespace mg {

std::string snake_case(const std::string& pascal) {
  // Acronyms read as one word: ReLU -> relu, GELU -> gelu, LeakyReLU ->
  // leaky_relu; other runs of capitals split before their last letter.
  std::string name = pascal;
  for (const char* acronym : {"ReLU", "GELU", "ELU"}) {
    const std::string a = acronym;
    std::string word = a.substr(0, 1);
    for (size_t i = 1; i < a.size(); ++i) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(a[i])));
    }
    for (size_t pos; (pos = name.find(a)) != std::string::npos;) {
      name.replace(pos, a.size(), word);
    }
  }
  auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)); };
  std::string s;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (upper(c) && i > 0) {
      const bool after_lower = !upper(name[i - 1]);
      const bool ends_run = i + 1 < name.size() && !upper(name[i + 1]);
      if (after_lower || ends_run) s += '_';
    }
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string shapes_str(const Variables& vars) {
  std::string s;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (i) s += ", ";
    s += shape_str(vars[i]->shape());
  }
  return s;
}

std::string Function::tag() const { return "[" + snake_case(name()) + "] "; }

void Function::setup(const Variables& inputs, const Variables& outputs) {
  const int n = static_cast<int>(inputs.size());
  if (n < min_inputs() || n > max_inputs()) {
    const std::string expected =
        min_inputs() == max_inputs()
            ? std::to_string(min_inputs())
            : std::to_string(min_inputs()) + " to " +
                  std::to_string(max_inputs());
    throw std::invalid_argument(tag() + "takes " + expected +
                                " inputs, but got " + std::to_string(n) +
                                " with shapes " + shapes_str(inputs));
  }
  if (static_cast<int>(outputs.size()) != num_outputs()) {
    throw std::invalid_argument(tag() + "has " + std::to_string(num_outputs()) +
                                " outputs, but " +
                                std::to_string(outputs.size()) + " were given");
  }
  setup_impl(inputs, outputs);
}

void Function::forward(const Variables& inputs, const Variables& outputs) {
  forward_impl(inputs, outputs);
}

void Function::backward(const Variables& inputs, const Variables& outputs,
                        const std::vector<bool>& propagate_down,
                        const std::vector<bool>& accum) {
  backward_impl(inputs, outputs, propagate_down, accum);
}

}  // namespace mg
