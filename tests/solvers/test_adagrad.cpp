// Adagrad and Adadelta against their closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include <mixgraph/solvers/adagrad.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

SolverCheck adagrad_check(double lr, double eps) {
  // v += g^2; w -= lr g / (sqrt(v) + eps).
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      s["v"][i] += g[i] * g[i];
      w[i] -= lr * g[i] / (std::sqrt(s["v"][i]) + eps);
    }
  };
  return SolverCheck{[=] {
                       return solvers::Adagrad(static_cast<float>(lr),
                                               static_cast<float>(eps));
                     },
                     ref};
}

TEST(Adagrad, ClosedForm) {
  SolverCheck c = adagrad_check(0.1, 1e-8);
  check_solver(c);
  c.weight_decay = 0.01f;
  check_solver(c);
}

SolverCheck adadelta_check(double lr, double decay, double eps) {
  // E[g^2] = decay E[g^2] + (1 - decay) g^2;
  // delta = sqrt((E[d^2] + eps) / (E[g^2] + eps)) g;
  // E[d^2] = decay E[d^2] + (1 - decay) delta^2; w -= lr delta.
  auto ref = [=](std::vector<double>& w, const std::vector<double>& g, int,
                 DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      double& eg = s["e_sqr_grad"][i];
      double& ed = s["e_sqr_delta"][i];
      eg = decay * eg + (1 - decay) * g[i] * g[i];
      const double delta = std::sqrt((ed + eps) / (eg + eps)) * g[i];
      ed = decay * ed + (1 - decay) * delta * delta;
      w[i] -= lr * delta;
    }
  };
  return SolverCheck{[=] {
                       return solvers::Adadelta(static_cast<float>(lr),
                                                static_cast<float>(decay),
                                                static_cast<float>(eps));
                     },
                     ref};
}

TEST(Adadelta, ClosedForm) {
  check_solver(adadelta_check(1.0, 0.95, 1e-6));
  // A larger eps moves the weights more: a bigger check of the ratio.
  check_solver(adadelta_check(0.5, 0.9, 1e-3));
  SolverCheck c = adadelta_check(1.0, 0.95, 1e-6);
  c.weight_decay = 0.01f;
  check_solver(c);
}

TEST(AdagradAdadelta, DefaultsAreNNablas) {
  SolverCheck c = adagrad_check(1e-2, 1e-8);  // Adagrad(lr=1e-2, eps=1e-8)
  c.make = [] { return solvers::Adagrad(); };
  check_solver(c);
  // Adadelta(lr=1.0, decay=0.95, eps=1e-6)
  c = adadelta_check(1.0, 0.95, 1e-6);
  c.make = [] { return solvers::Adadelta(); };
  check_solver(c);
}

TEST(AdagradAdadelta, BadHyperParameters) {
  expect_invalid([] { solvers::Adagrad(-1e-2f); },
                 "[Adagrad] learning rate must be >= 0");
  expect_invalid([] { solvers::Adagrad(1e-2f, -1e-8f); },
                 "[Adagrad] eps must be >= 0");
  expect_invalid([] { solvers::Adadelta(-1.0f); },
                 "[Adadelta] learning rate must be >= 0");
  expect_invalid([] { solvers::Adadelta(1.0f, -0.95f); },
                 "[Adadelta] decay must be >= 0");
  expect_invalid([] { solvers::Adadelta(1.0f, 0.95f, 0.0f); },
                 "[Adadelta] eps must be > 0");
}

TEST(AdagradAdadelta, StatesRoundTrip) {
  check_states([] { return solvers::Adagrad(0.1f); }, {"v"});
  check_states([] { return solvers::Adadelta(); },
               {"e_sqr_grad", "e_sqr_delta"});
}

}  // namespace
}  // namespace mg::test
