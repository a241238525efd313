// Adagrad and Adadelta.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// v += g^2; w -= lr g / (sqrt(v) + eps).
struct AdagradRule {
  float lr, eps;
  MG_HD void operator()(float& w, float g, float& v) const {
    v += g * g;
    w -= lr * g / (sqrtf(v) + eps);
  }
};

/// Adagrad (Duchi, Hazan and Singer); state "v".
class AdagradSolver : public Solver {
 public:
  explicit AdagradSolver(float lr = 1e-2f, float eps = 1e-8f);
  std::string name() const override { return "Adagrad"; }
  std::vector<std::string> state_names() const override { return {"v"}; }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float eps_;
};

/// E[g^2] = decay E[g^2] + (1 - decay) g^2;
/// delta = sqrt((E[d^2] + eps) / (E[g^2] + eps)) g;
/// E[d^2] = decay E[d^2] + (1 - decay) delta^2; w -= lr delta.
struct AdadeltaRule {
  float lr, decay, eps;
  MG_HD void operator()(float& w, float g, float& e_sqr_grad,
                        float& e_sqr_delta) const {
    e_sqr_grad = e_sqr_grad * decay + g * g * (1.0f - decay);
    const float delta = sqrtf((e_sqr_delta + eps) / (e_sqr_grad + eps)) * g;
    e_sqr_delta = e_sqr_delta * decay + delta * delta * (1.0f - decay);
    w -= lr * delta;
  }
};

/// Adadelta (Zeiler); states "e_sqr_grad" and "e_sqr_delta".
class AdadeltaSolver : public Solver {
 public:
  explicit AdadeltaSolver(float lr = 1.0f, float decay = 0.95f,
                          float eps = 1e-6f);
  std::string name() const override { return "Adadelta"; }
  std::vector<std::string> state_names() const override {
    return {"e_sqr_grad", "e_sqr_delta"};
  }

 protected:
  bool elementwise_update() const override { return true; }
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState& state, int64_t n) override;
  float decay_, eps_;
};

namespace solvers {
std::shared_ptr<AdagradSolver> Adagrad(float lr = 1e-2f, float eps = 1e-8f);
std::shared_ptr<AdadeltaSolver> Adadelta(float lr = 1.0f, float decay = 0.95f,
                                         float eps = 1e-6f);
}  // namespace solvers

}  // namespace mg
