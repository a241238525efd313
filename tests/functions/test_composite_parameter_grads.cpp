// Parameters that composite builders create themselves (multi-head
// attention's projections, the LSTM's weights) against numerical gradients:
// the harness checks the grads of a function's inputs, and a builder's
// tests check the grads of the inputs they are given, so without this a
// composite that wires a parameter's grad wrongly (a transposed projection,
// a gate's block of W skipped in backward) would pass. The check is generic
// over whatever parameters the builder puts in its ParameterScope, so it
// follows a builder whose parameters change.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "../support/function_tester.hpp"

namespace mg::test::composite_parameter_grads_tests {
namespace {

std::vector<float> uniform_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(rng);
  return v;
}

double weighted(const VariablePtr& y, const std::vector<float>& w) {
  const Doubles d = to_doubles(y);
  double s = 0;
  for (size_t i = 0; i < d.size(); ++i) s += d[i] * w[i];
  return s;
}

// For every parameter with need_grad in `params` (the builder's, after it
// built y in float): the grad backward gives for the seed w (fixed random
// weights on y) against central differences of sum(w * y), each element of
// each parameter moved by +-eps in its fp32 data and forward run again on
// the same graph. Each parameter's grad must also be nonzero somewhere (a
// parameter the output does not depend on would pass vacuously), except
// those in `zero` (a grad that is zero by the math), whose grad must be
// zero. Returns the names checked.
std::vector<std::string> check_parameter_grads(
    const VariablePtr& y, const ParameterScope& params,
    const std::set<std::string>& zero = {}, double eps = 1e-2,
    double atol = 2e-3, double rtol = 1e-2) {
  const ParameterList list = params.parameters();
  EXPECT_FALSE(list.empty()) << "the builder created no parameter";
  const std::vector<float> w = [&] {
    y->forward();
    return uniform_values(y->size(), 77);
  }();
  for (const auto& [name, v] : list) v->grad()->zero();
  auto seed = make_ndarray(y->shape());
  std::copy(w.begin(), w.end(), seed->cast<float>(true));
  y->forward();
  y->backward(seed);
  std::vector<std::string> checked;
  for (const auto& [name, v] : list) {
    SCOPED_TRACE("parameter " + name);
    const Doubles analytic = grad_doubles(v);
    Doubles numeric(analytic.size());
    float* p = v->data()->cast<float>();
    for (size_t j = 0; j < numeric.size(); ++j) {
      const float x = p[j];
      const float h =
          static_cast<float>(eps * std::max(1.0, std::fabs(double(x))));
      p[j] = x + h;
      const float up = p[j];
      y->forward();
      const double plus = weighted(y, w);
      p[j] = x - h;
      const float down = p[j];
      y->forward();
      const double minus = weighted(y, w);
      p[j] = x;
      numeric[j] = (plus - minus) / (static_cast<double>(up) - down);
    }
    expect_near(analytic, numeric, atol, rtol,
                "analytic against numerical grad of " + name);
    double largest = 0;
    for (double g : analytic) largest = std::max(largest, std::fabs(g));
    if (zero.count(name)) {
      EXPECT_LT(largest, 1e-6) << name << "'s grad should be zero";
    } else {
      EXPECT_GT(largest, 1e-3) << name << "'s grad is zero everywhere";
    }
    checked.push_back(name);
  }
  y->forward();
  return checked;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

TEST(CompositeParameterGrads, MultiHeadAttentionProjections) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const int64_t L = 3, S = causal ? 3 : 5, B = 2, E = 4, H = 2;
    ContextGuard guard(context("cpu", "float"));
    ParameterScope params;
    auto q = variable_from({L, B, E}, uniform_values(L * B * E, 1));
    auto k = variable_from({S, B, 3}, uniform_values(S * B * 3, 2));
    auto v = variable_from({S, B, 2}, uniform_values(S * B * 2, 3));
    auto y = PF::multi_head_attention(q, k, v, E, H, params["mha"], causal);
    // Biases start at zero and weights small: move them so that every
    // projection (and softmax) works away from its starting point.
    for (const auto& [name, p] : params.parameters()) {
      const auto vals =
          uniform_values(p->size(), 5 + static_cast<uint32_t>(name.size()));
      std::copy(vals.begin(), vals.end(), p->data()->cast<float>(true));
    }
    // The key bias adds q . b_k to every score of a query's row, which the
    // softmax takes away: its grad is zero (and must be).
    const auto checked =
        check_parameter_grads(y, params, {"mha/multi_head_attention/k_bias"});
    EXPECT_EQ(checked.size(), 8u) << joined(checked);  // 4 projections, W and b
    std::cout << "multi-head attention (" << (causal ? "causal" : "full")
              << "): numerical grads of " << joined(checked) << "\n";
  }
}

// Whatever PF::lstm creates in its scope (the fused LSTM's weight_l0 and
// bias), through every output: y, the last h and the last c.
TEST(CompositeParameterGrads, LstmWeights) {
  const int64_t T = 4, N = 2, I = 3, Hd = 3;
  ContextGuard guard(context("cpu", "float"));
  ParameterScope params;
  auto x = variable_from({T, N, I}, uniform_values(T * N * I, 11));
  auto h0 = variable_from({N, Hd}, uniform_values(N * Hd, 12));
  auto c0 = variable_from({N, Hd}, uniform_values(N * Hd, 13));
  auto [y, h, c] = PF::lstm(x, h0, c0, Hd, params["lstm"]);
  auto all = F::concatenate({F::reshape(y, {T * N * Hd}),
                             F::reshape(h, {N * Hd}), F::reshape(c, {N * Hd})},
                            0);
  for (const auto& [name, p] : params.parameters()) {
    const auto vals =
        uniform_values(p->size(), 21 + static_cast<uint32_t>(name.size()));
    std::copy(vals.begin(), vals.end(), p->data()->cast<float>(true));
  }
  const auto checked = check_parameter_grads(all, params);
  EXPECT_FALSE(checked.empty());
  std::cout << "lstm: numerical grads of " << joined(checked) << "\n";
}

// The check itself catches a wrong grad: a parameter whose effect on the
// output backward reaches only in part fails it, and only it.
TEST(CompositeParameterGrads, TheCheckCatchesAWrongParameterGrad) {
  ContextGuard guard(context("cpu", "float"));
  ParameterScope params;
  auto x = variable_from({2, 3}, uniform_values(6, 31));
  auto y = PF::affine(x, 2, params["fc"]);
  for (const auto& [name, p] : params.parameters()) {
    const auto vals = uniform_values(p->size(), 41);
    std::copy(vals.begin(), vals.end(), p->data()->cast<float>(true));
  }
  // A correct graph passes.
  EXPECT_EQ(check_parameter_grads(y, params).size(), 2u);
  // A grad that misses half of W's effect: the numerical grads disagree.
  const std::string failures = [&] {
    ::testing::TestPartResultArray results;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::
              INTERCEPT_ONLY_CURRENT_THREAD,
          &results);
      // A builder whose backward misses a path to W: y2 = y + x W', where
      // W' shares W's data but takes no grad.
      auto w = params.get("fc/affine/W");
      auto frozen = make_variable(w->shape(), false);
      auto y2 = F::add2(y, F::affine(x, frozen));
      // frozen shares W's data: moving W moves both terms, but backward
      // reaches W through one: its analytic grad is half the numerical one.
      frozen->set_data(w->data());
      check_parameter_grads(y2, params);
    }
    std::string s;
    for (int i = 0; i < results.size(); ++i)
      s += results.GetTestPartResult(i).message();
    return s;
  }();
  EXPECT_NE(failures.find("analytic against numerical grad of fc/affine/W"),
            std::string::npos)
      << failures;
  EXPECT_EQ(failures.find("numerical grad of fc/affine/b"), std::string::npos)
      << failures;
}

}  // namespace
}  // namespace mg::test::composite_parameter_grads_tests
