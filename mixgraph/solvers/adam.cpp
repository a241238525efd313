#include <mixgraph/solvers/adam.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

AdamSolver::AdamSolver(float alpha, float beta1, float beta2, float eps)
    : Solver(alpha), beta1_(beta1), beta2_(beta2), eps_(eps) {
  check_hyper(name(), "alpha", alpha, 0);
  check_hyper(name(), "beta1", beta1, 0);
  check_hyper(name(), "beta2", beta2, 0);
  check_hyper(name(), "eps", eps, 0);
}

AdamRule AdamSolver::rule(uint32_t t) const {
  // Bias corrections in double: 1 - b2^t loses digits in float for small t.
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1_), t);
  const double c2 = 1.0 - std::pow(static_cast<double>(beta2_), t);
  const float alpha_t = static_cast<float>(learning_rate_ * std::sqrt(c2) / c1);
  return AdamRule{alpha_t, beta1_, beta2_, eps_};
}

void AdamSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                             SolverState& state, int64_t n) {
  apply_rule(ctx, rule(state.t), n, w, g, state_data(ctx, state, "mean"),
             state_data(ctx, state, "var"));
}

AdamWSolver::AdamWSolver(float alpha, float beta1, float beta2, float eps,
                         float wd)
    : AdamSolver(alpha, beta1, beta2, eps), initial_alpha_(alpha), wd_(wd) {
  check_hyper("AdamW", "wd", wd, 0);
}

AdamRule AdamWSolver::rule(uint32_t t) const {
  AdamRule r = AdamSolver::rule(t);
  const float eta_t = initial_alpha_ > 0 ? learning_rate_ / initial_alpha_ : 0;
  r.decay = eta_t * wd_;
  return r;
}

namespace solvers {
std::shared_ptr<mg::AdamSolver> Adam(float alpha, float beta1, float beta2,
                                     float eps) {
  return std::make_shared<mg::AdamSolver>(alpha, beta1, beta2, eps);
}
std::shared_ptr<mg::AdamWSolver> AdamW(float alpha, float beta1, float beta2,
                                       float eps, float wd) {
  return std::make_shared<mg::AdamWSolver>(alpha, beta1, beta2, eps, wd);
}
}  // namespace solvers

}  // namespace mg
