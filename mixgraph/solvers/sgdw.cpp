#include <mixgraph/solvers/sgdw.hpp>

#include <mixgraph/solvers/update_rule.hpp>

namespace mg {

SgdWSolver::SgdWSolver(float lr, float momentum, float wd)
    : Solver(lr), momentum_(momentum), wd_(wd), initial_lr_(lr) {
  check_hyper("SgdW", "learning rate", lr, 0);
  check_hyper("SgdW", "momentum", momentum, 0);
  check_hyper("SgdW", "wd", wd, 0);
}

void SgdWSolver::update_impl(const UpdateContext& ctx, float* w, const float* g,
                             SolverState& state, int64_t n) {
  const float eta_t = initial_lr_ > 0 ? learning_rate_ / initial_lr_ : 0;
  apply_rule(ctx, SgdWRule{learning_rate_, momentum_, eta_t * wd_}, n, w, g,
             state_data(ctx, state, "m"));
}

namespace solvers {
std::shared_ptr<mg::SgdWSolver> SgdW(float lr, float momentum, float wd) {
  return std::make_shared<mg::SgdWSolver>(lr, momentum, wd);
}
}  // namespace solvers

}  // namespace mg
