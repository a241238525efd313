// Lion: the sign of an interpolated momentum.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// u = sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g; w -= lr (u + wd w).
struct LionRule {
  float lr, beta1, beta2, wd;
  MG_HD void operator()(float& w, float g, float& m) const {
    // Interpolations written as NNabla's lerp(g, m, b) = g + b (m - g).
    const float c = g + beta1 * (m - g);
    const float u = static_cast<float>((c > 0.0f) - (c < 0.0f));
    m = g + beta2 * (m - g);
    w -= lr * (u + wd * w);
  }
};

/// Lion (Chen et al.); state "m". Its weight decay is fused, as NNabla's:
/// weight_decay(rate) sets wd of the next update(), and the step is
/// lr (sign(...) + wd w), not a sign of a decayed grad.
class LionSolver : public Solver {
 public:
  explicit LionSolver(float lr = 1e-4f, float beta1 = 0.9f,
                      float beta2 = 0.99f);
  std::string name() const override { return "Lion"; }
  std::vector<std::string> state_names() const override { return {"m"}; }

 protected:
  bool fuses_weight_decay() const override { return true; }
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float beta1_, beta2_;
};

namespace solvers {
std::shared_ptr<LionSolver> Lion(float lr = 1e-4f, float beta1 = 0.9f,
                                 float beta2 = 0.99f);
}  // namespace solvers

}  // namespace mg
