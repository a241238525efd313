// The loop that applies an update rule to every weight. A rule is a small
// functor `void operator()(float& w, float g, float& s0, ...) const` with
// MG_HD, shared with the CUDA backend; per-step scalars (bias corrections,
// the learning rate at t) are computed once on the host and stored in it.
// The UpdateContext a solver's update_impl is given says where the rule runs
// and what the grads are multiplied by: on a device (ctx.ops set) the
// pointers are device pointers and the backend's kernel for the rule runs.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// rule(w[i], g[i] * ctx.grad_scale, s[i]...) for i in [0, n), where ctx
/// says: on its device, or on the host in parallel for large n. g[i] * 1 is
/// g[i], so a plain update() is unchanged by the scale.
template <class Rule, class... S>
void apply_rule(const UpdateContext& ctx, const Rule& rule, int64_t n, float* w,
                const float* g, S*... s) {
  static_assert((std::is_same_v<S, float> && ...), "states are float arrays");
  static_assert(std::is_trivially_copyable_v<Rule>,
                "a rule is copied to the device as bytes");
  constexpr int slot =
      detail::rule_slot<Rule, static_cast<int>(sizeof...(S))>();
  static_assert(slot >= 0,
                "this rule with this many state arrays is not in "
                "MG_UPDATE_RULES (solvers/rule_list.hpp): add it there so "
                "that device backends have its kernel");
  if (ctx.ops) {
    float* states[] = {s..., nullptr};
    ctx.ops->apply_rule(ctx.index, slot, &rule, n, w, g, ctx.grad_scale,
                        states);
    return;
  }
  const float gs = ctx.grad_scale;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) rule(w[i], g[i] * gs, s[i]...);
}

/// The fp32 data of a state array, for writing, where ctx runs the rules.
inline float* state_data(const UpdateContext& ctx, SolverState& state,
                         const std::string& name) {
  return state.pstate.at(name)->cast<float>(false, ctx.device);
}

}  // namespace mg
