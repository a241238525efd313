#include <mixgraph/solvers/lion.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

LionSolver::LionSolver(float lr, float beta1, float beta2)
    : Solver(lr), beta1_(beta1), beta2_(beta2) {
  check_hyper("Lion", "learning rate", lr, 0);
  check_hyper("Lion", "beta1", beta1, 0);
  check_hyper("Lion", "beta2", beta2, 0);
}

void LionSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                             SolverState& state, int64_t n) {
  apply_rule(ctx, LionRule{learning_rate_, beta1_, beta2_, fused_decay_rate()},
             n, w, g, state_data(ctx, state, "m"));
}

namespace solvers {
std::shared_ptr<mg::LionSolver> Lion(float lr, float beta1, float beta2) {
  return std::make_shared<mg::LionSolver>(lr, beta1, beta2);
}
}  // namespace solvers

}  // namespace mg
