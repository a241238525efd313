// Nesterov against its closed form.
#include <gtest/gtest.h>

#include <mixgraph/solvers/nesterov.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

TEST(Nesterov, ClosedForm) {
  // v' = momentum v - lr g; w += -momentum v + (1 + momentum) v'.
  auto ref = [](std::vector<double>& w, const std::vector<double>& g, int,
                DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double prev = s["m"][i];
      s["m"][i] = 0.8 * prev - 0.05 * g[i];
      w[i] += -0.8 * prev + 1.8 * s["m"][i];
    }
  };
  SolverCheck c{[] { return solvers::Nesterov(0.05f, 0.8f); }, ref};
  check_solver(c);
  c.weight_decay = 0.02f;  // coupled: added to the grad
  check_solver(c);
}

TEST(Nesterov, Defaults) {
  EXPECT_FLOAT_EQ(solvers::Nesterov()->learning_rate(), 1e-3f);
}

TEST(Nesterov, BadHyperParameters) {
  expect_invalid([] { solvers::Nesterov(-1e-3f); },
                 "[Nesterov] learning rate must be >= 0");
  expect_invalid([] { solvers::Nesterov(1e-3f, -0.5f); },
                 "[Nesterov] momentum must be >= 0");
}

TEST(Nesterov, StatesRoundTrip) {
  check_states([] { return solvers::Nesterov(0.05f, 0.8f); }, {"m"});
}

}  // namespace
}  // namespace mg::test
