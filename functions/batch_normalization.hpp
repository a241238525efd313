// BatchNormalization: normalise over every axis but `axes`, with running
// statistics kept in fp32 whatever the compute type.
#pragma once

#include <vector>

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct BatchNormalizationOptions {
  /// The kept (channel) axes: one axis, or several consecutive ones.
  std::vector<int> axes = {1};
  /// running = decay_rate * running + (1 - decay_rate) * batch statistic.
  float decay_rate = 0.9f;
  /// Added to the variance before the square root.
  float eps = 1e-5f;
  /// true: normalise with the batch statistics and update the running ones
  /// (training); false: normalise with the running statistics (inference).
  bool batch_stat = true;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(BatchNormalizationOptions& o, V&& v) {
  v("axes", o.axes);
  v("decay_rate", o.decay_rate);
  v("eps", o.eps);
  v("batch_stat", o.batch_stat);
}

namespace decl {
/// BatchNormalization's declaration.
inline constexpr FunctionDeclOf<BatchNormalizationOptions> BatchNormalization{
    {"BatchNormalization",
     "batch_normalization",
     {Port{"x"}, Port{"beta"}, Port{"gamma"},
      Port{"mean", Port::float32, false},
      Port{"variance", Port::float32, false}},
     {Port{"y"}}}};
}  // namespace decl

/// Inputs x, beta, gamma, mean, variance; the last four have x's shape with 1
/// outside `axes` ((1, C, 1, 1) for NCHW and axes {1}). y = (x - mu) /
/// sqrt(var + eps) * gamma + beta, per channel. In training the running mean
/// and variance (inputs 3 and 4) are updated in place in forward, the
/// variance with the unbiased batch variance (n / (n - 1)) as NNabla does;
/// they are read and written as fp32 and get no gradient.
class BatchNormalization : public Function {
 public:
  explicit BatchNormalization(const BatchNormalizationOptions& opts)
      : opts_(opts) {}
  // Backward reads x and gamma; the running statistics only in inference.
  bool grad_depends_input_data(int i) const override {
    return i == 0 || i == 2 || (i >= 3 && !opts_.batch_stat);
  }
  const BatchNormalizationOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const BatchNormalizationOptions opts_;
  // x seen as (size0, size1, size2): batch axes, channels, the rest.
  int64_t size0_ = 0, size1_ = 0, size2_ = 0;
};

/// The shape of BatchNormalization's beta, gamma, mean and variance for x:
/// x's shape with 1 outside `axes`. Throws std::invalid_argument (with `tag`)
/// for axes that are empty, out of range, repeated or not consecutive.
Shape batch_normalization_param_shape(const Shape& x,
                                      const std::vector<int>& axes,
                                      const std::string& tag);

namespace functions {
/// Batch normalization of x with the given parameters and running stats.
VariablePtr batch_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma,
                                const VariablePtr& mean,
                                const VariablePtr& variance,
                                const BatchNormalizationOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct BatchNormalizationParams {
  std::vector<int> axes = {1};
  float decay_rate = 0.9f;
  float eps = 1e-5f;
  /// Whether beta and gamma are fixed (need_grad = false).
  bool fix_parameters = false;
};

/// A batch normalization layer whose parameters live in `scope`, created on
/// first use with NNabla's names and values: "beta" (0), "gamma" (1), "mean"
/// (0) and "var" (1); mean and var have need_grad = false.
VariablePtr batch_normalization(const VariablePtr& x, ParameterScope scope,
                                bool batch_stat = true,
                                const BatchNormalizationParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
