#include <mixgraph/solvers/rmsprop.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

RMSpropSolver::RMSpropSolver(float lr, float decay, float eps)
    : Solver(lr), decay_(decay), eps_(eps) {
  check_hyper("RMSprop", "learning rate", lr, 0);
  check_hyper("RMSprop", "decay", decay, 0);
  check_hyper("RMSprop", "eps", eps, 0);
}

void RMSpropSolver::update_impl(const UpdateContext& ctx, float* w,
                                const float* g, SolverState& state, int64_t n) {
  apply_rule(ctx, RmspropRule{learning_rate_, decay_, eps_}, n, w, g,
             state_data(ctx, state, "v"));
}

RMSpropGravesSolver::RMSpropGravesSolver(float lr, float decay, float momentum,
                                         float eps)
    : Solver(lr), decay_(decay), momentum_(momentum), eps_(eps) {
  check_hyper("RMSpropGraves", "learning rate", lr, 0);
  check_hyper("RMSpropGraves", "decay", decay, 0);
  check_hyper("RMSpropGraves", "momentum", momentum, 0);
  // n - g^2 is a variance that rounding can leave at 0: eps keeps the root
  // away from a division by zero.
  check_hyper("RMSpropGraves", "eps", eps, 0, false);
}

void RMSpropGravesSolver::update_impl(const UpdateContext& ctx, float* w,
                                      const float* g, SolverState& state,
                                      int64_t n) {
  apply_rule(ctx, RmspropGravesRule{learning_rate_, decay_, momentum_, eps_}, n,
             w, g, state_data(ctx, state, "n"), state_data(ctx, state, "g"),
             state_data(ctx, state, "d"));
}

namespace solvers {
std::shared_ptr<mg::RMSpropSolver> RMSprop(float lr, float decay, float eps) {
  return std::make_shared<mg::RMSpropSolver>(lr, decay, eps);
}
std::shared_ptr<mg::RMSpropGravesSolver> RMSpropGraves(float lr, float decay,
                                                       float momentum,
                                                       float eps) {
  return std::make_shared<mg::RMSpropGravesSolver>(lr, decay, momentum, eps);
}
}  // namespace solvers

}  // namespace mg
