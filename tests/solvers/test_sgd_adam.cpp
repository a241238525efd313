// Sgd, Momentum, Adam and AdamW against their closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/sgd.hpp>

#include "../support/solver_tester.hpp"

namespace mg::test {
namespace {

void sgd_ref(std::vector<double>& w, const std::vector<double>& g, int,
             DoubleState&) {
  for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.1 * g[i];
}

TEST(Sgd, ClosedForm) {
  check_solver({[] { return solvers::Sgd(0.1f); }, sgd_ref});
  SolverCheck c{[] { return solvers::Sgd(0.1f); }, sgd_ref};
  c.weight_decay = 0.01f;
  check_solver(c);
}

TEST(Momentum, ClosedForm) {
  auto ref = [](std::vector<double>& w, const std::vector<double>& g, int,
                DoubleState& s) {
    for (size_t i = 0; i < w.size(); ++i) {
      s["m"][i] = 0.8 * s["m"][i] + 0.05 * g[i];
      w[i] -= s["m"][i];
    }
  };
  SolverCheck c{[] { return solvers::Momentum(0.05f, 0.8f); }, ref};
  check_solver(c);
  c.weight_decay = 0.02f;
  check_solver(c);
}

void adam_step(std::vector<double>& w, const std::vector<double>& g, int t,
               DoubleState& s, double alpha, double wd_eta) {
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const double alpha_t =
      alpha * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  for (size_t i = 0; i < w.size(); ++i) {
    s["mean"][i] = b1 * s["mean"][i] + (1 - b1) * g[i];
    s["var"][i] = b2 * s["var"][i] + (1 - b2) * g[i] * g[i];
    w[i] = w[i] - alpha_t * s["mean"][i] / (std::sqrt(s["var"][i]) + eps) -
           wd_eta * w[i];
  }
}

TEST(Adam, ClosedForm) {
  auto ref = [](std::vector<double>& w, const std::vector<double>& g, int t,
                DoubleState& s) { adam_step(w, g, t, s, 0.01, 0.0); };
  SolverCheck c{[] { return solvers::Adam(0.01f); }, ref};
  check_solver(c);
  c.weight_decay = 0.1f;
  check_solver(c);
}

TEST(AdamW, ClosedFormWithDecoupledDecay) {
  auto ref = [](std::vector<double>& w, const std::vector<double>& g, int t,
                DoubleState& s) { adam_step(w, g, t, s, 0.01, 1.0 * 0.05); };
  SolverCheck c{
      [] { return solvers::AdamW(0.01f, 0.9f, 0.999f, 1e-8f, 0.05f); }, ref};
  check_solver(c);
  c.weight_decay = 0.05f;  // the same rate through weight_decay(): no change
  c.coupled_decay = false;
  check_solver(c);
}

TEST(AdamW, DecayFollowsTheLearningRateSchedule) {
  auto s = solvers::AdamW(0.01f, 0.9f, 0.999f, 1e-8f, 0.5f);
  s->set_learning_rate(0.0f);  // eta_t = 0: no step and no decay
  auto w = make_variable({1}, true);
  w->data()->fill(2.0);
  w->grad()->fill(1.0);
  s->set_parameters({{"w", w}});
  s->update();
  EXPECT_EQ(w->data()->get<const float>()[0], 2.0f);
}

}  // namespace
}  // namespace mg::test
