// RMSprop and RMSpropGraves against their closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include <mixgraph/solvers/rmsprop.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

SolverCheck rmsprop_check(double lr, double decay, double eps) {
  // v = decay v + (1 - decay) g^2; w -= lr g / (sqrt(v) + eps).
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      s["v"][i] = decay * s["v"][i] + (1 - decay) * g[i] * g[i];
      w[i] -= lr * g[i] / (std::sqrt(s["v"][i]) + eps);
    }
  };
  return SolverCheck{[=] {
                       return solvers::RMSprop(static_cast<float>(lr),
                                               static_cast<float>(decay),
                                               static_cast<float>(eps));
                     },
                     ref};
}

SolverCheck graves_check(double lr, double decay, double momentum, double eps) {
  // n = decay n + (1 - decay) g^2; mg = decay mg + (1 - decay) g;
  // d = momentum d - lr g / sqrt(n - mg^2 + eps); w += d.
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      double &n = s["n"][i], &mg = s["g"][i], &d = s["d"][i];
      n = decay * n + (1 - decay) * g[i] * g[i];
      mg = decay * mg + (1 - decay) * g[i];
      d = momentum * d - lr * g[i] / std::sqrt(n - mg * mg + eps);
      w[i] += d;
    }
  };
  return SolverCheck{[=] {
                       return solvers::RMSpropGraves(
                           static_cast<float>(lr), static_cast<float>(decay),
                           static_cast<float>(momentum),
                           static_cast<float>(eps));
                     },
                     ref};
}

TEST(RMSprop, ClosedForm) {
  SolverCheck c = rmsprop_check(0.01, 0.9, 1e-8);
  check_solver(c);
  c.weight_decay = 0.01f;
  check_solver(c);
}

TEST(RMSpropGraves, ClosedForm) {
  SolverCheck c = graves_check(0.01, 0.95, 0.9, 1e-4);
  check_solver(c);
  c.weight_decay = 0.01f;
  check_solver(c);
}

TEST(RMSpropFamily, DefaultsAreNNablas) {
  SolverCheck c = rmsprop_check(1e-3, 0.9, 1e-8);  // RMSprop()
  c.make = [] { return solvers::RMSprop(); };
  check_solver(c);
  c = graves_check(1e-4, 0.95, 0.9, 1e-4);  // RMSpropGraves()
  c.make = [] { return solvers::RMSpropGraves(); };
  check_solver(c);
}

TEST(RMSpropFamily, BadHyperParameters) {
  expect_invalid([] { solvers::RMSprop(-1e-3f); },
                 "[RMSprop] learning rate must be >= 0");
  expect_invalid([] { solvers::RMSprop(1e-3f, -0.9f); },
                 "[RMSprop] decay must be >= 0");
  expect_invalid([] { solvers::RMSpropGraves(-1e-4f); },
                 "[RMSpropGraves] learning rate must be >= 0");
  expect_invalid([] { solvers::RMSpropGraves(1e-4f, 0.95f, -0.9f); },
                 "[RMSpropGraves] momentum must be >= 0");
  expect_invalid([] { solvers::RMSpropGraves(1e-4f, 0.95f, 0.9f, 0.0f); },
                 "[RMSpropGraves] eps must be > 0");
}

TEST(RMSpropFamily, StatesRoundTrip) {
  check_states([] { return solvers::RMSprop(0.01f); }, {"v"});
  check_states([] { return solvers::RMSpropGraves(0.01f); }, {"n", "g", "d"});
}

}  // namespace
}  // namespace mg::test
