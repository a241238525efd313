#include <mixgraph/functions/softmax.hpp>

#include <stdexcept>

#include <mixgraph/functions/builder.hpp>

namespace mg {

AxisSplit split_at_axis(const Shape& x, int axis, const std::string& tag) {
  const int nd = static_cast<int>(x.size());
  AxisSplit s;
  s.axis = axis_of_shape(axis, x, tag);
  s.outer = shape_size(x, 0, s.axis);
  s.size = x[s.axis];
  s.inner = shape_size(x, s.axis + 1, nd);
  return s;
}

void Softmax::setup_impl(const Variables& in, const Variables& out) {
  split_ = split_at_axis(in[0]->shape(), opts_.axis, tag());
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr softmax(const VariablePtr& x, int axis) {
  return apply_function1(decl::Softmax, SoftmaxOptions{axis}, {x});
}

VariablePtr log_softmax(const VariablePtr& x, int axis) {
  return apply_function1(decl::LogSoftmax, SoftmaxOptions{axis}, {x});
}

}  // namespace functions

}  // namespace mg
