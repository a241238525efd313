// The loop that applies an update rule to every weight. A rule is a small
// functor `void operator()(float& w, float g, float& s0, ...) const` with
// MG_HD, shared with the CUDA backend; per-step scalars (bias corrections,
// the learning rate at t) are computed once on the host and stored in it.
// The UpdateContext a solver's update_impl is given says where the rule runs
// and what the grads are multiplied by: on a device (ctx.ops set) the
// pointers are device pointers and the backend's kernel for the rule runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

namespace detail {
// Elements a rule writes before they are rounded into a 16-bit copy
// (UpdateContext::copy): Adam's four fp32 arrays of them are 32 KiB.
constexpr int64_t kCopyChunk = 2048;

// copy[0, n) = w[0, n) rounded to the 16-bit `dtype` as SyncedArray's
// conversions round (mg::convert), on the calling thread.
void round_into_copy(const float* w, void* copy, Dtype dtype, int64_t n);

// The host loops of a rule, compiled per vector ISA
// (contexts/cpu/isa_loops.hpp): Adam's sqrt and division run 16 wide instead of
// 4 (baseline SSE2), with the baseline's bits. run_here() is run() on the
// calling thread with no OpenMP construct (an `omp parallel for if (...)`
// enters a one-thread region even when its condition is false: once a
// 2048-element chunk, that took ResNet-18's bf16 Momentum update from 5 to
// 8.4 ms), which also rounds each chunk of new weights into a 16-bit copy
// where one is given, while they are in L1.
// clang-format off
#define MG_RULE_LOOP(NS, TARGET)                                          \
  namespace NS {                                                          \
  template <class Rule, class... S>                                       \
  TARGET void run(const Rule& rule, bool team, int64_t n, float gs,       \
                  float* w, const float* g, S*... s) {                    \
    _Pragma("omp parallel for schedule(static) if (team && n >= (1 << 15))") \
    for (int64_t i = 0; i < n; ++i) rule(w[i], g[i] * gs, s[i]...);       \
  }                                                                       \
  template <class Rule, class... S>                                       \
  TARGET void run_here(const Rule& rule, int64_t n, float gs, float* w,   \
                       const float* g, char* copy, Dtype dtype, S*... s) { \
    if (!copy) {                                                          \
      for (int64_t i = 0; i < n; ++i) rule(w[i], g[i] * gs, s[i]...);     \
      return;                                                             \
    }                                                                     \
    const int64_t bytes = static_cast<int64_t>(dtype_size(dtype));        \
    for (int64_t c = 0; c < n; c += kCopyChunk) {                         \
      const int64_t e = std::min(n, c + kCopyChunk);                      \
      for (int64_t i = c; i < e; ++i) rule(w[i], g[i] * gs, s[i]...);     \
      round_into_copy(w + c, copy + c * bytes, dtype, e - c);             \
    }                                                                     \
  }                                                                       \
  }
MG_FOR_EACH_VECTOR_ISA(MG_RULE_LOOP)
#undef MG_RULE_LOOP
// clang-format on

// On the team for large n (team), or on the calling thread.
template <class Rule, class... S>
void run_rule(const Rule& rule, bool team, int64_t n, float gs, float* w,
              const float* g, S*... s) {
  MG_CALL_VECTOR_ISA(run(rule, team, n, gs, w, g, s...));
}

// run_rule on the calling thread, rounding into copy (of dtype) where it
// is given.
template <class Rule, class... S>
void run_rule_here(const Rule& rule, int64_t n, float gs, float* w,
                   const float* g, char* copy, Dtype dtype, S*... s) {
  MG_CALL_VECTOR_ISA(run_here(rule, n, gs, w, g, copy, dtype, s...));
}

/// The host's rule applications of one Solver::update(), gathered while
/// one lives on the thread (apply_rule() adds to it instead of running)
/// and run by run() on one team, every parameter's elements together split
/// evenly among the threads: one wake of the team a step, where each
/// parameter's own loop woke it (under OMP_WAIT_POLICY=passive the GPT's
/// Adam update took 4.4 ms so, 2.8-3.1 ms in one team). Applications to
/// the same weights run in the order made: one to weights already
/// gathered runs what was gathered first. Each element's rule is the same
/// computation whichever thread runs it: the same bits as one at a time.
class HostRuleBatch {
 public:
  /// Gathers on this thread from now on (none where `gather` is false).
  explicit HostRuleBatch(bool gather);
  /// Stops gathering and runs what was not run (an update that threw:
  /// the parameters before the throw are updated, as one by one).
  ~HostRuleBatch();
  HostRuleBatch(const HostRuleBatch&) = delete;
  HostRuleBatch& operator=(const HostRuleBatch&) = delete;

  /// The batch gathering on this thread, or null.
  static HostRuleBatch* current();
  /// Adds elements [0, n) of one application to w; `run(b, e)` applies it
  /// to [b, e) on the calling thread.
  void add(int64_t n, const float* w,
           std::function<void(int64_t, int64_t)> run);
  /// Runs what was gathered, then gathers anew.
  void run();

 private:
  struct Job {
    int64_t n;
    const float* w;
    std::function<void(int64_t, int64_t)> run;
  };
  std::vector<Job> jobs_;
  HostRuleBatch* previous_ = nullptr;
  bool gathering_ = false;
};
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
  // On the host: gathered into the update's batch where one is running
  // (and, with a 16-bit copy to write, into a batch of its own), else on
  // the team for large n. A copy is rounded from each chunk of new
  // weights while they are still in L1.
  const float gs = ctx.grad_scale;
  char* const copy = static_cast<char*>(ctx.copy);
  const Dtype copy_dtype = ctx.copy_dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_size(copy_dtype));
  auto run_range = [=](int64_t b, int64_t e) {
    detail::run_rule_here(rule, e - b, gs, w + b, g + b,
                          copy ? copy + b * bytes : nullptr, copy_dtype,
                          (s + b)...);
  };
  if (detail::HostRuleBatch* batch = detail::HostRuleBatch::current()) {
    batch->add(n, w, run_range);
  } else if (copy) {
    detail::HostRuleBatch alone(true);  // the chunks on the team
    alone.add(n, w, run_range);
  } else {
    detail::run_rule(rule, true, n, gs, w, g, s...);
  }
}

/// The fp32 data of a state array, for writing, where ctx runs the rules.
inline float* state_data(const UpdateContext& ctx, SolverState& state,
                         const std::string& name) {
  return state.pstate.at(name)->cast<float>(false, ctx.device);
}

}  // namespace mg
