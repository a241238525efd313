// AdaBound and AMSBound: Adam and AMSGRAD with dynamic bounds on the step.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2 (and for AMSBound
/// v_hat = max(v_hat, v), used in place of v);
/// w -= clip(alpha_t / (sqrt(v) + eps), lower, upper) m.
struct AdaBoundRule {
  float alpha_t, beta1, beta2, eps;
  float lower, upper;  // the bounds at step t
  MG_HD void operator()(float& w, float g, float& m, float& v) const {
    moments(g, m, v);
    step(w, m, v);
  }
  MG_HD void operator()(float& w, float g, float& m, float& v,
                        float& v_hat) const {
    moments(g, m, v);
    v_hat = fmaxf(v_hat, v);
    step(w, m, v_hat);
  }
  MG_HD void moments(float g, float& m, float& v) const {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
  }
  MG_HD void step(float& w, float m, float v) const {
    const float eta = fminf(upper, fmaxf(alpha_t / (sqrtf(v) + eps), lower));
    w -= eta * m;
  }
};

/// AdaBound (Luo et al.); states "mean" and "var". The step size
/// alpha_t = alpha sqrt(1 - b2^t) / (1 - b1^t) per unit of sqrt(v) is
/// clipped to [final_lr (1 - 1 / (gamma t + 1)), final_lr (1 + 1 / (gamma t))],
/// with final_lr scaled by alpha / initial alpha to follow the schedule.
class AdaBoundSolver : public Solver {
 public:
  explicit AdaBoundSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                          float beta2 = 0.999f, float eps = 1e-8f,
                          float final_lr = 0.1f, float gamma = 1e-3f);
  std::string name() const override { return "AdaBound"; }
  std::vector<std::string> state_names() const override {
    return {"mean", "var"};
  }

 protected:
  /// Checks the hyper-parameters in the name of `solver`.
  AdaBoundSolver(const char* solver, float alpha, float beta1, float beta2,
                 float eps, float final_lr, float gamma);
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  /// The rule at step t; bias_correction picks Adam's alpha_t or alpha.
  AdaBoundRule rule(uint32_t t, bool bias_correction) const;
  float beta1_, beta2_, eps_, final_lr_, gamma_, initial_alpha_;
};

/// AMSBound (Luo et al.): AdaBound over AMSGRAD's max of v; states "m",
/// "v" and "v_hat". alpha_t is alpha unless bias_correction is set.
class AMSBoundSolver : public AdaBoundSolver {
 public:
  explicit AMSBoundSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                          float beta2 = 0.999f, float eps = 1e-8f,
                          float final_lr = 0.1f, float gamma = 1e-3f,
                          bool bias_correction = false);
  std::string name() const override { return "AMSBound"; }
  std::vector<std::string> state_names() const override {
    return {"m", "v", "v_hat"};
  }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  bool bias_correction_;
};

namespace solvers {
std::shared_ptr<AdaBoundSolver> AdaBound(
    float alpha = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
    float eps = 1e-8f, float final_lr = 0.1f, float gamma = 1e-3f);
std::shared_ptr<AMSBoundSolver> AMSBound(
    float alpha = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
    float eps = 1e-8f, float final_lr = 0.1f, float gamma = 1e-3f,
    bool bias_correction = false);
}  // namespace solvers

}  // namespace mg
