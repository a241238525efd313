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

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

namespace detail {
// The host loop of a rule, compiled for the baseline ISA, AVX2 and AVX-512
// and chosen at run time (as the solvers' grad pass): Adam's sqrt and
// division run 16 wide instead of 4 (baseline SSE2). Contraction into FMA is
// off, so every path gives the baseline's bits (and the CUDA rule's, which
// nvcc is told the same).
#if defined(__GNUC__) && !defined(__clang__)
#define MG_NO_CONTRACT optimize("fp-contract=off")
#else
#define MG_NO_CONTRACT
#endif
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
MG_RULE_LOOP(rule_baseline, __attribute__((MG_NO_CONTRACT)))
MG_RULE_LOOP(rule_avx2, __attribute__((target("avx2"), MG_NO_CONTRACT)))
MG_RULE_LOOP(rule_avx512, __attribute__((target("avx512f"), MG_NO_CONTRACT)))
#undef MG_RULE_LOOP
#undef MG_NO_CONTRACT
// clang-format on
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
  const auto& cpu = cpu::cpu_features();
  if (cpu.avx512f) {
    detail::rule_avx512::run(rule, n, ctx.grad_scale, w, g, s...);
  } else if (cpu.avx2) {
    detail::rule_avx2::run(rule, n, ctx.grad_scale, w, g, s...);
  } else {
    detail::rule_baseline::run(rule, n, ctx.grad_scale, w, g, s...);
  }
}

/// The fp32 data of a state array, for writing, where ctx runs the rules.
inline float* state_data(const UpdateContext& ctx, SolverState& state,
                         const std::string& name) {
  return state.pstate.at(name)->cast<float>(false, ctx.device);
}

}  // namespace mg
