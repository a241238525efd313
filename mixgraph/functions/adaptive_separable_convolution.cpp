#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/adaptive_separable_convolution.hpp>
#include <mixgraph/functions/builder.hpp>

#include <stdexcept>

namespace mg {

void AdaptiveSeparableConvolution::setup_impl(const Variables& in,
                                              const Variables& out) {
  const char* names[3] = {"x", "vertical_kernel", "horizontal_kernel"};
  for (int i = 0; i < 3; ++i) {
    if (in[i]->shape().size() != 4) {
      throw std::invalid_argument(msg(tag(), names[i], " with shape ",
                                      shape_str(in[i]->shape()),
                                      " must be 4-D"));
    }
  }
  const Shape& x = in[0]->shape();
  const Shape& kv = in[1]->shape();
  const Shape& kh = in[2]->shape();
  if (kv[0] != x[0] || kh[0] != x[0]) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x),
            ", vertical_kernel with "
            "shape ",
            shape_str(kv), " and horizontal_kernel with shape ", shape_str(kh),
            " must have one batch size"));
  }
  const int64_t oh = x[2] - kv[1] + 1, ow = x[3] - kh[1] + 1;
  if (oh <= 0 || ow <= 0) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x),
            " is smaller than the kernels: vertical size ", kv[1],
            ", horizontal size ", kh[1]));
  }
  for (int i = 1; i < 3; ++i) {
    const Shape& k = in[i]->shape();
    if (k[2] < oh || k[2] > x[2] || k[3] < ow || k[3] > x[3]) {
      throw std::invalid_argument(msg(
          tag(), names[i], " with shape ", shape_str(k),
          ": its height must be in [", oh, ", ", x[2], "] and its width in [",
          ow, ", ", x[3], "] (the output's size to x's)"));
    }
  }
  out[0]->reshape({x[0], x[1], oh, ow});
}

namespace functions {

VariablePtr adaptive_separable_convolution(
    const VariablePtr& x, const VariablePtr& vertical_kernel,
    const VariablePtr& horizontal_kernel) {
  return apply_function1(decl::AdaptiveSeparableConvolution,
                         AdaptiveSeparableConvolutionOptions{},
                         {x, vertical_kernel, horizontal_kernel});
}

}  // namespace functions

}  // namespace mg
