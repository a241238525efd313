// The loop that applies an update rule to every weight. A rule is a small
// functor `void operator()(float& w, float g, float& s0, ...) const` with
// MG_HD, shared with the CUDA backend; per-step scalars (bias corrections,
// the learning rate at t) are computed once on the host and stored in it.
// While Solver::update runs a parameter on a device (device_ops.hpp), the
// pointers are device pointers and the device's kernel for the rule runs.
#pragma once

#include <cstdint>
#include <type_traits>
#include <typeinfo>

#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

namespace detail {

/// The factor apply_rule multiplies every grad by: the grad_scale of the
/// Solver::update(grad_scale) running in this thread, 1 otherwise.
float rule_grad_scale();

}  // namespace detail

/// rule(w[i], g[i] * grad scale, s[i]...) for i in [0, n), in parallel for
/// large n; g[i] * 1 is g[i], so a plain update() is unchanged by it.
template <class Rule, class... S>
void apply_rule(const Rule& rule, int64_t n, float* w, const float* g,
                S*... s) {
  static_assert((std::is_same_v<S, float> && ...), "states are float arrays");
  static_assert(std::is_trivially_copyable_v<Rule>,
                "a rule is copied to the device as bytes");
  const float gs = detail::rule_grad_scale();
  if (const detail::RuleDevice* d = detail::current_rule_device()) {
    float* states[] = {s..., nullptr};
    d->ops->apply_rule(d->index, typeid(Rule), &rule, n, w, g, gs, states,
                       static_cast<int>(sizeof...(S)));
    return;
  }
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) rule(w[i], g[i] * gs, s[i]...);
}

/// The fp32 data of a state array, for writing (on the rule device while
/// Solver::update runs on one).
inline float* state_data(SolverState& state, const std::string& name) {
  const detail::RuleDevice* d = detail::current_rule_device();
  return state.pstate.at(name)->cast<float>(false, d ? d->device : "cpu");
}

}  // namespace mg
