#include <mixgraph/solvers/lars.hpp>

#include <cmath>

#include <mixgraph/solvers/norms.hpp>
#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

LarsSolver::LarsSolver(float lr, float momentum, float coefficient, float eps)
    : Solver(lr), momentum_(momentum), coefficient_(coefficient), eps_(eps) {
  check_hyper("Lars", "learning rate", lr, 0);
  check_hyper("Lars", "momentum", momentum, 0);
  check_hyper("Lars", "coefficient", coefficient, 0);
  check_hyper("Lars", "eps", eps, 0);
}

void LarsSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                             SolverState& state, int64_t n) {
  // The norms of the whole parameter first, then one elementwise pass.
  const double w_norm =
      std::sqrt(sum_of_squares(n, [w](int64_t i) { return w[i]; }));
  const double g_norm =
      std::sqrt(sum_of_squares(n, [g](int64_t i) { return g[i]; })) *
      std::fabs(ctx.grad_scale);
  const float wd = fused_decay_rate();
  double denom = g_norm + wd * w_norm;
  if (denom < eps_) denom += eps_;  // as NNabla: only a tiny one is lifted
  const double local_lr = w_norm < eps_
                              ? learning_rate_
                              : learning_rate_ * coefficient_ * w_norm / denom;
  apply_rule(ctx, LarsRule{static_cast<float>(local_lr), momentum_, wd}, n, w,
             g, state_data(ctx, state, "v"));
}

namespace solvers {
std::shared_ptr<mg::LarsSolver> Lars(float lr, float momentum,
                                     float coefficient, float eps) {
  return std::make_shared<mg::LarsSolver>(lr, momentum, coefficient, eps);
}
}  // namespace solvers

}  // namespace mg
