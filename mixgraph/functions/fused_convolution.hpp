// FusedConvolution: pad, convolution, batch normalization, a residual input
// and an activation as one function (NNabla's), run as the chain of our
// Pad, Convolution, BatchNormalization, Add2 and activation functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct FusedConvolutionOptions {
  /// Convolution's base_axis; batch normalization runs over it.
  int base_axis = 1;
  /// Per spatial axis (Convolution's pad, symmetric), or a (before, after)
  /// pair per spatial axis (Pad's pad_width); empty: no padding.
  std::vector<int64_t> pad;
  /// Convolution's stride and dilation; empty: 1 on every spatial axis.
  std::vector<int64_t> stride, dilation;
  int group = 1;
  /// NNabla's channel-last layout: not supported (our Convolution is
  /// channel-first); true is an error.
  bool channel_last = false;
  /// BatchNormalization's options.
  float decay_rate = 0.9f;
  float eps = 1e-5f;
  bool batch_stat = true;
  /// "identity", "relu", "sigmoid", "tanh", "leaky_relu" (alpha), "elu"
  /// (alpha) or "relu6"; the arguments in nonlinearity_args.
  std::string nonlinearity = "relu";
  std::vector<float> nonlinearity_args;
  /// Pad's mode ("constant", "reflect", "repeat") and constant value.
  std::string pad_mode = "constant";
  float constant_value = 0.0f;

  MG_FIELDS(base_axis, pad, stride, dilation, group, channel_last, decay_rate,
            eps, batch_stat, nonlinearity, nonlinearity_args, pad_mode,
            constant_value);
};

namespace decl {
/// FusedConvolution's declaration. The optional inputs are given in this
/// order, and which are present is read from their count (NNabla's rule):
/// 2 (x, weight), 3 (+ bias if 1-D, else + z), 4 (+ bias, z), 6 (+ beta,
/// gamma, mean, variance), 7 (+ beta .. variance, z). The ports name the
/// full list.
inline constexpr FunctionDeclOf<FusedConvolutionOptions> FusedConvolution{
    {"FusedConvolution",
     "fused_convolution",
     {Port{"x"}, Port{"weight"}, Port{"bias", Port::floating, true, true},
      Port{"beta", Port::floating, true, true},
      Port{"gamma", Port::floating, true, true},
      Port{"mean", Port::float32, false, true},
      Port{"variance", Port::float32, false, true},
      Port{"z", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// y = act(batch_normalization(convolution(pad(x), weight, bias)) + z),
/// each stage left out as NNabla's: Pad runs only for a (before, after)
/// pad, a non-constant mode or a non-zero constant (else the convolution
/// pads); BatchNormalization (axes {base_axis}) only with beta .. variance.
/// Forward and backward run our functions' kernels in a chain (those the
/// context picks, in its types), so the values, grads and running
/// statistics are those of the unfused graph bit for bit.
class FusedConvolution : public FunctionWith<FusedConvolutionOptions> {
 public:
  using FunctionWith::FunctionWith;
  // The activation's grad may read y.
  bool grad_depends_output_data(int) const override {
    return !opts_.nonlinearity.empty() && opts_.nonlinearity != "identity";
  }
  // Optional inputs are placed by their count: input i's port is what
  // setup found it to be (the positional rule until then).
  int input_port(int i) const override {
    return i < static_cast<int>(ports_.size()) ? ports_[i]
                                               : Function::input_port(i);
  }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  void forward_impl(const Variables& in, const Variables& out) override;
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override;

 private:
  // One function of the chain: its inputs and its output as slots (an
  // outer input index >= 0, an intermediate -1 - k, or kOutput).
  struct Step {
    std::shared_ptr<Function> fn;
    std::vector<int> in;
    int out;
  };
  static constexpr int kOutput = -1000000;
  Variable* slot(int s, const Variables& in, const Variables& out) const;
  Variables vars(const std::vector<int>& slots, const Variables& in,
                 const Variables& out) const;
  // The declared port of each input (kX .. kZ), set by setup.
  std::vector<int> ports_;
  std::vector<Step> steps_;
  std::vector<std::shared_ptr<Variable>> tmp_;
};

namespace functions {
/// The fused layer. bias, the batch normalization's four (all or none) and
/// z may each be null; a bias together with batch normalization is an
/// error (NNabla's rule: its count rule cannot tell them apart).
VariablePtr fused_convolution(const VariablePtr& x, const VariablePtr& weight,
                              const VariablePtr& bias, const VariablePtr& beta,
                              const VariablePtr& gamma, const VariablePtr& mean,
                              const VariablePtr& variance, const VariablePtr& z,
                              const FusedConvolutionOptions& opts = {});
}  // namespace functions

}  // namespace mg
