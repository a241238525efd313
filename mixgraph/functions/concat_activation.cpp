#include <mixgraph/functions/concat_activation.hpp>

#include <mixgraph/functions/builder.hpp>

namespace mg {

void ConcatActivation::setup_split(const Variables& in, const Variables& out,
                                   int axis) {
  split_ = split_at_axis(in[0]->shape(), axis, tag());
  Shape y = in[0]->shape();
  y[split_.axis] *= 2;
  out[0]->reshape(y);
}

namespace functions {

VariablePtr crelu(const VariablePtr& x, int axis) {
  return apply_function1(decl::CReLU, CReLUOptions{axis}, {x});
}

VariablePtr celu(const VariablePtr& x, float alpha, int axis) {
  return apply_function1(decl::CELU, CELUOptions{alpha, axis}, {x});
}

}  // namespace functions

}  // namespace mg
