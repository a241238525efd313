// The loop that applies an update rule to every weight. A rule is a small
// functor `void operator()(float& w, float g, float& s0, ...) const` with
// MG_HD, shared with the CUDA backend; per-step scalars (bias corrections,
// the learning rate at t) are computed once on the host and stored in it.
#pragma once

#include <cstdint>

#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// rule(w[i], g[i], s[i]...) for i in [0, n), in parallel for large n.
template <class Rule, class... S>
void apply_rule(const Rule& rule, int64_t n, float* w, const float* g,
                S*... s) {
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) rule(w[i], g[i], s[i]...);
}

/// The fp32 data of a state array, for writing.
inline float* state_data(SolverState& state, const std::string& name) {
  return state.pstate.at(name)->cast<float>();
}

}  // namespace mg
