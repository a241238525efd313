// Nesterov accelerated gradient.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// v' = momentum v - lr g; w += -momentum v + (1 + momentum) v' (NNabla's
/// form, with v the state "m").
struct NesterovRule {
  float lr, momentum;
  MG_HD void operator()(float& w, float g, float& m) const {
    const float prev = m;
    m = momentum * m - lr * g;
    w += -momentum * prev + (1.0f + momentum) * m;
  }
};

/// Nesterov accelerated gradient; state "m".
class NesterovSolver : public Solver {
 public:
  explicit NesterovSolver(float lr = 1e-3f, float momentum = 0.9f);
  std::string name() const override { return "Nesterov"; }
  std::vector<std::string> state_names() const override { return {"m"}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float momentum_;
};

namespace solvers {
std::shared_ptr<NesterovSolver> Nesterov(float lr = 1e-3f,
                                         float momentum = 0.9f);
}  // namespace solvers

}  // namespace mg
