// Adamax, AMSGRAD and AdaBelief against their closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mixgraph/solvers/adam_variants.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

using Ref = std::function<void(std::vector<double>&, const std::vector<double>&,
                               int, DoubleState&)>;

// m = b1 m + (1 - b1) g; u = max(b2 u, |g|);
// w -= alpha / (1 - b1^t) m / (u + eps).
Ref adamax_ref(double alpha, double b1, double b2, double eps) {
  return [=](std::vector<double>& w, const std::vector<double>& g, int t,
             DoubleState& s) {
    const double alpha_t = alpha / (1 - std::pow(b1, t));
    for (size_t i = 0; i < w.size(); ++i) {
      s["m"][i] = b1 * s["m"][i] + (1 - b1) * g[i];
      s["u"][i] = std::max(b2 * s["u"][i], std::abs(g[i]));
      w[i] -= alpha_t * s["m"][i] / (s["u"][i] + eps);
    }
  };
}

TEST(Adamax, ClosedForm) {
  SolverCheck c{[] { return solvers::Adamax(0.01f, 0.9f, 0.999f, 1e-8f); },
                adamax_ref(0.01, 0.9, 0.999, 1e-8)};
  check_solver(c);
  c.weight_decay = 0.05f;
  check_solver(c);
  // A fast-forgetting u, so that the max picks |g| and b2 u in turn.
  check_solver({[] { return solvers::Adamax(0.01f, 0.5f, 0.3f, 1e-8f); },
                adamax_ref(0.01, 0.5, 0.3, 1e-8)});
}

// m, v as Adam; v_hat = max(v_hat, v); w -= alpha_t m / (sqrt(v_hat) + eps),
// alpha_t = alpha (sqrt(1 - b2^t) / (1 - b1^t) with bias correction).
Ref amsgrad_ref(double alpha, double b1, double b2, double eps, bool bc) {
  return [=](std::vector<double>& w, const std::vector<double>& g, int t,
             DoubleState& s) {
    const double alpha_t =
        bc ? alpha * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t))
           : alpha;
    for (size_t i = 0; i < w.size(); ++i) {
      s["m"][i] = b1 * s["m"][i] + (1 - b1) * g[i];
      s["v"][i] = b2 * s["v"][i] + (1 - b2) * g[i] * g[i];
      s["v_hat"][i] = std::max(s["v_hat"][i], s["v"][i]);
      w[i] -= alpha_t * s["m"][i] / (std::sqrt(s["v_hat"][i]) + eps);
    }
  };
}

TEST(AMSGRAD, ClosedForm) {
  for (bool bc : {false, true}) {
    SolverCheck c{
        [bc] { return solvers::AMSGRAD(0.01f, 0.9f, 0.999f, 1e-8f, bc); },
        amsgrad_ref(0.01, 0.9, 0.999, 1e-8, bc)};
    check_solver(c);
    c.weight_decay = 0.05f;
    check_solver(c);
    // beta2 small: v falls below its running max, which then holds.
    check_solver(
        {[bc] { return solvers::AMSGrad(0.01f, 0.5f, 0.3f, 1e-8f, bc); },
         amsgrad_ref(0.01, 0.5, 0.3, 1e-8, bc)});
  }
}

struct BeliefParams {
  double alpha = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.0;
  bool amsgrad = false, weight_decouple = false, fixed_decay = false,
       rectify = false;
};

std::shared_ptr<Solver> make_belief(const BeliefParams& p) {
  return solvers::AdaBelief(
      static_cast<float>(p.alpha), static_cast<float>(p.beta1),
      static_cast<float>(p.beta2), static_cast<float>(p.eps),
      static_cast<float>(p.wd), p.amsgrad, p.weight_decouple, p.fixed_decay,
      p.rectify);
}

// NNabla's AdaBelief: m = b1 m + (1 - b1) g; s = b2 s + (1 - b2) (g - m)^2;
// w -= decay w (decoupled); s += eps, kept in the state (with amsgrad
// s_max = max(s_max, s) + eps instead); then with rectify while rho_t <= 4
// w -= alpha m, else w -= alpha r_t / (1 - b1^t) m / (sqrt(s) / c2 + eps),
// c2 = sqrt(1 - b2^t).
Ref belief_ref(const BeliefParams& p) {
  return [p](std::vector<double>& w, const std::vector<double>& g, int t,
             DoubleState& st) {
    const double b1t = std::pow(p.beta1, t), b2t = std::pow(p.beta2, t);
    double alpha_t = p.alpha / (1 - b1t);
    bool sgd = false;
    if (p.rectify) {
      const double rho_inf = 2 / (1 - p.beta2) - 1;
      const double rho_t = rho_inf - 2 * t * b2t / (1 - b2t);
      if (rho_t > 4) {
        alpha_t *= std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                             ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      } else {
        alpha_t = p.alpha;
        sgd = true;
      }
    }
    const double decay =
        p.weight_decouple ? (p.fixed_decay ? p.wd : p.wd * p.alpha) : 0.0;
    for (size_t i = 0; i < w.size(); ++i) {
      double& m = st["mean"][i];
      double& s = st["var"][i];
      m = p.beta1 * m + (1 - p.beta1) * g[i];
      s = p.beta2 * s + (1 - p.beta2) * (g[i] - m) * (g[i] - m);
      w[i] -= w[i] * decay;
      double s_t;
      if (p.amsgrad) {
        double& s_max = st["s_max"][i];
        s_max = std::max(s_max, s) + p.eps;
        s_t = s_max;
      } else {
        s += p.eps;
        s_t = s;
      }
      w[i] -= sgd ? alpha_t * m
                  : alpha_t * m / (std::sqrt(s_t) / std::sqrt(1 - b2t) + p.eps);
    }
  };
}

void check_belief(const BeliefParams& p, float coupled_decay = 0.0f) {
  SolverCheck c{[p] { return make_belief(p); }, belief_ref(p)};
  if (p.weight_decouple) {
    c.weight_decay = static_cast<float>(p.wd);  // the no-op check
    c.coupled_decay = false;
  } else {
    c.weight_decay = coupled_decay;
  }
  check_solver(c);
}

TEST(AdaBelief, ClosedForm) {
  BeliefParams p;
  check_belief(p);
  check_belief(p, 0.05f);  // coupled decay through weight_decay()
  p.beta2 = 0.9;
  check_belief(p);
  p.eps = 0.01;  // large enough that the eps kept in s shows
  check_belief(p);
}

TEST(AdaBelief, AmsgradKeepsTheMaxOfS) {
  BeliefParams p;
  p.amsgrad = true;
  p.beta1 = 0.5;
  p.beta2 = 0.3;
  check_belief(p);
}

TEST(AdaBelief, DecoupledWeightDecay) {
  BeliefParams p;
  p.weight_decouple = true;
  p.wd = 0.1;
  check_belief(p);  // decay wd alpha
  p.fixed_decay = true;
  check_belief(p);  // decay wd
  auto s = make_belief(p);
  expect_invalid([&] { s->weight_decay(0.2f); },
                 "[AdaBelief::weight_decay] AdaBelief decays the weights");
}

TEST(AdaBelief, RectifyWarmsUpWithSgd) {
  // With beta2 = 0.999, rho_t <= 4 for t <= 4: four SGD steps, then two
  // rectified ones.
  BeliefParams p;
  p.rectify = true;
  check_belief(p);
  p.amsgrad = true;
  check_belief(p);
}

TEST(AdamVariants, DefaultsAreNNablas) {
  check_solver(
      {[] { return solvers::Adamax(); }, adamax_ref(2e-3, 0.9, 0.999, 1e-8)});
  check_solver({[] { return solvers::AMSGRAD(); },
                amsgrad_ref(1e-3, 0.9, 0.999, 1e-8, false)});
  BeliefParams p;
  p.alpha = 1e-3;
  check_solver({[] { return solvers::AdaBelief(); }, belief_ref(p)});
  EXPECT_EQ(solvers::AMSGRAD()->name(), "AMSGRAD");
}

TEST(AdamVariants, BadHyperParameters) {
  expect_invalid([] { solvers::Adamax(-2e-3f); },
                 "[Adamax] alpha must be >= 0");
  expect_invalid([] { solvers::Adamax(2e-3f, 0.9f, -0.999f); },
                 "[Adamax] beta2 must be >= 0");
  expect_invalid([] { solvers::AMSGRAD(-1e-3f); },
                 "[AMSGRAD] alpha must be >= 0");
  expect_invalid([] { solvers::AMSGRAD(1e-3f, -0.9f); },
                 "[AMSGRAD] beta1 must be >= 0");
  expect_invalid([] { solvers::AdaBelief(-1e-3f); },
                 "[AdaBelief] alpha must be >= 0");
  expect_invalid([] { solvers::AdaBelief(1e-3f, 0.9f, 0.999f, -1e-8f); },
                 "[AdaBelief] eps must be >= 0");
  expect_invalid([] { solvers::AdaBelief(1e-3f, 0.9f, 0.999f, 1e-8f, -0.1f); },
                 "[AdaBelief] wd must be >= 0");
}

TEST(AdamVariants, StatesRoundTrip) {
  check_states([] { return solvers::Adamax(0.01f); }, {"m", "u"});
  check_states(
      [] { return solvers::AMSGRAD(0.01f, 0.9f, 0.999f, 1e-8f, true); },
      {"m", "v", "v_hat"});
  check_states([] { return solvers::AdaBelief(0.01f); }, {"mean", "var"});
  check_states(
      [] { return solvers::AdaBelief(0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, true); },
      {"mean", "var", "s_max"});
}

}  // namespace
}  // namespace mg::test
