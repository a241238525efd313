// FusedBatchNormalization: batch normalization, a residual input added and
// a ReLU, in one function (NNabla's, for ResNet blocks).
#pragma once

#include <string>

#include <mixgraph/functions/batch_normalization.hpp>

namespace mg {

/// BatchNormalization's options and the activation.
struct FusedBatchNormalizationOptions : BatchNormalizationOptions {
  /// The activation: "relu" is the only one (NNabla's).
  std::string nonlinearity = "relu";

  /// NNabla's order: BatchNormalization's then the activation.
  template <class V>
  void fields(V&& v) {
    shared_fields(v);
    v("nonlinearity", nonlinearity);
  }
};

namespace decl {
/// FusedBatchNormalization's declaration: BatchNormalization's inputs, then
/// the optional residual z (x's shape).
inline constexpr FunctionDeclOf<FusedBatchNormalizationOptions>
    FusedBatchNormalization{{"FusedBatchNormalization",
                             "fused_batch_normalization",
                             {Port{"x"}, Port{"beta"}, Port{"gamma"},
                              Port{"mean", Port::float32, false},
                              Port{"variance", Port::float32, false},
                              Port{"z", Port::floating, true, true}},
                             {Port{"y"}}}};
}  // namespace decl

/// y = relu(batch_normalization(x, beta, gamma, mean, variance) + z), z
/// left out when not given: BatchNormalization's statistics, running
/// updates and grads, with the sum and the ReLU applied to the fp32 values
/// before y is rounded once. Backward masks dy where y > 0 (NNabla's rule,
/// read from y) and gives z that masked grad.
class FusedBatchNormalization : public BatchNormalization {
 public:
  explicit FusedBatchNormalization(const FusedBatchNormalizationOptions& opts)
      : BatchNormalization(opts), fused_opts_(opts) {}
  // BatchNormalization's inputs; z never.
  bool grad_depends_input_data(int i) const override {
    return i < 5 && BatchNormalization::grad_depends_input_data(i);
  }
  // The ReLU's mask is read from y.
  bool grad_depends_output_data(int) const override { return true; }
  const FusedBatchNormalizationOptions& options() const { return fused_opts_; }

 protected:
  void setup_full(const Variables& in, const Variables& out) override;
  const FusedBatchNormalizationOptions fused_opts_;
};

namespace functions {
/// relu(batch_normalization(x, ...) + z); z may be null (no residual).
VariablePtr fused_batch_normalization(
    const VariablePtr& x, const VariablePtr& beta, const VariablePtr& gamma,
    const VariablePtr& mean, const VariablePtr& variance,
    const VariablePtr& z = nullptr,
    const FusedBatchNormalizationOptions& opts = {});
}  // namespace functions

namespace parametric_functions {
/// PF::batch_normalization's layer (the same parameters in `scope`/bn)
/// fused with the residual z (may be null) and a ReLU.
VariablePtr fused_batch_normalization(
    const VariablePtr& x, const VariablePtr& z, ParameterScope scope,
    bool batch_stat = true, const BatchNormalizationParams& params = {},
    const std::string& nonlinearity = "relu");
}  // namespace parametric_functions

}  // namespace mg
