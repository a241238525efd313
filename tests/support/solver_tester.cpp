#include "solver_tester.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "function_tester.hpp"

namespace mg::test {

void check_solver(const SolverCheck& c) {
  const int n = 7;
  std::vector<float> w0(n);
  for (int i = 0; i < n; ++i) w0[i] = 0.5f - 0.3f * i;
  auto param = variable_from({n}, w0, true);
  auto solver = c.make();
  solver->set_parameters({{"w", param}});
  std::vector<double> w(w0.begin(), w0.end());
  DoubleState state;
  for (const auto& name : solver->state_names()) state[name].assign(n, 0.0);
  for (int t = 1; t <= c.steps; ++t) {
    std::vector<double> g(n);
    float* pg = param->grad()->cast<float>(true);
    for (int i = 0; i < n; ++i) {
      pg[i] = static_cast<float>(std::sin(1.3 * i + 0.7 * t) * (1 + 0.5 * i));
      g[i] = pg[i];
      if (c.weight_decay > 0 && c.coupled_decay) g[i] += c.weight_decay * w[i];
    }
    if (c.weight_decay > 0) solver->weight_decay(c.weight_decay);
    solver->update();
    c.reference(w, g, t, state);
    expect_near(to_doubles(param), w, c.atol, c.rtol,
                solver->name() + " weights after step " + std::to_string(t));
    EXPECT_EQ(solver->states().at("w").t, static_cast<uint32_t>(t));
  }
}

}  // namespace mg::test
