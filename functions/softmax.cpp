#include <mixgraph/functions/softmax.hpp>

#include <stdexcept>

#include <mixgraph/functions/builder.hpp>

namespace mg {

AxisSplit split_at_axis(const Shape& x, int axis, const std::string& tag) {
  const int nd = static_cast<int>(x.size());
  if (axis < -nd || axis >= nd) {
    throw std::invalid_argument(tag + "axis " + std::to_string(axis) +
                                " is out of range for x with shape " +
                                shape_str(x));
  }
  AxisSplit s;
  s.axis = axis < 0 ? axis + nd : axis;
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
