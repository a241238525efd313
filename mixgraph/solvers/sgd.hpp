// Sgd and Momentum.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// w -= lr * g.
struct SgdRule {
  float lr;
  MG_HD void operator()(float& w, float g) const { w -= lr * g; }
};

/// Stochastic gradient descent.
class SgdSolver : public Solver {
 public:
  explicit SgdSolver(float lr = 1e-3f);
  std::string name() const override { return "Sgd"; }
  std::vector<std::string> state_names() const override { return {}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
};

/// m = momentum * m + lr * g; w -= m (NNabla's Momentum).
struct MomentumRule {
  float lr, momentum;
  MG_HD void operator()(float& w, float g, float& m) const {
    m = momentum * m + lr * g;
    w -= m;
  }
};

/// SGD with momentum; state "m".
class MomentumSolver : public Solver {
 public:
  explicit MomentumSolver(float lr = 1e-3f, float momentum = 0.9f);
  std::string name() const override { return "Momentum"; }
  std::vector<std::string> state_names() const override { return {"m"}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float momentum_;
};

namespace solvers {
std::shared_ptr<SgdSolver> Sgd(float lr = 1e-3f);
std::shared_ptr<MomentumSolver> Momentum(float lr = 1e-3f,
                                         float momentum = 0.9f);
}  // namespace solvers

}  // namespace mg
