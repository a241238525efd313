// AdaBound and AMSBound against their closed forms, with the bounds both
// slack and active.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mixgraph/solvers/adabound.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

struct BoundParams {
  double alpha = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, final_lr = 0.1,
         gamma = 1e-3;
  bool bias_correction = true;  // AdaBound always corrects
  bool ams = false;
  double lr = -1;  // the learning rate set after construction, when >= 0
};

std::shared_ptr<Solver> make_bound(const BoundParams& p) {
  const auto f = [](double x) { return static_cast<float>(x); };
  std::shared_ptr<Solver> s;
  if (p.ams) {
    s = solvers::AMSBound(f(p.alpha), f(p.beta1), f(p.beta2), f(p.eps),
                          f(p.final_lr), f(p.gamma), p.bias_correction);
  } else {
    s = solvers::AdaBound(f(p.alpha), f(p.beta1), f(p.beta2), f(p.eps),
                          f(p.final_lr), f(p.gamma));
  }
  if (p.lr >= 0) s->set_learning_rate(f(p.lr));
  return s;
}

// m, v as Adam (AMSBound: v_hat = max(v_hat, v) in place of v);
// eta = clip(alpha_t / (sqrt(v) + eps), fl (1 - 1 / (gamma t + 1)),
//            fl (1 + 1 / (gamma t))), fl = final_lr alpha / initial alpha;
// w -= eta m.
void bound_step(const BoundParams& p, std::vector<double>& w,
                const std::vector<double>& g, int t, DoubleState& s) {
  const double alpha = p.lr >= 0 ? p.lr : p.alpha;
  const double alpha_t = p.bias_correction
                             ? alpha * std::sqrt(1 - std::pow(p.beta2, t)) /
                                   (1 - std::pow(p.beta1, t))
                             : alpha;
  const double fl = p.final_lr * alpha / p.alpha;
  const double lower = fl * (1 - 1 / (p.gamma * t + 1));
  const double upper = fl * (1 + 1 / (p.gamma * t));
  const char* mn = p.ams ? "m" : "mean";
  const char* vn = p.ams ? "v" : "var";
  for (size_t i = 0; i < w.size(); ++i) {
    double& m = s[mn][i];
    double& v = s[vn][i];
    m = p.beta1 * m + (1 - p.beta1) * g[i];
    v = p.beta2 * v + (1 - p.beta2) * g[i] * g[i];
    double vv = v;
    if (p.ams) {
      s["v_hat"][i] = std::max(s["v_hat"][i], v);
      vv = s["v_hat"][i];
    }
    const double eta =
        std::min(upper, std::max(alpha_t / (std::sqrt(vv) + p.eps), lower));
    w[i] -= eta * m;
  }
}

void check_bound(const BoundParams& p, float coupled_decay = 0.0f) {
  SolverCheck c{[p] { return make_bound(p); },
                [p](std::vector<double>& w, const std::vector<double>& g, int t,
                    DoubleState& s) { bound_step(p, w, g, t, s); }};
  c.weight_decay = coupled_decay;
  check_solver(c);
}

TEST(AdaBound, ClosedForm) {
  BoundParams p;  // gamma = 1e-3: the bounds are slack for small t
  check_bound(p);
  check_bound(p, 0.05f);
}

TEST(AdaBound, ActiveBounds) {
  // gamma = 0.5: [0.033, 0.3] at t = 1 around steps near 0.1 / |g|, so some
  // elements are clipped from below, some from above, some not.
  BoundParams p;
  p.gamma = 0.5;
  check_bound(p);
  check_bound(p, 0.05f);
}

TEST(AdaBound, FinalLrFollowsTheSchedule) {
  BoundParams p;
  p.gamma = 0.5;
  p.lr = 0.004;  // final_lr becomes 0.1 * 0.4
  check_bound(p);
}

TEST(AMSBound, ClosedForm) {
  for (bool bc : {false, true}) {
    BoundParams p;
    p.ams = true;
    p.bias_correction = bc;
    check_bound(p);
    check_bound(p, 0.05f);
    p.gamma = 0.5;  // bounds active
    p.beta2 = 0.3;  // v drops below its running max
    check_bound(p);
    p.lr = 0.004;
    check_bound(p);
  }
}

TEST(AdaBoundAMSBound, DefaultsAreNNablas) {
  // alpha=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, final_lr=0.1, gamma=1e-3,
  // and for AMSBound bias_correction=false.
  BoundParams p;
  p.alpha = 1e-3;
  check_solver({[] { return solvers::AdaBound(); },
                [p](std::vector<double>& w, const std::vector<double>& g, int t,
                    DoubleState& s) { bound_step(p, w, g, t, s); }});
  p.ams = true;
  p.bias_correction = false;
  check_solver({[] { return solvers::AMSBound(); },
                [p](std::vector<double>& w, const std::vector<double>& g, int t,
                    DoubleState& s) { bound_step(p, w, g, t, s); }});
}

TEST(AdaBoundAMSBound, BadHyperParameters) {
  expect_invalid([] { solvers::AdaBound(-1e-3f); },
                 "[AdaBound] alpha must be >= 0");
  expect_invalid([] { solvers::AdaBound(1e-3f, 0.9f, 0.999f, 1e-8f, -0.1f); },
                 "[AdaBound] final_lr must be >= 0");
  expect_invalid(
      [] { solvers::AdaBound(1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.0f); },
      "[AdaBound] gamma must be > 0");
  expect_invalid([] { solvers::AMSBound(-1e-3f); },
                 "[AMSBound] alpha must be >= 0");
  expect_invalid([] { solvers::AMSBound(1e-3f, -0.9f); },
                 "[AMSBound] beta1 must be >= 0");
}

TEST(AdaBoundAMSBound, StatesRoundTrip) {
  check_states([] { return solvers::AdaBound(0.01f); }, {"mean", "var"});
  check_states([] { return solvers::AMSBound(0.01f); }, {"m", "v", "v_hat"});
}

}  // namespace
}  // namespace mg::test
