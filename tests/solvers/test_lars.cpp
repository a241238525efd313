// Lars against its closed form, with its fused weight decay.
#include <gtest/gtest.h>

#include <cmath>

#include <mixgraph/solvers/lars.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

double norm(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

// local_lr = lr coef ||w|| / (||g|| + wd ||w||) (lr when ||w|| < eps);
// v = momentum v + local_lr (g + wd w); w -= v.
SolverCheck lars_check(double lr, double momentum, double coef, double eps,
                       double wd) {
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    const double wn = norm(w), gn = norm(g);
    double denom = gn + wd * wn;
    if (denom < eps) denom += eps;
    const double local_lr = wn < eps ? lr : lr * coef * wn / denom;
    for (size_t i = 0; i < w.size(); ++i) {
      s["v"][i] = momentum * s["v"][i] + local_lr * (g[i] + wd * w[i]);
      w[i] -= s["v"][i];
    }
  };
  SolverCheck c{[=] {
                  return solvers::Lars(
                      static_cast<float>(lr), static_cast<float>(momentum),
                      static_cast<float>(coef), static_cast<float>(eps));
                },
                ref};
  c.weight_decay = static_cast<float>(wd);
  c.coupled_decay = false;  // fused: the reference applies wd itself
  return c;
}

TEST(Lars, ClosedForm) {
  check_solver(lars_check(0.5, 0.8, 0.02, 1e-6, 0.0));
  check_solver(lars_check(2.0, 0.5, 1e-3, 1e-6, 0.0));
}

TEST(Lars, ClosedFormWithFusedWeightDecay) {
  check_solver(lars_check(0.5, 0.8, 0.02, 1e-6, 0.05));
}

TEST(Lars, ZeroWeightsTakeThePlainLearningRate) {
  auto s = solvers::Lars(0.1f, 0.9f, 1e-3f, 1e-6f);
  auto w = variable_from({2}, {0.0f, 0.0f}, true);
  std::copy_n(std::vector<float>{1.0f, -2.0f}.begin(), 2,
              w->grad()->cast<float>(true));
  s->set_parameters({{"w", w}});
  s->update();
  expect_near(to_doubles(w), {-0.1, 0.2}, 1e-7, 0, "w after one step");
}

TEST(Lars, FusedDecayHoldsForOneUpdate) {
  auto ref = [](std::vector<double>& w, const std::vector<double>& g, int t,
                DoubleState& s, double wd) {
    lars_check(0.5, 0.8, 0.02, 1e-6, wd).reference(w, g, t, s);
  };
  check_fused_decay_holds_one_step(
      [] { return solvers::Lars(0.5f, 0.8f, 0.02f, 1e-6f); }, ref, 0.3);
  // weight_decay() leaves the grads alone.
  auto s = solvers::Lars();
  auto w = variable_from({1}, {2.0f}, true);
  w->grad()->cast<float>(true)[0] = 1.0f;
  s->set_parameters({{"w", w}});
  s->weight_decay(0.5f);
  EXPECT_EQ(grad_doubles(w)[0], 1.0);
}

TEST(Lars, DefaultsAreNNablas) {
  // Lars(lr=1e-3, momentum=0.9, coefficient=1e-3, eps=1e-6); the trust ratio
  // makes the default step tiny, so a larger lr checks the other defaults.
  SolverCheck c = lars_check(1e-3, 0.9, 1e-3, 1e-6, 0.0);
  c.make = [] { return solvers::Lars(); };
  check_solver(c);
  c = lars_check(50.0, 0.9, 1e-3, 1e-6, 0.0);
  c.make = [] {
    auto s = solvers::Lars();
    s->set_learning_rate(50.0f);
    return s;
  };
  check_solver(c);
}

TEST(Lars, BadHyperParameters) {
  expect_invalid([] { solvers::Lars(-1e-3f); },
                 "[Lars] learning rate must be >= 0");
  expect_invalid([] { solvers::Lars(1e-3f, -0.9f); },
                 "[Lars] momentum must be >= 0");
  expect_invalid([] { solvers::Lars(1e-3f, 0.9f, -1.0f); },
                 "[Lars] coefficient must be >= 0");
  expect_invalid([] { solvers::Lars(1e-3f, 0.9f, 1e-3f, -1e-6f); },
                 "[Lars] eps must be >= 0");
}

TEST(Lars, StatesRoundTrip) {
  check_states([] { return solvers::Lars(0.5f, 0.8f, 0.02f); }, {"v"});
}

}  // namespace
}  // namespace mg::test
