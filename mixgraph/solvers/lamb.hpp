// LAMB: Adam's direction with a layer-wise trust ratio.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// The update direction r = (m / c1) / (sqrt(v / c2) + eps) + wd w, where
/// c1, c2 are the bias corrections (1 without bias_correction).
struct LambDirection {
  float c1, c2, eps, wd;
  MG_HD float operator()(float w, float m, float v) const {
    return (m / c1) / (sqrtf(v / c2) + eps) + wd * w;
  }
};

/// The first pass: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2.
struct LambMomentsRule {
  float beta1, beta2;
  MG_HD void operator()(float&, float g, float& m, float& v) const {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
  }
};

/// The second pass, once the norms are known: w -= step r, with
/// step = eta ||w||_clipped / ||r|| computed on the host.
struct LambStepRule {
  LambDirection r;
  float step;
  MG_HD void operator()(float& w, float, float& m, float& v) const {
    w -= step * r(w, m, v);
  }
};

/// LAMB (You et al.); states "mean" and "var". Its weight decay is fused:
/// weight_decay(rate) sets lambda of the next update() in
/// w -= eta phi(||w||) / ||r|| r, r = m_hat / (sqrt(v_hat) + eps) + lambda w,
/// where phi clips ||w|| to [gamma_l, gamma_u] and the ratio is 1 when
/// ||r|| <= eps.
class LambSolver : public Solver {
 public:
  explicit LambSolver(float eta = 1e-3f, float beta1 = 0.9f,
                      float beta2 = 0.999f, float gamma_l = 0.0f,
                      float gamma_u = 10.0f, float eps = 1e-6f,
                      bool bias_correction = false);
  std::string name() const override { return "Lamb"; }
  std::vector<std::string> state_names() const override {
    return {"mean", "var"};
  }

 protected:
  bool fuses_weight_decay() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float beta1_, beta2_, gamma_l_, gamma_u_, eps_;
  bool bias_correction_;
};

namespace solvers {
std::shared_ptr<LambSolver> Lamb(float eta = 1e-3f, float beta1 = 0.9f,
                                 float beta2 = 0.999f, float gamma_l = 0.0f,
                                 float gamma_u = 10.0f, float eps = 1e-6f,
                                 bool bias_correction = false);
}  // namespace solvers

}  // namespace mg
