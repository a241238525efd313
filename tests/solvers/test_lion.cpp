// Lion against its closed form, with its fused weight decay.
#include <gtest/gtest.h>

#include <mixgraph/solvers/lion.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

// u = sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g; w -= lr (u + wd w).
void lion_step(double lr, double b1, double b2, std::vector<double>& w,
               const std::vector<double>& g, DoubleState& s, double wd) {
  for (size_t i = 0; i < w.size(); ++i) {
    const double c = b1 * s["m"][i] + (1 - b1) * g[i];
    const double u = (c > 0) - (c < 0);
    s["m"][i] = b2 * s["m"][i] + (1 - b2) * g[i];
    w[i] -= lr * (u + wd * w[i]);
  }
}

SolverCheck lion_check(double lr, double b1, double b2, double wd) {
  SolverCheck c{[=] {
                  return solvers::Lion(static_cast<float>(lr),
                                       static_cast<float>(b1),
                                       static_cast<float>(b2));
                },
                [=](std::vector<double>& w, const std::vector<double>& g, int,
                    DoubleState& s) { lion_step(lr, b1, b2, w, g, s, wd); }};
  c.weight_decay = static_cast<float>(wd);
  c.coupled_decay = false;  // fused: the reference applies wd itself
  return c;
}

TEST(Lion, ClosedForm) {
  check_solver(lion_check(0.01, 0.9, 0.99, 0.0));
  check_solver(lion_check(0.01, 0.5, 0.9, 0.0));
}

TEST(Lion, ClosedFormWithFusedWeightDecay) {
  check_solver(lion_check(0.01, 0.9, 0.99, 0.1));
}

TEST(Lion, FusedDecayHoldsForOneUpdate) {
  check_fused_decay_holds_one_step(
      [] { return solvers::Lion(0.01f, 0.9f, 0.99f); },
      [](std::vector<double>& w, const std::vector<double>& g, int,
         DoubleState& s,
         double wd) { lion_step(0.01, 0.9, 0.99, w, g, s, wd); },
      0.5);
}

TEST(Lion, ZeroInterpolationHasNoSign) {
  // m = 0 and g = 0: sign(0) = 0, so only the decay moves w.
  auto s = solvers::Lion(0.1f);
  auto w = variable_from({1}, {2.0f}, true);
  w->grad()->cast<float>(true)[0] = 0.0f;
  s->set_parameters({{"w", w}});
  s->weight_decay(0.5f);
  s->update();
  EXPECT_NEAR(to_doubles(w)[0], 2.0 - 0.1 * 0.5 * 2.0, 1e-7);
}

TEST(Lion, DefaultsAreNNablas) {
  SolverCheck c = lion_check(1e-4, 0.9, 0.99, 0.0);  // Lion(lr, beta1, beta2)
  c.make = [] { return solvers::Lion(); };
  check_solver(c);
}

TEST(Lion, BadHyperParameters) {
  expect_invalid([] { solvers::Lion(-1e-4f); },
                 "[Lion] learning rate must be >= 0");
  expect_invalid([] { solvers::Lion(1e-4f, -0.9f); },
                 "[Lion] beta1 must be >= 0");
  expect_invalid([] { solvers::Lion(1e-4f, 0.9f, -0.99f); },
                 "[Lion] beta2 must be >= 0");
}

TEST(Lion, StatesRoundTrip) {
  check_states([] { return solvers::Lion(0.01f); }, {"m"});
}

}  // namespace
}  // namespace mg::test
