// Nesterov against its closed form.
#include <gtest/gtest.h>

#include <mixgraph/solvers/nesterov.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

SolverCheck nesterov_check(double lr, double momentum) {
  // v' = momentum v - lr g; w += -momentum v + (1 + momentum) v'.
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double prev = s["m"][i];
      s["m"][i] = momentum * prev - lr * g[i];
      w[i] += -momentum * prev + (1 + momentum) * s["m"][i];
    }
  };
  return SolverCheck{[=] {
                       return solvers::Nesterov(static_cast<float>(lr),
                                                static_cast<float>(momentum));
                     },
                     ref};
}

TEST(Nesterov, ClosedForm) {
  SolverCheck c = nesterov_check(0.05, 0.8);
  check_solver(c);
  c.weight_decay = 0.02f;  // coupled: added to the grad
  check_solver(c);
}

TEST(Nesterov, DefaultsAreNNablas) {
  SolverCheck c = nesterov_check(1e-3, 0.9);  // Nesterov(lr=1e-3, momentum=0.9)
  c.make = [] { return solvers::Nesterov(); };
  check_solver(c);
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
