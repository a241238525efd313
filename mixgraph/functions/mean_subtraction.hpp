// MeanSubtraction: x minus a running mean of its samples, kept in fp32 with
// an int32 count of the batches seen (NNabla's, for preprocessing inputs).
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct MeanSubtractionOptions {
  /// The axes before base_axis index samples; the mean has x's shape from
  /// base_axis on.
  int base_axis = 1;
  /// true (training): update the running mean with this batch's mean and
  /// count it in t, then subtract it; false: subtract the running mean.
  bool update_running_mean = true;

  MG_FIELDS(base_axis, update_running_mean);
};

namespace decl {
/// MeanSubtraction's declaration: rmean (fp32) and t (an integer count,
/// optional without update_running_mean) are updated in place, no grads.
inline constexpr FunctionDeclOf<MeanSubtractionOptions> MeanSubtraction{
    {"MeanSubtraction",
     "mean_subtraction",
     {Port{"x"}, Port{"rmean", Port::float32, false},
      Port{"t", Port::integer, false, true}},
     {Port{"y"}}}};
}  // namespace decl

/// Training: mu = the mean of x over the sample axes, rmean += (mu - rmean)
/// / (t + 1), t += 1 (saturating at 2^31 - 1), y = x - rmean (the updated
/// one). Inference: y = x - rmean. dx = dy (1 - 1 / (t M)) in training,
/// with M the number of samples and t the updated count: NNabla's
/// approximation, which keeps only each element's own share of the latest
/// batch's mean; dx = dy in inference. The mean and its sums are fp32.
class MeanSubtraction : public FunctionWith<MeanSubtractionOptions> {
 public:
  using FunctionWith::FunctionWith;
  // Backward uses the count forward reached, kept by forward.
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  // x as (samples, features).
  int64_t samples_ = 0, features_ = 0;
  // The count t reached in the last training forward (backward's factor).
  int64_t count_ = 1;
};

namespace functions {
/// x minus the running mean rmean (x's shape from base_axis); t counts the
/// batches the mean was taken over.
VariablePtr mean_subtraction(const VariablePtr& x, const VariablePtr& rmean,
                             const VariablePtr& t,
                             const MeanSubtractionOptions& opts = {});
}  // namespace functions

namespace parametric_functions {
/// A mean subtraction layer whose state lives in `scope`/mean_subtraction:
/// "mean" (x's shape from base_axis, 0) and "t" ((1,), 0), neither
/// learned (NNabla's names and values).
VariablePtr mean_subtraction(const VariablePtr& x, ParameterScope scope,
                             int base_axis = 1,
                             bool update_running_mean = true);
}  // namespace parametric_functions

}  // namespace mg
