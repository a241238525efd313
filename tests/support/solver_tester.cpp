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
  // A twin fed the grads times 1024 and stepped with update(1 / 1024), as
  // the loss scaler steps: the power of two makes it exact, so its weights
  // must equal the plain solver's bit for bit. Coupled weight decay adds to
  // the grads before the step, which the scaler does on unscaled grads only.
  const bool twin = c.weight_decay == 0 || !c.coupled_decay;
  auto scaled_param = variable_from({n}, w0, true);
  auto scaled_solver = c.make();
  scaled_solver->set_parameters({{"w", scaled_param}});
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
    if (twin) {
      float* sg = scaled_param->grad()->cast<float>(true);
      for (int i = 0; i < n; ++i) sg[i] = pg[i] * 1024.0f;
      if (c.weight_decay > 0) scaled_solver->weight_decay(c.weight_decay);
      scaled_solver->update(1.0f / 1024.0f);
      EXPECT_EQ(to_doubles(scaled_param), to_doubles(param))
          << solver->name() << " update(1/1024) on grads x 1024, step " << t;
    }
    c.reference(w, g, t, state);
    expect_near(to_doubles(param), w, c.atol, c.rtol,
                solver->name() + " weights after step " + std::to_string(t));
    EXPECT_EQ(solver->states().at("w").t, static_cast<uint32_t>(t));
  }
}

}  // namespace mg::test
