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
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(DeconvolutionOptions& o, V&& v) {
  v("base_axis", o.base_axis);
  v("pad", o.pad);
  v("stride", o.stride);
  v("dilation", o.dilation);
  v("group", o.group);
  v("output_padding", o.output_padding);
}

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
class Deconvolution : public Function {
 public:
  explicit Deconvolution(const DeconvolutionOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int i) const override { return i < 2; }
  const DeconvolutionOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const DeconvolutionOptions opts_;
  /// The convolution whose backward-data this is: its x is our y (OC
  /// channels) and its y our x (C channels).
  ConvGeometry geom_;
};

namespace functions {
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
/// live in `scope` (created on first use).
VariablePtr deconvolution(const VariablePtr& x, int64_t outmaps,
                          std::vector<int64_t> kernel, ParameterScope scope,
                          const DeconvolutionParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
