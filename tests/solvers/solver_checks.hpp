// Checks shared by the solver tests beyond the update rule: the error message
// of a bad hyper-parameter, and the state names and their round trip through
// states() / set_states().
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/solvers/solver.hpp>

#include "../support/function_tester.hpp"
#include "../support/solver_tester.hpp"

namespace mg::test {

/// f() throws std::invalid_argument whose message starts with `prefix`.
inline void expect_invalid(const std::function<void()>& f,
                           const std::string& prefix) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one starting with: " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

/// The state names are NNabla's (in order), every state array has the
/// parameter's shape, and states copied out of one solver and set into a
/// fresh one continue the run bit for bit.
inline void check_states(const std::function<std::shared_ptr<Solver>()>& make,
                         const std::vector<std::string>& names) {
  auto a = make();
  SCOPED_TRACE(a->name());
  EXPECT_EQ(a->state_names(), names);
  const Shape shape{2, 3};
  const std::vector<float> w0{0.5f, -0.2f, 0.9f, -1.1f, 0.3f, 0.05f};
  auto wa = variable_from(shape, w0, true);
  a->set_parameters({{"w", wa}});
  auto set_grad = [](const VariablePtr& v, int t) {
    float* g = v->grad()->cast<float>(true);
    for (int i = 0; i < 6; ++i) g[i] = std::cos(0.9f * i + 0.4f * t) * (1 + i);
  };
  for (int t = 1; t <= 3; ++t) {
    set_grad(wa, t);
    a->update();
  }
  const SolverState st = a->states().at("w");
  EXPECT_EQ(st.t, 3u);
  std::vector<std::string> got;
  for (const auto& [n, arr] : st.pstate) {
    got.push_back(n);
    EXPECT_EQ(arr->shape(), shape) << n;
  }
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(got, sorted);  // pstate is a map: sorted by name

  // A deep copy, as a save and load would make.
  SolverState copy;
  copy.t = st.t;
  for (const auto& [n, arr] : st.pstate) {
    auto c = make_ndarray(shape);
    const float* src = arr->get<const float>();
    std::copy(src, src + 6, c->cast<float>(true));
    copy.pstate[n] = c;
  }
  auto b = make();
  const Doubles wnow = to_doubles(wa);
  auto wb =
      variable_from(shape, std::vector<float>(wnow.begin(), wnow.end()), true);
  b->set_parameters({{"w", wb}});
  b->set_states({{"w", copy}});
  EXPECT_EQ(b->states().at("w").t, 3u);
  set_grad(wa, 4);
  set_grad(wb, 4);
  a->update();
  b->update();
  EXPECT_EQ(to_doubles(wa), to_doubles(wb)) << "after the round trip";

  if (!names.empty()) {  // a missing state is refused and changes nothing
    SolverState partial = copy;
    partial.pstate.erase(names.back());
    expect_invalid(
        [&] {
          b->set_states({{"w", partial}});
        },
        "[" + b->name() + "::set_states] parameter 'w' lacks state " +
            names.back());
  }
}

/// One step of a fused-decay solver's closed form with decay rate wd.
using FusedReference =
    std::function<void(std::vector<double>& w, const std::vector<double>& g,
                       int t, DoubleState& state, double wd)>;

/// weight_decay(rate) on a solver that fuses decay holds for the next update
/// only: weight_decay(wd) before step 1 alone matches the closed form with wd
/// at step 1 and 0 after (and differs from decaying at every step).
inline void check_fused_decay_holds_one_step(
    const std::function<std::shared_ptr<Solver>()>& make,
    const FusedReference& ref, double wd) {
  const int n = 5, steps = 3;
  std::vector<float> w0(n);
  for (int i = 0; i < n; ++i) w0[i] = 0.8f - 0.35f * i;
  auto param = variable_from({n}, w0, true);
  auto solver = make();
  SCOPED_TRACE(solver->name());
  solver->set_parameters({{"w", param}});
  std::vector<double> w(w0.begin(), w0.end()), w_always = w;
  DoubleState state, state_always;
  for (const auto& name : solver->state_names()) {
    state[name].assign(n, 0.0);
    state_always[name].assign(n, 0.0);
  }
  for (int t = 1; t <= steps; ++t) {
    std::vector<double> g(n);
    float* pg = param->grad()->cast<float>(true);
    for (int i = 0; i < n; ++i) {
      pg[i] = static_cast<float>(std::sin(0.9 * i + 1.1 * t) * (1 + 0.3 * i));
      g[i] = pg[i];
    }
    if (t == 1) solver->weight_decay(static_cast<float>(wd));
    solver->update();
    ref(w, g, t, state, t == 1 ? wd : 0.0);
    ref(w_always, g, t, state_always, wd);
    expect_near(to_doubles(param), w, 1e-6, 1e-5,
                "weights after step " + std::to_string(t));
  }
  double diff = 0;
  for (int i = 0; i < n; ++i)
    diff = std::max(diff, std::abs(w[i] - w_always[i]));
  EXPECT_GT(diff, 1e-4) << "the check cannot tell one step from every step";
}

}  // namespace mg::test
