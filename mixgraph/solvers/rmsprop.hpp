// RMSprop and RMSpropGraves.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// v = decay v + (1 - decay) g^2; w -= lr g / (sqrt(v) + eps).
struct RmspropRule {
  float lr, decay, eps;
  MG_HD void operator()(float& w, float g, float& v) const {
    v = v * decay + g * g * (1.0f - decay);
    w -= lr / (sqrtf(v) + eps) * g;
  }
};

/// RMSprop (Hinton); state "v".
class RMSpropSolver : public Solver {
 public:
  explicit RMSpropSolver(float lr = 1e-3f, float decay = 0.9f,
                         float eps = 1e-8f);
  std::string name() const override { return "RMSprop"; }
  std::vector<std::string> state_names() const override { return {"v"}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float decay_, eps_;
};

/// n = decay n + (1 - decay) g^2; mg = decay mg + (1 - decay) g;
/// d = momentum d - lr g / sqrt(n - mg^2 + eps); w += d.
struct RmspropGravesRule {
  float lr, decay, momentum, eps;
  MG_HD void operator()(float& w, float g, float& n, float& mg,
                        float& d) const {
    n = decay * n + (1.0f - decay) * g * g;
    mg = decay * mg + (1.0f - decay) * g;
    d = momentum * d - lr * g / sqrtf(n - mg * mg + eps);
    w += d;
  }
};

/// RMSprop as Graves defines it (centred, with momentum); states "n", "g"
/// and "d".
class RMSpropGravesSolver : public Solver {
 public:
  explicit RMSpropGravesSolver(float lr = 1e-4f, float decay = 0.95f,
                               float momentum = 0.9f, float eps = 1e-4f);
  std::string name() const override { return "RMSpropGraves"; }
  std::vector<std::string> state_names() const override {
    return {"n", "g", "d"};
  }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float decay_, momentum_, eps_;
};

namespace solvers {
std::shared_ptr<RMSpropSolver> RMSprop(float lr = 1e-3f, float decay = 0.9f,
                                       float eps = 1e-8f);
std::shared_ptr<RMSpropGravesSolver> RMSpropGraves(float lr = 1e-4f,
                                                   float decay = 0.95f,
                                                   float momentum = 0.9f,
                                                   float eps = 1e-4f);
}  // namespace solvers

}  // namespace mg
