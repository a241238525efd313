#include <mixgraph/solvers/adagrad.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

AdagradSolver::AdagradSolver(float lr, float eps) : Solver(lr), eps_(eps) {
  check_hyper("Adagrad", "learning rate", lr, 0);
  check_hyper("Adagrad", "eps", eps, 0);
}

void AdagradSolver::update_impl(const UpdateContext& ctx, float* w,
                                const float* g, SolverState& state, int64_t n) {
  apply_rule(ctx, AdagradRule{learning_rate_, eps_}, n, w, g,
             state_data(ctx, state, "v"));
}

AdadeltaSolver::AdadeltaSolver(float lr, float decay, float eps)
    : Solver(lr), decay_(decay), eps_(eps) {
  check_hyper("Adadelta", "learning rate", lr, 0);
  check_hyper("Adadelta", "decay", decay, 0);
  // eps is also the first step's numerator: with 0 nothing would ever move.
  check_hyper("Adadelta", "eps", eps, 0, false);
}

void AdadeltaSolver::update_impl(const UpdateContext& ctx, float* w,
                                 const float* g, SolverState& state,
                                 int64_t n) {
  apply_rule(ctx, AdadeltaRule{learning_rate_, decay_, eps_}, n, w, g,
             state_data(ctx, state, "e_sqr_grad"),
             state_data(ctx, state, "e_sqr_delta"));
}

namespace solvers {
std::shared_ptr<mg::AdagradSolver> Adagrad(float lr, float eps) {
  return std::make_shared<mg::AdagradSolver>(lr, eps);
}
std::shared_ptr<mg::AdadeltaSolver> Adadelta(float lr, float decay, float eps) {
  return std::make_shared<mg::AdadeltaSolver>(lr, decay, eps);
}
}  // namespace solvers

}  // namespace mg
