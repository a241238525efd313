// Adam and AdamW.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// w -= alpha_t m / (sqrt(v) + eps) + decay w, where alpha_t carries the
/// bias correction alpha sqrt(1 - b2^t) / (1 - b1^t) (NNabla's form).
struct AdamRule {
  float alpha_t, beta1, beta2, eps;
  float decay = 0.0f;  // eta_t * wd for AdamW
  MG_HD void operator()(float& w, float g, float& m, float& v) const {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    w -= alpha_t * m / (sqrtf(v) + eps) + decay * w;
  }
};

/// Adam; states "mean" and "var".
class AdamSolver : public Solver {
 public:
  explicit AdamSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                      float beta2 = 0.999f, float eps = 1e-8f);
  std::string name() const override { return "Adam"; }
  std::vector<std::string> state_names() const override {
    return {"mean", "var"};
  }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  /// The rule for step t (bias corrections and decay folded in).
  virtual AdamRule rule(uint32_t t) const;
  float beta1_, beta2_, eps_;
};

/// Adam with decoupled weight decay: w -= eta_t wd w inside the step, where
/// eta_t = alpha / initial alpha follows the learning rate schedule.
class AdamWSolver : public AdamSolver {
 public:
  explicit AdamWSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                       float beta2 = 0.999f, float eps = 1e-8f,
                       float wd = 1e-4f);
  std::string name() const override { return "AdamW"; }

 protected:
  float decoupled_decay_rate() const override { return wd_; }
  AdamRule rule(uint32_t t) const override;
  float initial_alpha_, wd_;
};

namespace solvers {
std::shared_ptr<AdamSolver> Adam(float alpha = 1e-3f, float beta1 = 0.9f,
                                 float beta2 = 0.999f, float eps = 1e-8f);
std::shared_ptr<AdamWSolver> AdamW(float alpha = 1e-3f, float beta1 = 0.9f,
                                   float beta2 = 0.999f, float eps = 1e-8f,
                                   float wd = 1e-4f);
}  // namespace solvers

}  // namespace mg
