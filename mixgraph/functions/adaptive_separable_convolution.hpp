// AdaptiveSeparableConvolution: a per-sample, per-pixel kernel made of a
// vertical and a horizontal 1-D kernel (video frame interpolation), as
// NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct AdaptiveSeparableConvolutionOptions {};

namespace decl {
/// AdaptiveSeparableConvolution's declaration.
inline constexpr FunctionDeclOf<AdaptiveSeparableConvolutionOptions>
    AdaptiveSeparableConvolution{
        {"AdaptiveSeparableConvolution",
         "adaptive_separable_convolution",
         {Port{"x"}, Port{"vertical_kernel"}, Port{"horizontal_kernel"}},
         {Port{"y"}}}};
}  // namespace decl

/// x (B, C, H, W), vertical_kernel (B, Kv, Hk, Wk), horizontal_kernel (B,
/// Kh, Hk', Wk'): y (B, C, Ho, Wo), Ho = H - Kv + 1, Wo = W - Kh + 1,
/// y[b, c, h, w] = sum_{j, i} kv[b, j, h, w] kh[b, i, h, w] x[b, c, h + j,
/// w + i], summed in fp32 (no padding: pad x first). Each kernel's last two
/// axes must lie in [Ho, H] and [Wo, W] (NNabla checks the vertical
/// kernel's height and the horizontal kernel's width, and reads the others
/// unchecked).
class AdaptiveSeparableConvolution : public Function {
 public:
  explicit AdaptiveSeparableConvolution(
      const AdaptiveSeparableConvolutionOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// x convolved at each pixel with vertical_kernel x horizontal_kernel.
VariablePtr adaptive_separable_convolution(
    const VariablePtr& x, const VariablePtr& vertical_kernel,
    const VariablePtr& horizontal_kernel);
}  // namespace functions

}  // namespace mg
