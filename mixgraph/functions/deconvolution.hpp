// Deconvolution: the transposed convolution (the gradient of Convolution
// with respect to its input), as NNabla's deconvolution.
#pragma once

#include <mixgraph/functions/convolution.hpp>

namespace mg {

struct DeconvolutionOptions {
  /// Axes before base_axis are batch axes, base_axis is the channel axis and
  /// the rest are spatial.
  int base_axis = 1;
  /// Per spatial axis; empty means pad 0, stride 1, dilation 1.
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  /// Extra size added to one side of each output axis (each below its
  /// stride), to pick among the output sizes a strided Convolution maps to
  /// the same input size; empty means 0.
  std::vector<int64_t> output_padding;
  /// NNabla's layout flag: true (channels last) is refused with an error
  /// (the kernels are channel-first; transpose x to it).
  bool channel_last = false;

  MG_FIELDS(base_axis, pad, stride, dilation, group, channel_last,
            output_padding);
};

namespace decl {
/// Deconvolution's declaration.
inline constexpr FunctionDeclOf<DeconvolutionOptions> Deconvolution{
    {"Deconvolution",
     "deconvolution",
     {Port{"x"}, Port{"W"}, Port{"b", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// x: (batch..., C, spatial...); W: (C, OC / group, kernel...); b: (OC,).
/// y: (batch..., OC, out...) with out = (in - 1) stride - 2 pad +
/// dilation (k - 1) + 1 + output_padding per spatial axis.
class Deconvolution : public FunctionWith<DeconvolutionOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i < 2; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The shape rule for x, a weight w seen as (C, OC / group, kernel...)
  /// and group: fills geom_, checks the bias (in[2]) and reshapes y.
  void setup_geometry(const Variables& in, const Variables& out, const Shape& w,
                      int group);
  /// The convolution whose backward-data this is: its x is our y (OC
  /// channels) and its y our x (C channels).
  ConvGeometry geom_;
};

struct DepthwiseDeconvolutionOptions {
  /// As Deconvolution's.
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  /// Input channels summed into each output channel.
  int divisor = 1;

  MG_FIELDS(base_axis, pad, stride, dilation, divisor);
};

namespace decl {
/// DepthwiseDeconvolution's declaration (NNabla's input names).
inline constexpr FunctionDeclOf<DepthwiseDeconvolutionOptions>
    DepthwiseDeconvolution{
        {"DepthwiseDeconvolution",
         "depthwise_deconvolution",
         {Port{"x"}, Port{"weight"}, Port{"bias", Port::floating, true, true}},
         {Port{"y"}}}};
}  // namespace decl

/// DepthwiseConvolution's transpose: each input channel deconvolved with
/// its own filter, x (batch..., C, spatial...), weight (C, kernel...), and
/// output channel o the sum of input channels o * divisor to o * divisor +
/// divisor - 1 (NNabla's order), plus bias (C / divisor,). It is the
/// deconvolution with group = C / divisor and one output channel per group.
class DepthwiseDeconvolution : public Deconvolution {
 public:
  explicit DepthwiseDeconvolution(const DepthwiseDeconvolutionOptions& opts);
  const DepthwiseDeconvolutionOptions& options() const { return dw_opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const DepthwiseDeconvolutionOptions dw_opts_;
};

namespace functions {
/// The depthwise deconvolution of x with weight (C, kernel...), plus bias
/// (may be null), as NNabla's depthwise_deconvolution.
VariablePtr depthwise_deconvolution(
    const VariablePtr& x, const VariablePtr& weight,
    const VariablePtr& bias = nullptr,
    const DepthwiseDeconvolutionOptions& opts = {});
/// The transposed convolution of x with W, plus b (may be null).
VariablePtr deconvolution(const VariablePtr& x, const VariablePtr& W,
                          const VariablePtr& b = nullptr,
                          const DeconvolutionOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct DeconvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  std::vector<int64_t> output_padding;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform (fan_in = outmaps / group
  /// * prod(kernel), fan_out = C * prod(kernel)) and b zero.
  Initializer w_init;
  Initializer b_init;
};

/// A deconvolution layer with `outmaps` output channels and the given kernel
/// whose parameters "W" (C, outmaps / group, kernel...) and "b" (outmaps,)
/// live in `scope`/deconv (NNabla's names; created on first use).
VariablePtr deconvolution(const VariablePtr& x, int64_t outmaps,
                          std::vector<int64_t> kernel, ParameterScope scope,
                          const DeconvolutionParams& params = {});

struct DepthwiseDeconvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int divisor = 1;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform over one filter's fans
  /// (fan_in = fan_out = prod(kernel)) and b zero; see
  /// DepthwiseConvolutionParams for why not NNabla's channel-counting fans.
  Initializer w_init;
  Initializer b_init;
};

/// A depthwise deconvolution layer with the given kernel whose parameters
/// "W" (C, kernel...) and "b" (C / divisor,) live in
/// `scope`/depthwise_deconv.
VariablePtr depthwise_deconvolution(
    const VariablePtr& x, std::vector<int64_t> kernel, ParameterScope scope,
    const DepthwiseDeconvolutionParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
