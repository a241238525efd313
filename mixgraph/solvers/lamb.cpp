#include <mixgraph/solvers/lamb.hpp>

#include <algorithm>

#include <mixgraph/solvers/norms.hpp>
#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

LambSolver::LambSolver(float eta, float beta1, float beta2, float gamma_l,
                       float gamma_u, float eps, bool bias_correction)
    : Solver(eta),
      beta1_(beta1),
      beta2_(beta2),
      gamma_l_(gamma_l),
      gamma_u_(gamma_u),
      eps_(eps),
      bias_correction_(bias_correction) {
  check_hyper("Lamb", "eta", eta, 0);
  check_hyper("Lamb", "beta1", beta1, 0);
  check_hyper("Lamb", "beta2", beta2, 0);
  check_hyper("Lamb", "gamma_l", gamma_l, 0);
  check_hyper("Lamb", "gamma_u", gamma_u, gamma_l);
  check_hyper("Lamb", "eps", eps, 0);
}

void LambSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                             SolverState& state, int64_t n) {
  float* m = state_data(ctx, state, "mean");
  float* v = state_data(ctx, state, "var");
  apply_rule(ctx, LambMomentsRule{beta1_, beta2_}, n, w, g, m, v);

  const uint32_t t = state.t;
  LambDirection r{1.0f, 1.0f, eps_, fused_decay_rate()};
  if (bias_correction_) {
    r.c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), t));
    r.c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2_), t));
  }
  // The trust ratio needs ||w|| and ||r|| over the whole parameter, both
  // taken before w moves.
  const double w_norm =
      std::clamp(std::sqrt(sum_of_squares(n, [w](int64_t i) { return w[i]; })),
                 static_cast<double>(gamma_l_), static_cast<double>(gamma_u_));
  const double r_norm = std::sqrt(
      sum_of_squares(n, [&](int64_t i) { return r(w[i], m[i], v[i]); }));
  const double ratio = r_norm > eps_ ? w_norm / r_norm : 1.0;
  apply_rule(ctx, LambStepRule{r, static_cast<float>(learning_rate_ * ratio)},
             n, w, g, m, v);
}

namespace solvers {
std::shared_ptr<mg::LambSolver> Lamb(float eta, float beta1, float beta2,
                                     float gamma_l, float gamma_u, float eps,
                                     bool bias_correction) {
  return std::make_shared<mg::LambSolver>(eta, beta1, beta2, gamma_l, gamma_u,
                                          eps, bias_correction);
}
}  // namespace solvers

}  // namespace mg
