// LARS: momentum SGD with a layer-wise trust ratio.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// v = momentum v + local_lr (g + wd w); w -= v. local_lr is the
/// parameter's trust ratio times lr, computed on the host from its norms.
struct LarsRule {
  float local_lr, momentum, wd;
  MG_HD void operator()(float& w, float g, float& v) const {
    v = momentum * v + local_lr * (g + wd * w);
    w -= v;
  }
};

/// LARS (You, Gitman and Ginsburg) with momentum; state "v". Its weight
/// decay is fused: weight_decay(rate) sets the rate of the next update(),
/// which enters both the direction g + rate w and the trust ratio
/// lr coefficient ||w|| / (||g|| + rate ||w||) (lr itself when ||w|| < eps).
class LarsSolver : public Solver {
 public:
  explicit LarsSolver(float lr = 1e-3f, float momentum = 0.9f,
                      float coefficient = 1e-3f, float eps = 1e-6f);
  std::string name() const override { return "Lars"; }
  std::vector<std::string> state_names() const override { return {"v"}; }

 protected:
  bool fuses_weight_decay() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float momentum_, coefficient_, eps_;
};

namespace solvers {
std::shared_ptr<LarsSolver> Lars(float lr = 1e-3f, float momentum = 0.9f,
                                 float coefficient = 1e-3f, float eps = 1e-6f);
}  // namespace solvers

}  // namespace mg
