// NormNormalization, WeightNormalization and SpectralNorm: the checker
// against double references, hand-computed values, u's update, the
// parametric forms, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::norm_normalization_tests {
namespace {

// x / (sum over the reduced axes of |x|^p + eps)^(1/p); group(flat index)
// names each element's norm.
Doubles norm_normalization_ref(const Doubles& x, double p,
                               const std::function<int64_t(int64_t)>& group,
                               double eps = 1e-12) {
  std::map<int64_t, double> s;
  for (size_t i = 0; i < x.size(); ++i) {
    s[group(i)] += std::pow(std::fabs(x[i]), p);
  }
  Doubles y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = x[i] / std::pow(s[group(i)] + eps, 1.0 / p);
  }
  return y;
}

// A long sum's tolerances against double: the input's rounding and the
// output's, each 2^-11 (half) or 2^-8 (bfloat16) relative; no grad (4096
// inputs).
void long_sum_tolerances(FunctionCheck& c) {
  c.half_atol = c.bf16_atol = 0.0;
  c.half_rtol = 2e-3;
  c.bf16_rtol = 1e-2;
  c.check_grad = false;
}

harness::Case norm_case(const std::string& label, const Shape& xs, float p,
                        std::vector<int> axes,
                        std::function<int64_t(int64_t)> group) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              NormNormalizationOptions o;
              o.p = p;
              o.axes = axes;
              return F::norm_normalization(in[0], o);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return norm_normalization_ref(in[0], p, group);
            };
            return c;
          }};
}

// Sums of squares near 1200: an fp16 accumulator's spacing there is 1, far
// more than the inputs' and output's roundings.
harness::Case norm_long_sum() {
  return {"2048-term sums",
          [] {
            FunctionCheck c;
            c.inputs = {{{2, 2048}, 0.5f, 1.0f}};
            c.build = [](const std::vector<VariablePtr>& in) {
              NormNormalizationOptions o;
              o.axes = {1};
              return F::norm_normalization(in[0], o);
            };
            c.reference = [](const std::vector<Doubles>& in) {
              return norm_normalization_ref(in[0], 2.0,
                                            [](int64_t i) { return i / 2048; });
            };
            long_sum_tolerances(c);
            return c;
          },
          /*long_sum=*/true};
}

const bool kNormNormalization =
    harness::add(decl::NormNormalization,
                 {norm_case("(3, 4, 5) p 2 over every axis", {3, 4, 5}, 2.0f,
                            {}, [](int64_t) { return 0; }),
                  norm_case("(3, 4, 5) p 3 over axis 1", {3, 4, 5}, 3.0f, {1},
                            [](int64_t i) { return (i / 20) * 5 + i % 5; }),
                  norm_case("(4, 6) p 1.5 over axis -1", {4, 6}, 1.5f, {-1},
                            [](int64_t i) { return i / 6; }),
                  norm_long_sum()});

// w as (outer, C, inner) with C along dim: g[c] w / sqrt(sum w^2 + eps).
Doubles weight_normalization_ref(const Doubles& w, const Doubles& g,
                                 int64_t outer, int64_t C, int64_t inner,
                                 double eps = 1e-12) {
  Doubles s(C, 0.0), y(w.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const double v = w[(o * C + c) * inner + i];
        s[c] += v * v;
      }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (o * C + c) * inner + i;
        y[k] = g[c] * w[k] / std::sqrt(s[c] + eps);
      }
  return y;
}

harness::Case weight_norm_case(const std::string& label, const Shape& ws,
                               int dim) {
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= ws[a];
  for (size_t a = dim + 1; a < ws.size(); ++a) inner *= ws[a];
  const int64_t C = ws[dim];
  harness::Case k{label, [=] {
                    FunctionCheck c;
                    c.inputs = {{ws}, {{C}, 0.5f, 1.5f}};
                    c.build = [=](const std::vector<VariablePtr>& in) {
                      WeightNormalizationOptions o;
                      o.dim = dim;
                      return F::weight_normalization(in[0], in[1], o);
                    };
                    c.reference = [=](const std::vector<Doubles>& in) {
                      return weight_normalization_ref(in[0], in[1], outer, C,
                                                      inner);
                    };
                    return c;
                  }};
  k.no_batch_change = "w is a weight: no batch axis";
  return k;
}

// Sums of squares over rows of 2048, as NormNormalization's.
harness::Case weight_long_sum() {
  harness::Case k{"2048-term sums",
                  [] {
                    FunctionCheck c;
                    c.inputs = {{{4, 2048}, 0.5f, 1.0f}, {{4}, 0.5f, 1.5f}};
                    c.build = [](const std::vector<VariablePtr>& in) {
                      return F::weight_normalization(in[0], in[1]);
                    };
                    c.reference = [](const std::vector<Doubles>& in) {
                      return weight_normalization_ref(in[0], in[1], 1, 4, 2048);
                    };
                    long_sum_tolerances(c);
                    return c;
                  },
                  /*long_sum=*/true};
  k.no_batch_change = "w is a weight: no batch axis";
  return k;
}

const bool kWeightNormalization = harness::add(
    decl::WeightNormalization,
    {weight_norm_case("convolution weight (4, 3, 2, 2) dim 0", {4, 3, 2, 2}, 0),
     weight_norm_case("affine weight (5, 3) dim 1", {5, 3}, 1),
     weight_long_sum()});

// W as the (R, K) matrix of w with rows along dim; itr power iterations in
// double from u; W / sigma.
Doubles spectral_norm_ref(const Doubles& w, const Doubles& u0, int64_t outer,
                          int64_t R, int64_t inner, int itr,
                          double eps = 1e-12) {
  const int64_t K = outer * inner;
  auto at = [&](int64_t r, int64_t k) {
    return ((k / inner) * R + r) * inner + k % inner;
  };
  auto normalize = [&](Doubles& a) {
    double s = 0;
    for (double v : a) s += v * v;
    for (double& v : a) v /= std::sqrt(s + eps);
  };
  Doubles u = u0, v(K);
  for (int it = 0; it < itr; ++it) {
    for (int64_t k = 0; k < K; ++k) {
      v[k] = 0;
      for (int64_t r = 0; r < R; ++r) v[k] += w[at(r, k)] * u[r];
    }
    normalize(v);
    for (int64_t r = 0; r < R; ++r) {
      u[r] = 0;
      for (int64_t k = 0; k < K; ++k) u[r] += w[at(r, k)] * v[k];
    }
    normalize(u);
  }
  double sigma = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < K; ++k) sigma += u[r] * w[at(r, k)] * v[k];
  Doubles y(w.size());
  for (size_t j = 0; j < w.size(); ++j) y[j] = w[j] / sigma;
  return y;
}

harness::Case spectral_case(const std::string& label, const Shape& ws,
                            int dim) {
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= ws[a];
  for (size_t a = dim + 1; a < ws.size(); ++a) inner *= ws[a];
  const int64_t R = ws[dim];
  std::vector<float> u(R);
  for (int64_t r = 0; r < R; ++r) u[r] = 1.0f - 0.3f * r;
  harness::Case k{label, [=] {
                    FunctionCheck c;
                    // u fixed (test): enough iterations for u and v to
                    // converge, so that the grad with u and v held constant
                    // (NNabla's) is the derivative of sigma(W) that finite
                    // differences see.
                    c.inputs = {{ws}, InputSpec::fixed({R}, u)};
                    c.build = [=](const std::vector<VariablePtr>& in) {
                      SpectralNormOptions o;
                      o.dim = dim;
                      o.itr = 30;
                      o.test = true;
                      return F::spectral_norm(in[0], in[1], o).front();
                    };
                    c.reference = [=](const std::vector<Doubles>& in) {
                      return spectral_norm_ref(in[0], in[1], outer, R, inner,
                                               30);
                    };
                    c.half_atol = c.half_rtol = 5e-3;
                    return c;
                  }};
  k.no_batch_change = "w is a weight: no batch axis";
  return k;
}

// Power iterations over rows of 2048: the same tolerances.
harness::Case spectral_long_sum() {
  harness::Case k{"2048-term sums",
                  [] {
                    FunctionCheck c;
                    c.inputs = {{{2, 2048}, 0.5f, 1.0f},
                                InputSpec::fixed({2}, {1.0f, -0.5f})};
                    c.build = [](const std::vector<VariablePtr>& in) {
                      SpectralNormOptions o;
                      o.itr = 3;
                      o.test = true;
                      return F::spectral_norm(in[0], in[1], o).front();
                    };
                    c.reference = [](const std::vector<Doubles>& in) {
                      return spectral_norm_ref(in[0], in[1], 1, 2, 2048, 3);
                    };
                    long_sum_tolerances(c);
                    return c;
                  },
                  /*long_sum=*/true};
  k.no_batch_change = "w is a weight: no batch axis";
  return k;
}

const bool kSpectralNorm = harness::add(
    decl::SpectralNorm, {spectral_case("(4, 6) dim 0", {4, 6}, 0),
                         spectral_case("(3, 4, 2) dim 1", {3, 4, 2}, 1),
                         spectral_case("(2, 3, 3) dim 2 (last)", {2, 3, 3}, 2),
                         spectral_long_sum()});

TEST(NormNormalization, DividesByTheNorm) {
  auto x = variable_from({2, 2}, {3, 4, -6, 8});
  NormNormalizationOptions o;
  o.axes = {1};
  auto y = F::norm_normalization(x, o);
  y->forward();
  expect_near(to_doubles(y), {0.6, 0.8, -0.6, 0.8}, 1e-7, 1e-6, "p 2");
  o.p = 1.0f;
  auto y1 = F::norm_normalization(x, o);
  y1->forward();
  expect_near(to_doubles(y1), {3 / 7.0, 4 / 7.0, -6 / 14.0, 8 / 14.0}, 1e-7,
              1e-6, "p 1");
  // eps keeps an all-zero slice at 0 (NNabla's CPU code gives 0 / 0).
  auto z = F::norm_normalization(variable_from({2}, {0, 0}));
  z->forward();
  EXPECT_EQ(to_doubles(z), (Doubles{0, 0}));
}

TEST(NormNormalization, Errors) {
  NormNormalizationOptions o;
  o.p = 0.5f;
  expect_error(
      [&] {
        F::norm_normalization(make_variable({2, 3}), o);
      },
      {"[norm_normalization] p 0.5 must be at least 1"});
  o.p = 2.0f;
  o.axes = {0, 0};
  expect_error(
      [&] {
        F::norm_normalization(make_variable({2, 3}), o);
      },
      {"[norm_normalization] axes (0, 0) names axis 0 twice for x with shape "
       "(2, 3)"});
  o.axes = {-3};
  expect_error(
      [&] {
        F::norm_normalization(make_variable({2, 3}), o);
      },
      {"[norm_normalization] axes (-3,) has axis -3, out of range for x with "
       "shape (2, 3)"});
}

TEST(WeightNormalization, ScalesEachRowToG) {
  // Rows (3, 4) and (0, 2) have norms 5 and 2; g = (10, -1).
  auto w = variable_from({2, 2}, {3, 4, 0, 2}, true);
  auto g = variable_from({2}, {10, -1}, true);
  auto y = F::weight_normalization(w, g);
  auto loss = F::sum(y);
  loss->forward();
  expect_near(to_doubles(y), {6, 8, 0, -1}, 1e-6, 1e-6, "w_wn");
  w->grad()->zero();
  g->grad()->zero();
  loss->backward(1.0f);
  // dg = sum(w) / n; dw = g / n (1 - w sum(w) / n^2).
  expect_near(grad_doubles(g), {7 / 5.0, 1}, 1e-6, 1e-6, "dg");
  expect_near(grad_doubles(w),
              {2 * (1 - 3 * 7 / 25.0), 2 * (1 - 4 * 7 / 25.0), -0.5, 0}, 1e-6,
              1e-6, "dw");
}

TEST(WeightNormalization, TheLayerStartsAtW) {
  // g starts at w's norms, so w_wn = w (up to eps); in half the grad of the
  // fp32 g is fp32.
  ContextGuard guard(context("cpu", "half"));
  ParameterScope scope;
  auto w = scope.get_or_create("W", {3, 4}, normal_initializer(0.0f, 0.5f));
  auto y = PF::weight_normalization(w, scope);
  F::sum(y)->forward();
  auto g = scope["wn"].get("g");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->shape(), (Shape{3}));
  expect_near(to_doubles(y), to_doubles(w), 2e-3, 2e-3, "w_wn");
  auto loss = F::sum(y);
  loss->forward();
  g->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(g->grad()->array().dtype(), Dtype::f32);
}

TEST(WeightNormalization, Errors) {
  expect_error(
      [] {
        F::weight_normalization(make_variable({4, 3}), make_variable({3}));
      },
      {"[weight_normalization] g with shape (3,) must be 1-D with "
       "w.shape[dim] = 4 values"});
  expect_error(
      [] {
        WeightNormalizationOptions o;
        o.dim = 2;
        F::weight_normalization(make_variable({4, 3}), make_variable({4}), o);
      },
      {"[weight_normalization] dim 2 must be in [0, 2)"});
  expect_error(
      [] {
        WeightNormalizationOptions o;
        o.eps = 0.0f;
        F::weight_normalization(make_variable({4, 3}), make_variable({4}), o);
      },
      {"[weight_normalization] eps 0 must be positive"});
}

TEST(SpectralNorm, ADiagonalMatrixAndUsUpdate) {
  // W = diag(3, 1) (2 x 2): sigma 3; from u = (1, 1): v = (3, 1) / sqrt(10),
  // u = (9, 1) / sqrt(82).
  auto w = variable_from({2, 2}, {3, 0, 0, 1});
  auto u = variable_from({2}, {1, 1});
  SpectralNormOptions o;
  o.output_u = true;
  auto ys = F::spectral_norm(w, u, o);
  ASSERT_EQ(ys.size(), 2u);
  ys[0]->forward();  // runs the function once: both outputs
  const double n = std::sqrt(82.0);
  expect_near(to_doubles(u), {9 / n, 1 / n}, 1e-6, 1e-6, "u updated");
  EXPECT_EQ(to_doubles(ys[1]), (Doubles{1, 1}));  // u before the update
  // sigma = u^T W v with W v = (9, 1) / sqrt(10): 82 / sqrt(820).
  const double sigma = 82 / std::sqrt(820.0);
  expect_near(to_doubles(ys[0]), {3 / sigma, 0, 0, 1 / sigma}, 1e-6, 1e-6,
              "w_sn");
  // test: u stays.
  auto u2 = variable_from({2}, {1, 1});
  o.test = true;
  o.output_u = false;
  F::spectral_norm(w, u2, o).front()->forward();
  EXPECT_EQ(to_doubles(u2), (Doubles{1, 1}));
}

TEST(SpectralNorm, TheLayerKeepsUInFp32UnderHalf) {
  ContextGuard guard(context("cpu", "half"));
  ParameterScope scope;
  auto w = scope.get_or_create("W", {4, 3}, normal_initializer(0.0f, 1.0f));
  auto y = PF::spectral_norm(w, scope, 0, 20);
  y->forward();
  auto u = scope["spectral-norm"].get("u");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->need_grad());
  EXPECT_EQ(u->data()->array().dtype(), Dtype::f32);
  double s = 0;
  for (double v : to_doubles(u)) s += v * v;
  EXPECT_NEAR(s, 1.0, 1e-6);  // normalised in fp32
}

TEST(SpectralNorm, Errors) {
  expect_error(
      [] {
        F::spectral_norm(make_variable({4, 3}), make_variable({3}));
      },
      {"[spectral_norm] u with shape (3,) must be 1-D with w.shape[dim] = 4"});
  expect_error(
      [] {
        SpectralNormOptions o;
        o.itr = 0;
        F::spectral_norm(make_variable({4, 3}), make_variable({4}), o);
      },
      {"[spectral_norm] itr 0 must be at least 1"});
  expect_error(
      [] {
        SpectralNormOptions o;
        o.dim = -1;
        F::spectral_norm(make_variable({4, 3}), make_variable({4}), o);
      },
      {"[spectral_norm] dim -1 must be in [0, 2)"});
}

}  // namespace
}  // namespace mg::test::norm_normalization_tests
