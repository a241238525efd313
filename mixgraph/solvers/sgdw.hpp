// SgdW: momentum SGD with decoupled weight decay.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// m = momentum m + lr g; w -= m + decay w, where decay = eta_t wd and
/// eta_t = lr / initial lr follows the learning rate schedule.
struct SgdWRule {
  float lr, momentum, decay;
  MG_HD void operator()(float& w, float g, float& m) const {
    m = momentum * m + lr * g;
    w -= m + decay * w;
  }
};

/// SGD with momentum and decoupled weight decay (Loshchilov and Hutter);
/// state "m".
class SgdWSolver : public Solver {
 public:
  explicit SgdWSolver(float lr = 1e-3f, float momentum = 0.9f,
                      float wd = 1e-4f);
  std::string name() const override { return "SgdW"; }
  std::vector<std::string> state_names() const override { return {"m"}; }

 protected:
  float decoupled_decay_rate() const override { return wd_; }
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float momentum_, wd_, initial_lr_;
};

namespace solvers {
std::shared_ptr<SgdWSolver> SgdW(float lr = 1e-3f, float momentum = 0.9f,
                                 float wd = 1e-4f);
}  // namespace solvers

}  // namespace mg
