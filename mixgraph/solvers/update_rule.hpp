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

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

namespace detail {
// The host loop of a rule, compiled per vector ISA
// (contexts/cpu/isa_loops.hpp): Adam's sqrt and division run 16 wide instead of
// 4 (baseline SSE2), with the baseline's bits.
// clang-format off
#define MG_RULE_LOOP(NS, TARGET)                                          \
  namespace NS {                                                          \
  template <class Rule, class... S>                                       \
  TARGET void run(const Rule& rule, int64_t n, float gs, float* w,        \
                  const float* g, S*... s) {                              \
    _Pragma("omp parallel for schedule(static) if (n >= (1 << 15))")      \
    for (int64_t i = 0; i < n; ++i) rule(w[i], g[i] * gs, s[i]...);       \
  }                                                                       \
  }
MG_FOR_EACH_VECTOR_ISA(MG_RULE_LOOP)
#undef MG_RULE_LOOP
// clang-format on

template <class Rule, class... S>
void run_rule(const Rule& rule, int64_t n, float gs, float* w, const float* g,
              S*... s) {
  MG_CALL_VECTOR_ISA(run(rule, n, gs, w, g, s...));
}
}  // namespace detail

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
  detail::run_rule(rule, n, ctx.grad_scale, w, g, s...);
}

/// The fp32 data of a state array, for writing, where ctx runs the rules.
inline float* state_data(const UpdateContext& ctx, SolverState& state,
                         const std::string& name) {
  return state.pstate.at(name)->cast<float>(false, ctx.device);
}

}  // namespace mg
