#include <mixgraph/functions/prelu.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/graph/initializer.hpp>

namespace mg {

void PReLU::setup_impl(const Variables& in, const Variables& out) {
  const Shape& xs = in[0]->shape();
  const Shape& ws = in[1]->shape();
  const int ndim = static_cast<int>(xs.size());
  const bool shared = ws.empty() || (ws.size() == 1 && ws[0] == 1);
  if (!shared) {
    const int axis = axis_of_shape(opts_.base_axis, xs, tag(), "base_axis");
    if (ws.size() != 1 || ws[0] != xs[axis]) {
      throw std::invalid_argument(
          msg(tag(), "w with shape ", shape_str(ws),
              " must be () or (1,) (one shared slope) or (", xs[axis],
              ",) (a slope per channel of x with shape ", shape_str(xs),
              " along base_axis ", opts_.base_axis, ")"));
    }
    outer_ = shape_size(xs, 0, axis);
    channels_ = xs[axis];
    inner_ = shape_size(xs, axis + 1, ndim);
  } else {
    outer_ = 1;
    channels_ = 1;
    inner_ = shape_size(xs);
  }
  out[0]->reshape(xs);
}

namespace functions {

VariablePtr prelu(const VariablePtr& x, const VariablePtr& w, int base_axis) {
  return apply_function1(decl::PReLU, PReLUOptions{base_axis}, {x, w});
}

}  // namespace functions

namespace parametric_functions {

VariablePtr prelu(const VariablePtr& x, ParameterScope scope, int base_axis,
                  bool shared) {
  Shape w_shape;
  if (!shared) {
    const Shape& xs = x->shape();
    w_shape = {xs[axis_of_shape(base_axis, xs, "[prelu] ", "base_axis")]};
  }
  auto w = scope["prelu"].get_or_create("slope", w_shape,
                                        constant_initializer(0.25f));
  return functions::prelu(x, w, base_axis);
}

}  // namespace parametric_functions

}  // namespace mg
