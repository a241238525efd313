// Adamax, AMSGRAD and AdaBelief: Adam's relatives.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// m = b1 m + (1 - b1) g; u = max(b2 u, |g|); w -= alpha_t m / (u + eps),
/// with alpha_t = alpha / (1 - b1^t).
struct AdamaxRule {
  float alpha_t, beta1, beta2, eps;
  MG_HD void operator()(float& w, float g, float& m, float& u) const {
    m = beta1 * m + (1.0f - beta1) * g;
    u = fmaxf(beta2 * u, fabsf(g));
    w -= alpha_t * m / (u + eps);
  }
};

/// Adamax (Kingma and Ba), Adam with an infinity norm; states "m" and "u".
class AdamaxSolver : public Solver {
 public:
  explicit AdamaxSolver(float alpha = 2e-3f, float beta1 = 0.9f,
                        float beta2 = 0.999f, float eps = 1e-8f);
  std::string name() const override { return "Adamax"; }
  std::vector<std::string> state_names() const override { return {"m", "u"}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float beta1_, beta2_, eps_;
};

/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; v_hat = max(v_hat, v);
/// w -= alpha_t m / (sqrt(v_hat) + eps).
struct AmsgradRule {
  float alpha_t, beta1, beta2, eps;
  MG_HD void operator()(float& w, float g, float& m, float& v,
                        float& v_hat) const {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    v_hat = fmaxf(v_hat, v);
    w -= alpha_t * m / (sqrtf(v_hat) + eps);
  }
};

/// AMSGRAD (Reddi et al.): Adam with the running max of v; states "m", "v"
/// and "v_hat". alpha_t is alpha, or Adam's bias-corrected
/// alpha sqrt(1 - b2^t) / (1 - b1^t) when bias_correction is set.
class AMSGradSolver : public Solver {
 public:
  explicit AMSGradSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                         float beta2 = 0.999f, float eps = 1e-8f,
                         bool bias_correction = false);
  /// NNabla's name, "AMSGRAD".
  std::string name() const override { return "AMSGRAD"; }
  std::vector<std::string> state_names() const override {
    return {"m", "v", "v_hat"};
  }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float beta1_, beta2_, eps_;
  bool bias_correction_;
};

/// m = b1 m + (1 - b1) g; s = b2 s + (1 - b2) (g - m)^2 + eps (the eps
/// stays in the state, as in NNabla and the authors' code; with amsgrad
/// s_max = max(s_max, s) + eps instead); w -= decay w; then
/// w -= alpha_t m / (sqrt(s) / c2 + eps), or w -= alpha_t m in the
/// rectified warm-up.
struct AdaBeliefRule {
  float alpha_t, beta1, beta2, eps;
  float c2;            // sqrt(1 - b2^t)
  float decay = 0.0f;  // decoupled decay: wd alpha, or wd when fixed_decay
  bool sgd = false;    // rectify while rho_t <= 4: an SGD-with-momentum step
  MG_HD void operator()(float& w, float g, float& m, float& s) const {
    moments(w, g, m, s);
    s += eps;
    step(w, m, s);
  }
  MG_HD void operator()(float& w, float g, float& m, float& s,
                        float& s_max) const {
    moments(w, g, m, s);
    s_max = fmaxf(s_max, s) + eps;
    step(w, m, s_max);
  }
  MG_HD void moments(float& w, float g, float& m, float& s) const {
    m = beta1 * m + (1.0f - beta1) * g;
    s = beta2 * s + (1.0f - beta2) * (g - m) * (g - m);
    w -= w * decay;
  }
  MG_HD void step(float& w, float m, float s) const {
    w -= sgd ? alpha_t * m : alpha_t * m / (sqrtf(s) / c2 + eps);
  }
};

/// AdaBelief (Zhuang et al.); states "mean" and "var", plus "s_max" with
/// amsgrad. wd is a decoupled decay applied only with weight_decouple (then
/// weight_decay(rate) must give the same rate, as for AdamW); rectify gives
/// the RAdam variant.
class AdaBeliefSolver : public Solver {
 public:
  explicit AdaBeliefSolver(float alpha = 1e-3f, float beta1 = 0.9f,
                           float beta2 = 0.999f, float eps = 1e-8f,
                           float wd = 0.0f, bool amsgrad = false,
                           bool weight_decouple = false,
                           bool fixed_decay = false, bool rectify = false);
  std::string name() const override { return "AdaBelief"; }
  std::vector<std::string> state_names() const override;

 protected:
  float decoupled_decay_rate() const override {
    return weight_decouple_ ? wd_ : -1.0f;
  }
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float beta1_, beta2_, eps_, wd_;
  bool amsgrad_, weight_decouple_, fixed_decay_, rectify_;
};

namespace solvers {
std::shared_ptr<AdamaxSolver> Adamax(float alpha = 2e-3f, float beta1 = 0.9f,
                                     float beta2 = 0.999f, float eps = 1e-8f);
/// NNabla's spelling.
std::shared_ptr<AMSGradSolver> AMSGRAD(float alpha = 1e-3f, float beta1 = 0.9f,
                                       float beta2 = 0.999f, float eps = 1e-8f,
                                       bool bias_correction = false);
/// The same as AMSGRAD.
std::shared_ptr<AMSGradSolver> AMSGrad(float alpha = 1e-3f, float beta1 = 0.9f,
                                       float beta2 = 0.999f, float eps = 1e-8f,
                                       bool bias_correction = false);
std::shared_ptr<AdaBeliefSolver> AdaBelief(
    float alpha = 1e-3f, float beta1 = 0.9f, float beta2 = 0.999f,
    float eps = 1e-8f, float wd = 0.0f, bool amsgrad = false,
    bool weight_decouple = false, bool fixed_decay = false,
    bool rectify = false);
}  // namespace solvers

}  // namespace mg
