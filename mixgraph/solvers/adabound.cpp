#include <mixgraph/solvers/adabound.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

namespace {

void check_adabound(const std::string& solver, float alpha, float beta1,
                    float beta2, float eps, float final_lr, float gamma) {
  check_hyper(solver, "alpha", alpha, 0);
  check_hyper(solver, "beta1", beta1, 0);
  check_hyper(solver, "beta2", beta2, 0);
  check_hyper(solver, "eps", eps, 0);
  check_hyper(solver, "final_lr", final_lr, 0);
  // The upper bound divides by gamma t.
  check_hyper(solver, "gamma", gamma, 0, false);
}

}  // namespace

AdaBoundSolver::AdaBoundSolver(float alpha, float beta1, float beta2, float eps,
                               float final_lr, float gamma)
    : AdaBoundSolver("AdaBound", alpha, beta1, beta2, eps, final_lr, gamma) {}

AdaBoundSolver::AdaBoundSolver(const char* solver, float alpha, float beta1,
                               float beta2, float eps, float final_lr,
                               float gamma)
    : Solver(alpha),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      final_lr_(final_lr),
      gamma_(gamma),
      initial_alpha_(alpha) {
  check_adabound(solver, alpha, beta1, beta2, eps, final_lr, gamma);
}

AdaBoundRule AdaBoundSolver::rule(uint32_t t, bool bias_correction) const {
  double alpha_t = learning_rate_;
  if (bias_correction) {
    alpha_t *= std::sqrt(1.0 - std::pow(static_cast<double>(beta2_), t)) /
               (1.0 - std::pow(static_cast<double>(beta1_), t));
  }
  const double final_lr =
      initial_alpha_ > 0 ? final_lr_ * (learning_rate_ / initial_alpha_) : 0;
  const double gt = static_cast<double>(gamma_) * t;
  return AdaBoundRule{static_cast<float>(alpha_t),
                      beta1_,
                      beta2_,
                      eps_,
                      static_cast<float>(final_lr * (1.0 - 1.0 / (gt + 1.0))),
                      static_cast<float>(final_lr * (1.0 + 1.0 / gt))};
}

void AdaBoundSolver::update_impl(const UpdateContext& ctx, float* w,
                                 const float* g, SolverState& state,
                                 int64_t n) {
  apply_rule(ctx, rule(state.t, true), n, w, g, state_data(ctx, state, "mean"),
             state_data(ctx, state, "var"));
}

AMSBoundSolver::AMSBoundSolver(float alpha, float beta1, float beta2, float eps,
                               float final_lr, float gamma,
                               bool bias_correction)
    : AdaBoundSolver("AMSBound", alpha, beta1, beta2, eps, final_lr, gamma),
      bias_correction_(bias_correction) {}

void AMSBoundSolver::update_impl(const UpdateContext& ctx, float* w,
                                 const float* g, SolverState& state,
                                 int64_t n) {
  apply_rule(ctx, rule(state.t, bias_correction_), n, w, g,
             state_data(ctx, state, "m"), state_data(ctx, state, "v"),
             state_data(ctx, state, "v_hat"));
}

namespace solvers {
std::shared_ptr<mg::AdaBoundSolver> AdaBound(float alpha, float beta1,
                                             float beta2, float eps,
                                             float final_lr, float gamma) {
  return std::make_shared<mg::AdaBoundSolver>(alpha, beta1, beta2, eps,
                                              final_lr, gamma);
}
std::shared_ptr<mg::AMSBoundSolver> AMSBound(float alpha, float beta1,
                                             float beta2, float eps,
                                             float final_lr, float gamma,
                                             bool bias_correction) {
  return std::make_shared<mg::AMSBoundSolver>(alpha, beta1, beta2, eps,
                                              final_lr, gamma, bias_correction);
}
}  // namespace solvers

}  // namespace mg
