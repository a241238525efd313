#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/clip_grad.hpp>

#include <stdexcept>

namespace mg {

void ClipGradByValue::setup_impl(const Variables& in, const Variables& out) {
  const char* names[] = {"x", "min", "max"};
  for (int i = 1; i < 3; ++i) {
    if (in[i]->shape() != in[0]->shape()) {
      throw std::invalid_argument(
          msg(tag(), names[i], " with shape ", shape_str(in[i]->shape()),
              " must have x's shape ", shape_str(in[0]->shape()),
              " (broadcast it first)"));
    }
  }
  out[0]->reshape(in[0]->shape());
}

void ClipGradByNorm::setup_impl(const Variables& in, const Variables& out) {
  reduced_.assign(in[0]->ndim(), opts_.axes.empty());
  for (int k : axes_of_shape(opts_.axes, in[0]->shape(), tag())) {
    reduced_[k] = true;
  }
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr clip_grad_by_value(const VariablePtr& x, const VariablePtr& min,
                               const VariablePtr& max) {
  return apply_function1(decl::ClipGradByValue, ClipGradByValueOptions{},
                         {x, min, max});
}

VariablePtr clip_grad_by_norm(const VariablePtr& x,
                              const ClipGradByNormOptions& opts) {
  return apply_function1(decl::ClipGradByNorm, opts, {x});
}

}  // namespace functions

}  // namespace mg
