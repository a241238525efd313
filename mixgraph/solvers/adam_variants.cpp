#include <mixgraph/solvers/adam_variants.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

namespace {

// 1 - b^t in double: in float it loses digits for b near 1 and small t.
double one_minus_pow(float b, uint32_t t) {
  return 1.0 - std::pow(static_cast<double>(b), t);
}

void check_adam_like(const std::string& solver, float alpha, float beta1,
                     float beta2, float eps) {
  check_hyper(solver, "alpha", alpha, 0);
  check_hyper(solver, "beta1", beta1, 0);
  check_hyper(solver, "beta2", beta2, 0);
  check_hyper(solver, "eps", eps, 0);
}

}  // namespace

AdamaxSolver::AdamaxSolver(float alpha, float beta1, float beta2, float eps)
    : Solver(alpha), beta1_(beta1), beta2_(beta2), eps_(eps) {
  check_adam_like("Adamax", alpha, beta1, beta2, eps);
}

void AdamaxSolver::update_impl(const UpdateContext& ctx, float* w,
                               const float* g, SolverState& state, int64_t n) {
  // NNabla corrects only the first moment's bias: u is a max, not a mean.
  const auto alpha_t =
      static_cast<float>(learning_rate_ / one_minus_pow(beta1_, state.t));
  apply_rule(ctx, AdamaxRule{alpha_t, beta1_, beta2_, eps_}, n, w, g,
             state_data(ctx, state, "m"), state_data(ctx, state, "u"));
}

AMSGradSolver::AMSGradSolver(float alpha, float beta1, float beta2, float eps,
                             bool bias_correction)
    : Solver(alpha),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      bias_correction_(bias_correction) {
  check_adam_like("AMSGRAD", alpha, beta1, beta2, eps);
}

void AMSGradSolver::update_impl(const UpdateContext& ctx, float* w,
                                const float* g, SolverState& state, int64_t n) {
  double alpha_t = learning_rate_;
  if (bias_correction_) {
    alpha_t *= std::sqrt(one_minus_pow(beta2_, state.t)) /
               one_minus_pow(beta1_, state.t);
  }
  apply_rule(ctx,
             AmsgradRule{static_cast<float>(alpha_t), beta1_, beta2_, eps_}, n,
             w, g, state_data(ctx, state, "m"), state_data(ctx, state, "v"),
             state_data(ctx, state, "v_hat"));
}

AdaBeliefSolver::AdaBeliefSolver(float alpha, float beta1, float beta2,
                                 float eps, float wd, bool amsgrad,
                                 bool weight_decouple, bool fixed_decay,
                                 bool rectify)
    : Solver(alpha),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      wd_(wd),
      amsgrad_(amsgrad),
      weight_decouple_(weight_decouple),
      fixed_decay_(fixed_decay),
      rectify_(rectify) {
  check_adam_like("AdaBelief", alpha, beta1, beta2, eps);
  check_hyper("AdaBelief", "wd", wd, 0);
}

std::vector<std::string> AdaBeliefSolver::state_names() const {
  if (amsgrad_) return {"mean", "var", "s_max"};
  return {"mean", "var"};
}

void AdaBeliefSolver::update_impl(const UpdateContext& ctx, float* w,
                                  const float* g, SolverState& state,
                                  int64_t n) {
  const uint32_t t = state.t;
  const double c1 = one_minus_pow(beta1_, t);
  const double c2_sq = one_minus_pow(beta2_, t);
  double alpha_t = learning_rate_ / c1;
  bool sgd = false;
  if (rectify_) {
    // RAdam: the variance of the adaptive step is tractable only once
    // rho_t > 4; before that the step is plain SGD with momentum.
    const double rho_inf = 2.0 / (1.0 - beta2_) - 1.0;
    const double rho_t =
        rho_inf - 2.0 * t * std::pow(static_cast<double>(beta2_), t) / c2_sq;
    if (rho_t > 4.0) {
      alpha_t *= std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                           ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
    } else {
      alpha_t = learning_rate_;
      sgd = true;
    }
  }
  AdaBeliefRule rule{static_cast<float>(alpha_t), beta1_, beta2_, eps_,
                     static_cast<float>(std::sqrt(c2_sq))};
  rule.sgd = sgd;
  if (weight_decouple_) rule.decay = fixed_decay_ ? wd_ : wd_ * learning_rate_;
  if (amsgrad_) {
    apply_rule(ctx, rule, n, w, g, state_data(ctx, state, "mean"),
               state_data(ctx, state, "var"), state_data(ctx, state, "s_max"));
  } else {
    apply_rule(ctx, rule, n, w, g, state_data(ctx, state, "mean"),
               state_data(ctx, state, "var"));
  }
}

namespace solvers {
std::shared_ptr<mg::AdamaxSolver> Adamax(float alpha, float beta1, float beta2,
                                         float eps) {
  return std::make_shared<mg::AdamaxSolver>(alpha, beta1, beta2, eps);
}
std::shared_ptr<mg::AMSGradSolver> AMSGRAD(float alpha, float beta1,
                                           float beta2, float eps,
                                           bool bias_correction) {
  return std::make_shared<mg::AMSGradSolver>(alpha, beta1, beta2, eps,
                                             bias_correction);
}
std::shared_ptr<mg::AMSGradSolver> AMSGrad(float alpha, float beta1,
                                           float beta2, float eps,
                                           bool bias_correction) {
  return AMSGRAD(alpha, beta1, beta2, eps, bias_correction);
}
std::shared_ptr<mg::AdaBeliefSolver> AdaBelief(float alpha, float beta1,
                                               float beta2, float eps, float wd,
                                               bool amsgrad,
                                               bool weight_decouple,
                                               bool fixed_decay, bool rectify) {
  return std::make_shared<mg::AdaBeliefSolver>(alpha, beta1, beta2, eps, wd,
                                               amsgrad, weight_decouple,
                                               fixed_decay, rectify);
}
}  // namespace solvers

}  // namespace mg
