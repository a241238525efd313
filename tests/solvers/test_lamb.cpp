// Lamb against its closed form: Adam's direction plus the fused decay,
// scaled by the clipped trust ratio.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <mixgraph/solvers/lamb.hpp>

#include "../support/solver_tester.hpp"
#include "solver_checks.hpp"

namespace mg::test {
namespace {

struct LambParams {
  double eta = 0.05, beta1 = 0.9, beta2 = 0.999, gamma_l = 0.0, gamma_u = 10.0,
         eps = 1e-6;
  bool bias_correction = false;
};

std::shared_ptr<Solver> make_lamb(const LambParams& p) {
  return solvers::Lamb(static_cast<float>(p.eta), static_cast<float>(p.beta1),
                       static_cast<float>(p.beta2),
                       static_cast<float>(p.gamma_l),
                       static_cast<float>(p.gamma_u), static_cast<float>(p.eps),
                       p.bias_correction);
}

// m, v as Adam; r = (m / c1) / (sqrt(v / c2) + eps) + wd w;
// w -= eta clip(||w||, gamma_l, gamma_u) / ||r|| r (ratio 1 if ||r|| <= eps).
void lamb_step(const LambParams& p, std::vector<double>& w,
               const std::vector<double>& g, int t, DoubleState& s, double wd) {
  const double c1 = p.bias_correction ? 1 - std::pow(p.beta1, t) : 1.0;
  const double c2 = p.bias_correction ? 1 - std::pow(p.beta2, t) : 1.0;
  std::vector<double> r(w.size());
  double wn = 0, rn = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    s["mean"][i] = p.beta1 * s["mean"][i] + (1 - p.beta1) * g[i];
    s["var"][i] = p.beta2 * s["var"][i] + (1 - p.beta2) * g[i] * g[i];
    r[i] =
        (s["mean"][i] / c1) / (std::sqrt(s["var"][i] / c2) + p.eps) + wd * w[i];
    wn += w[i] * w[i];
    rn += r[i] * r[i];
  }
  wn = std::clamp(std::sqrt(wn), p.gamma_l, p.gamma_u);
  rn = std::sqrt(rn);
  const double ratio = rn > p.eps ? wn / rn : 1.0;
  for (size_t i = 0; i < w.size(); ++i) w[i] -= p.eta * ratio * r[i];
}

void check_lamb(const LambParams& p, double wd) {
  SolverCheck c{
      [p] { return make_lamb(p); },
      [p, wd](std::vector<double>& w, const std::vector<double>& g, int t,
              DoubleState& s) { lamb_step(p, w, g, t, s, wd); }};
  c.weight_decay = static_cast<float>(wd);
  c.coupled_decay = false;  // fused: the reference applies wd itself
  check_solver(c);
}

TEST(Lamb, ClosedForm) {
  LambParams p;
  check_lamb(p, 0.0);
  p.bias_correction = true;
  check_lamb(p, 0.0);
}

TEST(Lamb, ClosedFormWithFusedWeightDecay) {
  LambParams p;
  check_lamb(p, 0.05);
  p.bias_correction = true;
  p.beta2 = 0.9;
  check_lamb(p, 0.05);
}

TEST(Lamb, TrustRatioClipsTheWeightNorm) {
  // The harness's weights have norm about 1.9: clipped from above, then
  // from below.
  LambParams p;
  p.gamma_u = 0.5;
  check_lamb(p, 0.01);
  p.gamma_l = 3.0;
  p.gamma_u = 10.0;
  check_lamb(p, 0.01);
}

TEST(Lamb, FusedDecayHoldsForOneUpdate) {
  LambParams p;
  check_fused_decay_holds_one_step(
      [p] { return make_lamb(p); },
      [p](std::vector<double>& w, const std::vector<double>& g, int t,
          DoubleState& s, double wd) { lamb_step(p, w, g, t, s, wd); },
      0.5);
}

TEST(Lamb, LargeParameterTakesTheNormsOverAllOfIt) {
  // Large enough for the parallel loops: the norms must still cover the
  // whole parameter.
  const int64_t n = 1 << 17;
  std::vector<float> w0(n), g0(n);
  for (int64_t i = 0; i < n; ++i) {
    w0[i] = static_cast<float>(std::sin(0.01 * i));
    g0[i] = static_cast<float>(std::cos(0.007 * i) * (i % 2 ? 1 : -0.5));
  }
  auto w = variable_from({n}, w0, true);
  std::copy(g0.begin(), g0.end(), w->grad()->cast<float>(true));
  LambParams p;
  p.gamma_u = 1e6;
  auto s = make_lamb(p);
  s->set_parameters({{"w", w}});
  s->weight_decay(0.01f);
  s->update();
  std::vector<double> wr(w0.begin(), w0.end()), gr(g0.begin(), g0.end());
  DoubleState st{{"mean", std::vector<double>(n)},
                 {"var", std::vector<double>(n)}};
  lamb_step(p, wr, gr, 1, st, 0.01);
  expect_near(to_doubles(w), wr, 1e-6, 1e-5, "weights after one step");
}

TEST(Lamb, DefaultsAreNNablas) {
  // Lamb(eta=1e-3, beta1=0.9, beta2=0.999, gamma_l=0, gamma_u=10, eps=1e-6,
  // bias_correction=false)
  LambParams p;
  p.eta = 1e-3;
  SolverCheck c{[] { return solvers::Lamb(); },
                [p](std::vector<double>& w, const std::vector<double>& g, int t,
                    DoubleState& s) { lamb_step(p, w, g, t, s, 0.0); }};
  check_solver(c);
}

TEST(Lamb, BadHyperParameters) {
  expect_invalid([] { solvers::Lamb(-1e-3f); }, "[Lamb] eta must be >= 0");
  expect_invalid([] { solvers::Lamb(1e-3f, -0.9f); },
                 "[Lamb] beta1 must be >= 0");
  expect_invalid([] { solvers::Lamb(1e-3f, 0.9f, 0.999f, -1.0f); },
                 "[Lamb] gamma_l must be >= 0");
  expect_invalid([] { solvers::Lamb(1e-3f, 0.9f, 0.999f, 2.0f, 1.0f); },
                 "[Lamb] gamma_u must be >= 2, got 1");
  expect_invalid([] { solvers::Lamb(1e-3f, 0.9f, 0.999f, 0.0f, 10.0f, -1.0f); },
                 "[Lamb] eps must be >= 0");
}

TEST(Lamb, StatesRoundTrip) {
  check_states(
      [] {
        return solvers::Lamb(0.05f, 0.9f, 0.999f, 0.0f, 10.0f, 1e-6f, true);
      },
      {"mean", "var"});
}

}  // namespace
}  // namespace mg::test
