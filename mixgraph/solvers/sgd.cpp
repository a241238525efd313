#include <mixgraph/solvers/sgd.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

SgdSolver::SgdSolver(float lr) : Solver(lr) {
  check_hyper("Sgd", "learning rate", lr, 0);
}

void SgdSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                            SolverState&, int64_t n) {
  apply_rule(ctx, SgdRule{learning_rate_}, n, w, g);
}

MomentumSolver::MomentumSolver(float lr, float momentum)
    : Solver(lr), momentum_(momentum) {
  check_hyper("Momentum", "learning rate", lr, 0);
  check_hyper("Momentum", "momentum", momentum, 0);
}

void MomentumSolver::update_impl(const UpdateContext& ctx, float* w,
                                 const float* g, SolverState& state,
                                 int64_t n) {
  apply_rule(ctx, MomentumRule{learning_rate_, momentum_}, n, w, g,
             state_data(ctx, state, "m"));
}

namespace solvers {
std::shared_ptr<mg::SgdSolver> Sgd(float lr) {
  return std::make_shared<mg::SgdSolver>(lr);
}
std::shared_ptr<mg::MomentumSolver> Momentum(float lr, float momentum) {
  return std::make_shared<mg::MomentumSolver>(lr, momentum);
}
}  // namespace solvers

}  // namespace mg
