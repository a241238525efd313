// SgdW against its closed form, with decoupled decay that follows the
// learning rate schedule.
#include <gtest/gtest.h>

#include <mixgraph/solvers/sgdw.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

// m = momentum m + lr g; w = w - m - (lr / lr0) wd w.
SolverCheck sgdw_check(double lr0, double lr, double momentum, double wd) {
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      s["m"][i] = momentum * s["m"][i] + lr * g[i];
      w[i] = w[i] - s["m"][i] - (lr / lr0) * wd * w[i];
    }
  };
  auto make = [=] {
    auto s =
        solvers::SgdW(static_cast<float>(lr0), static_cast<float>(momentum),
                      static_cast<float>(wd));
    if (lr != lr0) s->set_learning_rate(static_cast<float>(lr));
    return s;
  };
  return SolverCheck{make, ref};
}

TEST(SgdW, ClosedForm) {
  check_solver(sgdw_check(0.05, 0.05, 0.8, 0.0));
  check_solver(sgdw_check(0.05, 0.05, 0.8, 0.1));
}

TEST(SgdW, WeightDecayCallWithTheSameRateChangesNothing) {
  SolverCheck c = sgdw_check(0.05, 0.05, 0.8, 0.1);
  c.weight_decay = 0.1f;
  c.coupled_decay = false;
  check_solver(c);
}

TEST(SgdW, DecayFollowsTheLearningRateSchedule) {
  check_solver(sgdw_check(0.05, 0.02, 0.8, 0.1));  // eta_t = 0.4
}

TEST(SgdW, DefaultsAreNNablas) {
  SolverCheck c = sgdw_check(1e-3, 1e-3, 0.9, 1e-4);  // lr, momentum, wd
  c.make = [] { return solvers::SgdW(); };
  check_solver(c);
  // wd = 1e-4 is decoupled: weight_decay() with it is the no-op check.
  EXPECT_NO_THROW(solvers::SgdW()->weight_decay(1e-4f));
}

TEST(SgdW, BadHyperParameters) {
  expect_invalid([] { solvers::SgdW(-0.1f); },
                 "[SgdW] learning rate must be >= 0");
  expect_invalid([] { solvers::SgdW(0.1f, -0.9f); },
                 "[SgdW] momentum must be >= 0");
  expect_invalid([] { solvers::SgdW(0.1f, 0.9f, -1e-4f); },
                 "[SgdW] wd must be >= 0");
  auto s = solvers::SgdW(0.1f, 0.9f, 1e-4f);
  expect_invalid(
      [&] { s->weight_decay(1e-3f); },
      "[SgdW::weight_decay] SgdW decays the weights inside update()");
  expect_invalid([&] { s->set_learning_rate(-1.0f); },
                 "[SgdW] learning rate must be >= 0");
}

TEST(SgdW, StatesRoundTrip) {
  check_states([] { return solvers::SgdW(0.05f, 0.8f, 0.1f); }, {"m"});
}

}  // namespace
}  // namespace mg::test
