// Convolution: N-D convolution with padding, stride, dilation and groups.
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct ConvolutionOptions {
  /// Axes before base_axis are batch axes, base_axis is the channel axis and
  /// the rest are spatial.
  int base_axis = 1;
  /// Per spatial axis; empty means pad 0, stride 1, dilation 1.
  std::vector<int64_t> pad, stride, dilation;
  /// Channels split into `group` independent convolutions.
  int group = 1;
  /// NNabla's layout flag: true (channels last) is refused with an error
  /// (the kernels are channel-first; transpose x to it).
  bool channel_last = false;

  MG_FIELDS(base_axis, pad, stride, dilation, group, channel_last);
};

/// The geometry of y = conv(x, W) on (batch, channels, spatial...) arrays,
/// as the backends see it: x (batch, in_channels, in_spatial...), W
/// (out_channels, in_channels / group, kernel...), y (batch, out_channels,
/// out_spatial...). Deconvolution uses it with the roles of x and y swapped.
struct ConvGeometry {
  int64_t batch = 0;  // the product of the axes before base_axis
  int64_t in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in_spatial, out_spatial, kernel, pad, stride, dilation;

  int64_t x_size() const;
  int64_t w_size() const;
  int64_t y_size() const;
  bool operator<(const ConvGeometry& o) const;
};

namespace detail {
/// Throws std::invalid_argument starting with `tag` when `channel_last` is
/// set: NNabla's channels-last layout, which no kernel here implements.
void check_channel_first(const std::string& tag, bool channel_last);
/// Checks that base_axis leaves x a channel axis and at least one spatial
/// axis after it; throws std::invalid_argument starting with `tag` otherwise.
void check_conv_base_axis(const std::string& tag, const Shape& x,
                          int base_axis);
/// An option given per spatial axis of x: `v`, checked to have `axes`
/// values each at least `min`, or `fallback` on every axis when empty.
std::vector<int64_t> per_axis(const std::string& tag, const char* name,
                              const std::vector<int64_t>& v, size_t axes,
                              int64_t fallback, int64_t min, const Shape& x);
/// Checks what Convolution and Deconvolution share (base_axis, W's rank,
/// the per-axis options, group) and returns a geometry with batch, group,
/// kernel, pad, stride and dilation filled; throws std::invalid_argument
/// starting with `tag` otherwise.
ConvGeometry conv_common(const std::string& tag, const Shape& x, const Shape& w,
                         int base_axis, const std::vector<int64_t>& pad,
                         const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& dilation, int group);
/// x's shape, after the checks that the convolution and deconvolution
/// layers make before they create parameters: x is not null, base_axis
/// leaves it a channel axis and a spatial axis, and kernel has one positive
/// size per spatial axis.
const Shape& conv_layer_input_shape(const std::string& tag,
                                    const VariablePtr& x, int base_axis,
                                    const Shape& kernel);

/// The parameters of a convolution or deconvolution layer in `scope`: "W"
/// with `w_shape`, filled by params.w_init or else Glorot-uniform with
/// fan_in and fan_out, and with params.with_bias "b" (outmaps,), filled by
/// params.b_init or else zero (null without bias).
template <class Params>
std::pair<VariablePtr, VariablePtr> conv_layer_parameters(
    ParameterScope scope, const Shape& w_shape, int64_t fan_in, int64_t fan_out,
    int64_t outmaps, const Params& params) {
  auto W = scope.get_or_create(
      "W", w_shape,
      params.w_init ? params.w_init
                    : glorot_uniform_initializer(fan_in, fan_out));
  VariablePtr b;
  if (params.with_bias) {
    b = scope.get_or_create(
        "b", {outmaps},
        params.b_init ? params.b_init : constant_initializer(0.0f));
  }
  return {W, b};
}
}  // namespace detail

namespace decl {
/// Convolution's declaration.
inline constexpr FunctionDeclOf<ConvolutionOptions> Convolution{
    {"Convolution",
     "convolution",
     {Port{"x"}, Port{"W"}, Port{"b", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// x: (batch..., C, spatial...); W: (OC, C / group, kernel...); b: (OC,).
/// y: (batch..., OC, out...) with out = (in + 2 pad - (dilation (k - 1) + 1))
/// / stride + 1 per spatial axis.
class Convolution : public FunctionWith<ConvolutionOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i < 2; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The shape rule for x, a weight w seen as (OC, C / group, kernel...)
  /// and group: fills geom_, checks the bias (in[2]) and reshapes y.
  void setup_geometry(const Variables& in, const Variables& out, const Shape& w,
                      int group);
  ConvGeometry geom_;
};

struct DepthwiseConvolutionOptions {
  /// As Convolution's.
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  /// Output channels per input channel.
  int multiplier = 1;

  MG_FIELDS(base_axis, pad, stride, dilation, multiplier);
};

namespace decl {
/// DepthwiseConvolution's declaration (NNabla's input names).
inline constexpr FunctionDeclOf<DepthwiseConvolutionOptions>
    DepthwiseConvolution{
        {"DepthwiseConvolution",
         "depthwise_convolution",
         {Port{"x"}, Port{"weight"}, Port{"bias", Port::floating, true, true}},
         {Port{"y"}}}};
}  // namespace decl

/// Each input channel convolved on its own with `multiplier` filters:
/// x (batch..., C, spatial...), weight (C * multiplier, kernel...), bias
/// (C * multiplier,); output channel c * multiplier + i comes from input
/// channel c (NNabla's order). It is the convolution with group = C and
/// one input channel per group, and runs on the same kernels.
class DepthwiseConvolution : public Convolution {
 public:
  explicit DepthwiseConvolution(const DepthwiseConvolutionOptions& opts);
  const DepthwiseConvolutionOptions& options() const { return dw_opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const DepthwiseConvolutionOptions dw_opts_;
};

namespace functions {
/// N-D convolution of x with W, plus b (may be null), as NNabla's
/// convolution.
VariablePtr convolution(const VariablePtr& x, const VariablePtr& W,
                        const VariablePtr& b = nullptr,
                        const ConvolutionOptions& opts = {});
}  // namespace functions

namespace functions {
/// The depthwise convolution of x with weight (C * multiplier, kernel...),
/// plus bias (may be null), as NNabla's depthwise_convolution.
VariablePtr depthwise_convolution(const VariablePtr& x,
                                  const VariablePtr& weight,
                                  const VariablePtr& bias = nullptr,
                                  const DepthwiseConvolutionOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct ConvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform (fan_in = C / group *
  /// prod(kernel), fan_out = outmaps * prod(kernel)) and b zero.
  Initializer w_init;
  Initializer b_init;
};

/// A convolution layer with `outmaps` output channels and the given kernel
/// whose parameters "W" (outmaps, C / group, kernel...) and "b" (outmaps,)
/// live in `scope`/conv (NNabla's names; created on first use); a depthwise
/// layer's in `scope`/depthwise_conv.
VariablePtr convolution(const VariablePtr& x, int64_t outmaps,
                        std::vector<int64_t> kernel, ParameterScope scope,
                        const ConvolutionParams& params = {});

struct DepthwiseConvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int multiplier = 1;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform over the filter's true
  /// fans (fan_in = prod(kernel), fan_out = multiplier * prod(kernel)) and
  /// b zero. NNabla counts every channel in the fans (fan_in = C *
  /// prod(kernel)), which shrinks the weights by sqrt(C) for no reason a
  /// depthwise filter has; PyTorch uses the true fan too.
  Initializer w_init;
  Initializer b_init;
};

/// A depthwise convolution layer with the given kernel whose parameters
/// "W" (C * multiplier, kernel...) and "b" (C * multiplier,) live in
/// `scope` (created on first use).
VariablePtr depthwise_convolution(
    const VariablePtr& x, std::vector<int64_t> kernel, ParameterScope scope,
    const DepthwiseConvolutionParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
