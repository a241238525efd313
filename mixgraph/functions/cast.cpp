#include <mixgraph/functions/cast.hpp>

#include <mixgraph/functions/builder.hpp>

namespace mg {

void Cast::setup_impl(const Variables& in, const Variables& out) {
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr cast(const VariablePtr& x, Dtype dtype) {
  return apply_function1(decl::Cast, CastOptions{dtype}, {x});
}

}  // namespace functions

}  // namespace mg
