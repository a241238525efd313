// DeformableConvolution: 2-D convolution sampling x at learned offsets
// (v1), optionally weighted by a learned mask (modulated, v2), as NNabla's.
#pragma once

#include <mixgraph/functions/convolution.hpp>

namespace mg {

struct DeformableConvolutionOptions {
  /// As Convolution's: batch axes before it, then C, H, W.
  int base_axis = 1;
  /// Per spatial axis; empty means pad 0, stride 1, dilation 1.
  std::vector<int64_t> pad, stride, dilation;
  /// Channels split into `group` independent convolutions.
  int group = 1;
  /// Channels split into groups sharing one set of offsets (and mask).
  int deformable_group = 1;
  /// NNabla's argument; true is refused, as NNabla's CPU kernel does.
  bool channel_last = false;

  MG_FIELDS(base_axis, pad, stride, dilation, group, deformable_group,
            channel_last);
};

namespace decl {
/// DeformableConvolution's declaration (NNabla's input names). With four
/// inputs the fourth is the bias when 1-D, else the mask (NNabla's rule).
inline constexpr FunctionDeclOf<DeformableConvolutionOptions>
    DeformableConvolution{{"DeformableConvolution",
                           "deformable_convolution",
                           {Port{"x"}, Port{"weight"}, Port{"offset"},
                            Port{"mask", Port::floating, true, true},
                            Port{"bias", Port::floating, true, true}},
                           {Port{"y"}}}};
}  // namespace decl

/// x (batch..., C, H, W), weight (OC, C / group, kh, kw), offset
/// (batch..., 2 deformable_group kh kw, H, W), mask (batch...,
/// deformable_group kh kw, H, W), bias (OC,). Kernel tap (i, j) of output
/// (oh, ow) samples x bilinearly at (oh s_h + i d_h - p_h + dy, ow s_w + j
/// d_w - p_w + dx), (dy, dx) read from offset channels 2 (i kw + j) and
/// + 1 of the tap's deformable group at (oh s_h, ow s_w) (x's resolution:
/// so (out - 1) stride must stay inside H and W), times the mask there; a
/// sample outside (-1, H) x (-1, W) is 0, corners outside the image add 0.
/// Then a grouped GEMM with weight, plus bias: y (batch..., OC, Ho, Wo) as
/// Convolution's. 2-D only, as NNabla's. Everything in fp32; grads to x,
/// weight, offset, mask and bias (NNabla gives offset and mask theirs only
/// while x takes a grad too; here each is independent).
class DeformableConvolution
    : public FunctionWith<DeformableConvolutionOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t batch_ = 0, c_ = 0, oc_ = 0, h_ = 0, w_ = 0, kh_ = 0, kw_ = 0,
          oh_ = 0, ow_ = 0;
  int64_t pad_[2] = {0, 0}, stride_[2] = {1, 1}, dil_[2] = {1, 1};
  int mask_index_ = -1, bias_index_ = -1;
};

namespace functions {
/// The deformable convolution of x with weight at offset, weighted by mask
/// (may be null: v1) plus bias (may be null), as NNabla's.
VariablePtr deformable_convolution(
    const VariablePtr& x, const VariablePtr& weight, const VariablePtr& offset,
    const VariablePtr& mask = nullptr, const VariablePtr& bias = nullptr,
    const DeformableConvolutionOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct DeformableConvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  int deformable_group = 1;
  bool channel_last = false;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform (fan_in = C / group *
  /// prod(kernel), fan_out = outmaps * prod(kernel), as PF::convolution)
  /// and b zero.
  Initializer w_init;
  Initializer b_init;
};

/// A deformable convolution layer with `outmaps` output channels and the
/// given kernel, sampling at `offset` and weighted by `mask` (may be null),
/// whose parameters "W" (outmaps, C / group, kernel...) and "b" (outmaps,)
/// live in `scope`/deformable_conv (NNabla's names; created on first use).
VariablePtr deformable_convolution(
    const VariablePtr& x, int64_t outmaps, std::vector<int64_t> kernel,
    const VariablePtr& offset, const VariablePtr& mask, ParameterScope scope,
    const DeformableConvolutionParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
