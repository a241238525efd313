#include <mixgraph/functions/prune.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Prune::setup_impl(const Variables& in, const Variables& out) {
  if (!(opts_.rate >= 0.0f && opts_.rate <= 1.0f)) {
    throw std::invalid_argument(
        msg(tag(), "rate ", opts_.rate, " must be in [0, 1]"));
  }
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr prune(const VariablePtr& x, float rate) {
  return apply_function1(decl::Prune, PruneOptions{rate}, {x});
}

}  // namespace functions

}  // namespace mg
