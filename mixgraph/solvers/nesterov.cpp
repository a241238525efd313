#include <mixgraph/solvers/nesterov.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

NesterovSolver::NesterovSolver(float lr, float momentum)
    : Solver(lr), momentum_(momentum) {
  check_hyper("Nesterov", "learning rate", lr, 0);
  check_hyper("Nesterov", "momentum", momentum, 0);
}

void NesterovSolver::update_impl(const UpdateContext& ctx, float* w,
                                 const float* g, SolverState& state,
                                 int64_t n) {
  apply_rule(ctx, NesterovRule{learning_rate_, momentum_}, n, w, g,
             state_data(ctx, state, "m"));
}

namespace solvers {
std::shared_ptr<mg::NesterovSolver> Nesterov(float lr, float momentum) {
  return std::make_shared<mg::NesterovSolver>(lr, momentum);
}
}  // namespace solvers

}  // namespace mg
