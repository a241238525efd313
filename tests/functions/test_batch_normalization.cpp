// BatchNormalization: training and inference through the shared checker,
// the running statistics (exact, fp32 under half), fp32 sums over a large
// half batch, the parametric layer and every bad input. SyncBatchNormalization:
// the same cases, bit for bit BatchNormalization on one rank, the batch of
// two ranks through a communicator that mirrors this one, and its errors
// (the MPI run is tests/mpi/test_sync_batch_normalization.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <mixgraph/functions/builder.hpp>
#include <mixgraph/utils/yaml/network.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::batch_normalization_tests {
namespace {

// x seen as (n0, c, n2); inputs x, beta, gamma, mean, variance.
struct Layout {
  int64_t n0, c, n2;
};

struct Stats {
  Doubles mean, var;  // biased batch variance
};

Stats batch_stats(const Doubles& x, Layout l) {
  Stats s{Doubles(l.c, 0.0), Doubles(l.c, 0.0)};
  const double m = static_cast<double>(l.n0 * l.n2);
  for (int64_t i = 0; i < l.n0; ++i) {
    for (int64_t c = 0; c < l.c; ++c) {
      for (int64_t j = 0; j < l.n2; ++j)
        s.mean[c] += x[(i * l.c + c) * l.n2 + j];
    }
  }
  for (auto& v : s.mean) v /= m;
  for (int64_t i = 0; i < l.n0; ++i) {
    for (int64_t c = 0; c < l.c; ++c) {
      for (int64_t j = 0; j < l.n2; ++j) {
        const double d = x[(i * l.c + c) * l.n2 + j] - s.mean[c];
        s.var[c] += d * d;
      }
    }
  }
  for (auto& v : s.var) v /= m;
  return s;
}

Doubles bn_ref(const std::vector<Doubles>& in, Layout l, bool batch_stat,
               double eps = 1e-5) {
  const Stats s = batch_stat ? batch_stats(in[0], l) : Stats{in[3], in[4]};
  Doubles y(in[0].size());
  for (int64_t i = 0; i < l.n0; ++i) {
    for (int64_t c = 0; c < l.c; ++c) {
      for (int64_t j = 0; j < l.n2; ++j) {
        const int64_t k = (i * l.c + c) * l.n2 + j;
        y[k] = (in[0][k] - s.mean[c]) / std::sqrt(s.var[c] + eps) * in[2][c] +
               in[1][c];
      }
    }
  }
  return y;
}

// Half and bfloat16 against float. Inputs, the output grads and the outputs
// are each rounded once to the reduced type (unit roundoff 2^-11 for half,
// 2^-9 for bfloat16) while every sum stays fp32, so the errors are a few
// units of roundoff: measured within 1e-3 (half) and 8e-3 (bfloat16) here;
// we allow twice that.
void reduced_tolerances(FunctionCheck& c) {
  c.half_atol = c.half_rtol = 2e-3;
  c.bf16_atol = c.bf16_rtol = 1.6e-2;
}

FunctionCheck bn_check(const Shape& xs, const Shape& ps, Layout l,
                       BatchNormalizationOptions opts) {
  FunctionCheck c;
  c.inputs = {{xs, -2.0f, 2.0f},
              {ps, -1.0f, 1.0f},
              {ps, 0.5f, 1.5f},
              {ps, -1.0f, 1.0f, false},
              {ps, 0.5f, 1.5f, false}};
  c.build = [opts](const std::vector<VariablePtr>& in) {
    return F::batch_normalization(in[0], in[1], in[2], in[3], in[4], opts);
  };
  c.reference = [l, opts](const std::vector<Doubles>& in) {
    return bn_ref(in, l, opts.batch_stat, opts.eps);
  };
  reduced_tolerances(c);
  return c;
}

BatchNormalizationOptions with_axes(std::vector<int> axes,
                                    bool batch_stat = true) {
  BatchNormalizationOptions o;
  o.axes = std::move(axes);
  o.batch_stat = batch_stat;
  return o;
}

const bool kBatchNormalizationTrainingNCHW =
    harness::add(decl::BatchNormalization,
                 {{"training n c h w", [] {
                     return bn_check({4, 3, 2, 2}, {1, 3, 1, 1}, {4, 3, 4}, {});
                   }}});

// Rows of 40 values (vectors and a tail, several rows to a piece) and of
// 1300 (a row cut into a piece of 1024 and one of 276).
const bool kBatchNormalizationTrainingLongRows = harness::add(
    decl::BatchNormalization,
    {{"training n c h w, rows of 40",
      [] {
        return bn_check({3, 4, 5, 8}, {1, 4, 1, 1}, {3, 4, 40}, {});
      }},
     {"training n c l, rows of 1300", [] {
        return bn_check({2, 3, 1300}, {1, 3, 1}, {2, 3, 1300}, {});
      }}});

const bool kBatchNormalizationTrainingNC =
    harness::add(decl::BatchNormalization,
                 {{"training n c", [] {
                     return bn_check({8, 5}, {1, 5}, {8, 5, 1}, {});
                   }}});

const bool kBatchNormalizationTrainingLastAxisByNegativeIndex = harness::add(
    decl::BatchNormalization,
    {{"training last axis by negative index", [] {
        return bn_check({3, 2, 4}, {1, 1, 4}, {6, 4, 1}, with_axes({-1}));
      }}});

const bool kBatchNormalizationTrainingTwoConsecutiveAxes = harness::add(
    decl::BatchNormalization, {{"training two consecutive axes", [] {
                                  return bn_check({3, 2, 3, 2}, {1, 2, 3, 1},
                                                  {3, 6, 2}, with_axes({1, 2}));
                                }}});

const bool kBatchNormalizationInferenceNCHW =
    harness::add(decl::BatchNormalization,
                 {{"inference n c h w", [] {
                     return bn_check({4, 3, 2, 2}, {1, 3, 1, 1}, {4, 3, 4},
                                     with_axes({1}, false));
                   }}});

const bool kBatchNormalizationInferenceNC = harness::add(
    decl::BatchNormalization,
    {{"inference n c", [] {
        return bn_check({8, 5}, {1, 5}, {8, 5, 1}, with_axes({1}, false));
      }}});

// Random values in [low, high), rounded to the given dtype so that float and
// reduced runs see the same input.
std::vector<float> random_values(int64_t n, float low, float high,
                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (auto& e : v) e = static_cast<float>(Half(dist(rng)));
  return v;
}

struct BnVars {
  VariablePtr x, beta, gamma, mean, var;
};

BnVars make_bn_vars(const Shape& xs, const Shape& ps, uint32_t seed) {
  const int64_t c = shape_size(ps);
  return {variable_from(xs, random_values(shape_size(xs), -2, 2, seed), true),
          variable_from(ps, random_values(c, -1, 1, seed + 1), true),
          variable_from(ps, random_values(c, 0.5f, 1.5f, seed + 2), true),
          variable_from(ps, random_values(c, -1, 1, seed + 3)),
          variable_from(ps, random_values(c, 0.5f, 1.5f, seed + 4))};
}

std::vector<float> floats(const VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

// running = decay running + (1 - decay) batch, the variance unbiased
// (n / (n - 1)) as in NNabla; two steps, against double.
TEST(BatchNormalization, RunningStatisticsUpdateInForwardOnly) {
  const Layout l{4, 3, 4};
  auto v = make_bn_vars({4, 3, 2, 2}, {1, 3, 1, 1}, 11);
  Doubles rm(3), rv(3);
  {
    auto m0 = floats(v.mean), v0 = floats(v.var);
    rm.assign(m0.begin(), m0.end());
    rv.assign(v0.begin(), v0.end());
  }
  BatchNormalizationOptions opts;
  opts.decay_rate = 0.8f;
  auto y = F::batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var, opts);
  const auto xv = floats(v.x);
  const Stats s = batch_stats(Doubles(xv.begin(), xv.end()), l);
  const double n = static_cast<double>(l.n0 * l.n2);
  for (int step = 0; step < 2; ++step) {
    y->forward();
    for (int c = 0; c < 3; ++c) {
      rm[c] = 0.8 * rm[c] + 0.2 * s.mean[c];
      rv[c] = 0.8 * rv[c] + 0.2 * s.var[c] * n / (n - 1);
    }
    expect_near(to_doubles(v.mean), rm, 1e-6, 1e-6, "running mean");
    expect_near(to_doubles(v.var), rv, 1e-6, 1e-6, "running variance");
  }
  // Backward leaves them alone.
  const auto m2 = floats(v.mean), v2 = floats(v.var);
  y->backward(1.0f);
  EXPECT_EQ(floats(v.mean), m2);
  EXPECT_EQ(floats(v.var), v2);
}

TEST(BatchNormalization, InferenceLeavesRunningStatisticsAlone) {
  auto v = make_bn_vars({4, 3}, {1, 3}, 5);
  const auto m0 = floats(v.mean), v0 = floats(v.var);
  auto y = F::batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var,
                                  with_axes({1}, false));
  y->forward();
  y->backward(1.0f);
  EXPECT_EQ(floats(v.mean), m0);
  EXPECT_EQ(floats(v.var), v0);
}

// Under half and bfloat16 the running statistics are read and written in
// fp32 and match the float run (same inputs, exact in half).
TEST(BatchNormalization, RunningStatisticsStayFloatUnderReducedTypes) {
  std::vector<float> mean_f, var_f;
  {
    auto v = make_bn_vars({8, 4, 3}, {1, 4, 1}, 21);
    F::batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var)->forward();
    mean_f = floats(v.mean);
    var_f = floats(v.var);
  }
  for (const char* type : {"half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto v = make_bn_vars({8, 4, 3}, {1, 4, 1}, 21);
    auto y = F::batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var);
    EXPECT_EQ(y->parent()->function().dtype(),
              context("cpu", type).type_config());
    y->forward();
    EXPECT_EQ(v.mean->data()->array().dtype(), Dtype::f32);
    EXPECT_EQ(v.var->data()->array().dtype(), Dtype::f32);
    EXPECT_EQ(v.mean->data()->array().num_copies(), 1u);
    if (std::string(type) == "half") {
      // x is exact in half, so only the order of fp32 sums may differ.
      expect_near(to_doubles(v.mean), Doubles(mean_f.begin(), mean_f.end()),
                  1e-6, 1e-5, "running mean against float");
      expect_near(to_doubles(v.var), Doubles(var_f.begin(), var_f.end()), 1e-6,
                  1e-5, "running variance against float");
    } else {
      // bfloat16 rounds x (8 bits of mantissa): 2^-9 relative per value.
      expect_near(to_doubles(v.mean), Doubles(mean_f.begin(), mean_f.end()),
                  2e-3, 1e-2, "running mean against float");
      expect_near(to_doubles(v.var), Doubles(var_f.begin(), var_f.end()), 2e-3,
                  1e-2, "running variance against float");
    }
  }
}

// 65536 values per channel around 1: a half accumulator stops growing at
// 2048 (adding 1 to 2048 rounds away), so the mean would come out ~0.03.
// The values are exact in half, so the only errors are fp32 sums and the
// final rounding of y.
TEST(BatchNormalization, LargeHalfBatchAccumulatesInFloat) {
  const int64_t n = 65536, c = 2;
  std::vector<float> xv(n * c);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> k(-25, 25);
  for (int64_t i = 0; i < n; ++i) {
    xv[i * c] = 1.0f + k(rng) / 256.0f;      // mean ~1, std ~0.06
    xv[i * c + 1] = 100.0f + k(rng) / 8.0f;  // |mean| >> std
  }
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({n, c}, xv, true);
  auto beta = variable_from({1, c}, {0, 0}, true);
  auto gamma = variable_from({1, c}, {1, 1}, true);
  auto mean = variable_from({1, c}, {0, 0});
  auto var = variable_from({1, c}, {0, 0});
  BatchNormalizationOptions opts;
  opts.decay_rate = 0.0f;  // the running stats become the batch stats
  auto y = F::batch_normalization(x, beta, gamma, mean, var, opts);
  y->forward();
  const std::vector<Doubles> in{Doubles(xv.begin(), xv.end()), {0, 0}, {1, 1}};
  const Stats s = batch_stats(in[0], {n, c, 1});
  const double unbias = n / (n - 1.0);
  expect_near(to_doubles(mean), s.mean, 0, 1e-5, "batch mean");
  expect_near(to_doubles(var), {s.var[0] * unbias, s.var[1] * unbias}, 0, 1e-4,
              "batch variance");
  // |y| < 2: half rounds it to within 2^-10.
  expect_near(to_doubles(y), bn_ref(in, {n, c, 1}, true), 2e-3, 0,
              "normalised output");
  // With dy = 1/4 (n itself would overflow half's 65504), dbeta = n / 4
  // exactly, dgamma = sum(xh) / 4 ~ 0 and dx ~ 0.
  y->backward(0.25f);
  expect_near(grad_doubles(beta), {n / 4.0, n / 4.0}, 0, 1e-4, "dbeta");
  expect_near(grad_doubles(gamma), {0, 0}, 0.5, 0, "dgamma");
  expect_near(grad_doubles(x), Doubles(n * c, 0.0), 1e-3, 0, "dx");
}

// The batch variance where the mean dwarfs the spread (1000 +- 1, float),
// with rows of 40 values (several to a piece), of 1300 (a row cut into
// pieces of 1024 and 276) and one value each, against double: within
// 1.5e-5 here (each row's sum and squared deviations from its own mean,
// joined per channel; the two passes before, 1e-6; the textbook one pass,
// E[x^2] - E[x]^2, loses every digit). It fails with either join dropped.
TEST(BatchNormalization, VarianceHoldsWhenTheMeanDwarfsTheSpread) {
  for (const int64_t len : {40, 1300, 1}) {
    SCOPED_TRACE("rows of " + std::to_string(len));
    const int64_t n = len == 1 ? 4096 : 4, c = 3;
    std::vector<float> xv = random_values(n * c * len, -1, 1, 21);
    for (int64_t i = 0; i < n * c * len; ++i) {
      xv[i] += 1000.0f + static_cast<float>(i / len % c);  // 1000, 1001, 1002
    }
    auto x = variable_from({n, c, len}, xv, true);
    auto beta = variable_from({1, c, 1}, {0, 0, 0}, true);
    auto gamma = variable_from({1, c, 1}, {1, 1, 1}, true);
    auto mean = variable_from({1, c, 1}, {0, 0, 0});
    auto var = variable_from({1, c, 1}, {0, 0, 0});
    BatchNormalizationOptions opts;
    opts.decay_rate = 0.0f;  // the running stats become the batch stats
    F::batch_normalization(x, beta, gamma, mean, var, opts)->forward();
    const Stats s = batch_stats(Doubles(xv.begin(), xv.end()), {n, c, len});
    const double unbias = n * len / (n * len - 1.0);
    Doubles want(c);
    for (int64_t k = 0; k < c; ++k) want[k] = s.var[k] * unbias;
    expect_near(to_doubles(mean), s.mean, 0, 1e-6, "batch mean");
    expect_near(to_doubles(var), want, 0, 1e-4, "batch variance");
  }
}

// ---- bad inputs ----

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

VariablePtr bn(const Shape& xs, const Shape& bs, const Shape& gs,
               const Shape& ms, const Shape& vs,
               const BatchNormalizationOptions& opts = {}) {
  return F::batch_normalization(make_variable(xs), make_variable(bs),
                                make_variable(gs), make_variable(ms),
                                make_variable(vs), opts);
}

// PF's no_bias and no_scale (NNabla's PF.batch_normalization's): the left-out
// parameter is not created, and the layer computes with 0 and 1 in its
// place; sync and fused batch normalization, which learn both, refuse them.
TEST(BatchNormalization, ParametricNoBiasAndNoScale) {
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.25f * static_cast<float>(i % 7);
  auto x = variable_from({2, 3, 4}, v);
  ParameterScope params;
  PF::BatchNormalizationParams p;
  p.no_bias = true;
  auto a = PF::batch_normalization(x, params["a"], /*batch_stat=*/true, p);
  p.no_bias = false;
  p.no_scale = true;
  auto b = PF::batch_normalization(x, params["b"], /*batch_stat=*/true, p);
  EXPECT_EQ(params.get("a/bn/beta"), nullptr);
  EXPECT_NE(params.get("a/bn/gamma"), nullptr);
  EXPECT_NE(params.get("b/bn/beta"), nullptr);
  EXPECT_EQ(params.get("b/bn/gamma"), nullptr);
  auto full = PF::batch_normalization(x, params["c"], /*batch_stat=*/true);
  for (const auto& y : {a, b, full}) y->forward();
  // beta 0 and gamma 1 are the full layer's initial values: the same y.
  EXPECT_EQ(to_doubles(a), to_doubles(full));
  EXPECT_EQ(to_doubles(b), to_doubles(full));
  BatchNormalizationOptions o;
  o.no_bias = true;
  expect_error(
      [&] {
        F::batch_normalization(
            x, params.get("c/bn/beta"), params.get("c/bn/gamma"),
            params.get("c/bn/mean"), params.get("c/bn/var"), o);
      },
      {"[batch_normalization] beta is given, but no_bias is true: pass a "
       "null beta (it is then 0) or set no_bias false"});
  p.no_bias = true;
  expect_error(
      [&] { PF::sync_batch_normalization(x, params["d"], nullptr, true, p); },
      {"[sync_batch_normalization] no_scale and no_bias are for "
       "batch_normalization only"});
}

TEST(BatchNormalization, ParameterShapeMismatch) {
  const Shape p{1, 3, 1, 1};
  EXPECT_EQ(error_of([&] {
              bn({2, 3, 4, 4}, {3}, p, p, p);
            }),
            "[batch_normalization] beta with shape (3,) must have shape "
            "(1, 3, 1, 1) (x's shape (2, 3, 4, 4) with 1 outside axes {1})");
  EXPECT_EQ(error_of([&] {
              bn({2, 3, 4, 4}, p, {1, 4, 1, 1}, p, p);
            }),
            "[batch_normalization] gamma with shape (1, 4, 1, 1) must have "
            "shape (1, 3, 1, 1) (x's shape (2, 3, 4, 4) with 1 outside axes "
            "{1})");
  EXPECT_EQ(error_of([&] {
              bn({2, 3, 4, 4}, p, p, {1, 3}, p);
            }),
            "[batch_normalization] mean with shape (1, 3) must have shape "
            "(1, 3, 1, 1) (x's shape (2, 3, 4, 4) with 1 outside axes {1})");
  EXPECT_EQ(error_of([&] {
              bn({2, 3, 4, 4}, p, p, p, {1, 1, 1, 1});
            }),
            "[batch_normalization] variance with shape (1, 1, 1, 1) must have "
            "shape (1, 3, 1, 1) (x's shape (2, 3, 4, 4) with 1 outside axes "
            "{1})");
}

TEST(BatchNormalization, BadAxes) {
  const Shape p{1, 3};
  EXPECT_EQ(error_of([&] {
              bn({2, 3}, p, p, p, p, with_axes({2}));
            }),
            "[batch_normalization] axis 2 in axes {2} is out of range for x "
            "with shape (2, 3)");
  EXPECT_EQ(error_of([&] {
              bn({2, 3}, p, p, p, p, with_axes({}));
            }),
            "[batch_normalization] axes must name at least one axis");
  const Shape q{1, 3, 1, 5};
  EXPECT_EQ(error_of([&] {
              bn({2, 3, 4, 5}, q, q, q, q, with_axes({1, 3}));
            }),
            "[batch_normalization] axes {1, 3} for x with shape (2, 3, 4, 5) "
            "must be distinct consecutive axes in increasing order");
  EXPECT_EQ(error_of([&] {
              bn({2, 3}, p, p, p, p, with_axes({1, 1}));
            }),
            "[batch_normalization] axes {1, 1} for x with shape (2, 3) must "
            "be distinct consecutive axes in increasing order");
}

TEST(BatchNormalization, BadOptions) {
  const Shape p{1, 3};
  BatchNormalizationOptions o;
  o.decay_rate = 1.5f;
  EXPECT_EQ(error_of([&] {
              bn({2, 3}, p, p, p, p, o);
            }),
            "[batch_normalization] decay_rate must be in [0, 1], got 1.500000");
  o = {};
  o.eps = -1.0f;
  EXPECT_EQ(error_of([&] {
              bn({2, 3}, p, p, p, p, o);
            }),
            "[batch_normalization] eps must be finite and non-negative, got "
            "-1.000000");
}

TEST(BatchNormalization, TrainingNeedsTwoValuesPerChannel) {
  const Shape p{1, 3};
  EXPECT_EQ(error_of([&] {
              bn({1, 3}, p, p, p, p);
            }),
            "[batch_normalization] x with shape (1, 3) and axes {1} has 1 "
            "value per channel; batch statistics (batch_stat = true) need at "
            "least 2");
  // Inference statistics need no batch: y = (x - mean) / sqrt(var + eps)
  // gamma + beta from the running ones.
  auto y = F::batch_normalization(
      variable_from({1, 3}, {1, 2, 3}), variable_from(p, {0.5f, -1, 2}),
      variable_from(p, {2, 2, 2}), variable_from(p, {1, 1, 1}),
      variable_from(p, {4, 4, 4}), with_axes({1}, false));
  y->forward();
  const double s = 1 / std::sqrt(4 + 1e-5);
  expect_near(to_doubles(y), {0.5, -1 + 2 * s, 2 + 4 * s}, 1e-6, 1e-6,
              "inference with one value per channel");
}

TEST(BatchNormalization, WrongNumberOfInputs) {
  EXPECT_EQ(error_of([] {
              apply_function1(decl::BatchNormalization,
                              BatchNormalizationOptions{},
                              {make_variable({2, 3}), make_variable({1, 3})});
            }),
            "[batch_normalization] takes 3 to 5 inputs, but got 2 with "
            "shapes (2, 3), (1, 3)");
  // 3 and 4 are NNabla's counts with no_bias and no_scale, not without.
  EXPECT_EQ(error_of([] {
              apply_function1(decl::BatchNormalization,
                              BatchNormalizationOptions{},
                              {make_variable({2, 3}), make_variable({1, 3}),
                               make_variable({1, 3})});
            }),
            "[batch_normalization] takes 5 inputs (x, beta, gamma, mean, "
            "variance) with no_bias false and no_scale false, but got 3 with "
            "shapes (2, 3), (1, 3), (1, 3)");
}

// ---- the parametric layer ----

TEST(ParametricBatchNormalization, CreatesNNablaParametersOnce) {
  ParameterScope params;
  auto x = make_variable({4, 3, 2, 2});
  auto y1 = PF::batch_normalization(x, params["bn1"]);
  auto y2 = PF::batch_normalization(x, params["bn1"]);
  EXPECT_EQ(y1->shape(), x->shape());
  auto list = params.parameters(/*grad_only=*/false);
  ASSERT_EQ(list.size(), 4u);
  const char* names[] = {"bn1/bn/beta", "bn1/bn/gamma", "bn1/bn/mean",
                         "bn1/bn/var"};
  const float values[] = {0, 1, 0, 1};
  const bool grads[] = {true, true, false, false};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(list[i].first, names[i]);
    EXPECT_EQ(list[i].second->shape(), (Shape{1, 3, 1, 1}));
    EXPECT_EQ(list[i].second->need_grad(), grads[i]);
    EXPECT_TRUE(list[i].second->persistent());
    EXPECT_EQ(floats(list[i].second), std::vector<float>(3, values[i]));
  }
  // The function uses exactly those variables, in NNabla's input order.
  const auto& inputs = y2->parent()->inputs();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(inputs[i + 1], list[i].second);
}

TEST(ParametricBatchNormalization, OptionsReachTheFunction) {
  ParameterScope params;
  PF::BatchNormalizationParams p;
  p.axes = {2};
  p.decay_rate = 0.5f;
  p.eps = 1e-3f;
  p.fix_parameters = true;
  auto y = PF::batch_normalization(make_variable({2, 3, 4}), params, false, p);
  auto& fn = dynamic_cast<BatchNormalization&>(y->parent()->function());
  EXPECT_EQ(fn.options().axes, std::vector<int>{2});
  EXPECT_EQ(fn.options().decay_rate, 0.5f);
  EXPECT_EQ(fn.options().eps, 1e-3f);
  EXPECT_FALSE(fn.options().batch_stat);
  EXPECT_EQ(params.get("bn/gamma")->shape(), (Shape{1, 1, 4}));
  EXPECT_FALSE(params.get("bn/beta")->need_grad());
  EXPECT_FALSE(params.get("bn/gamma")->need_grad());
}

TEST(ParametricBatchNormalization, BadAxesNameTheLayer) {
  ParameterScope params;
  PF::BatchNormalizationParams p;
  p.axes = {3};
  EXPECT_EQ(error_of([&] {
              PF::batch_normalization(make_variable({2, 3}), params, true, p);
            }),
            "[batch_normalization] axis 3 in axes {3} is out of range for x "
            "with shape (2, 3)");
  EXPECT_EQ(params.size(), 0u);
}

// 8192 values in [0, 2) per channel (sums near 8192, where an fp16
// accumulator's spacing is 8): the batch statistics against double.
const bool kBatchNormalizationLong = harness::add(
    decl::BatchNormalization, {{"8192 values per channel",
                                [] {
                                  FunctionCheck c =
                                      bn_check({32, 2, 16, 16}, {1, 2, 1, 1},
                                               {32, 2, 256}, {});
                                  c.inputs[0].low = 0.0f;
                                  c.check_grad = false;
                                  return c;
                                },
                                /*long_sum=*/true}});

// ---- SyncBatchNormalization ----

SyncBatchNormalizationOptions sync_options(const BatchNormalizationOptions& o) {
  SyncBatchNormalizationOptions s;
  s.axes = o.axes;
  s.decay_rate = o.decay_rate;
  s.eps = o.eps;
  s.batch_stat = o.batch_stat;
  return s;
}

// With the default (1-rank) communicator it is BatchNormalization: the same
// reference and tolerances.
FunctionCheck sync_bn_check(const Shape& xs, const Shape& ps, Layout l,
                            BatchNormalizationOptions opts) {
  FunctionCheck c = bn_check(xs, ps, l, opts);
  c.build = [opts](const std::vector<VariablePtr>& in) {
    return F::sync_batch_normalization(in[0], in[1], in[2], in[3], in[4],
                                       nullptr, sync_options(opts));
  };
  return c;
}

const bool kSyncBatchNormalization = harness::add(
    decl::SyncBatchNormalization,
    {{"training n c h w",
      [] {
        return sync_bn_check({4, 3, 2, 2}, {1, 3, 1, 1}, {4, 3, 4}, {});
      }},
     {"training n c",
      [] {
        return sync_bn_check({8, 5}, {1, 5}, {8, 5, 1}, {});
      }},
     {"training two consecutive axes",
      [] {
        return sync_bn_check({3, 2, 3, 2}, {1, 2, 3, 1}, {3, 6, 2},
                             with_axes({1, 2}));
      }},
     {"inference n c h w", [] {
        return sync_bn_check({4, 3, 2, 2}, {1, 3, 1, 1}, {4, 3, 4},
                             with_axes({1}, false));
      }}});

// A communicator of `ranks` ranks whose other ranks hold this one's batch:
// a sum is this rank's value times `ranks`. Counts the reduces.
class MirrorCommunicator : public Communicator {
 public:
  explicit MirrorCommunicator(int ranks, std::string device = "cpu")
      : ranks_(ranks), device_(std::move(device)) {}
  std::string name() const override { return "mirror"; }
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  int local_rank() const override { return 0; }
  std::string device() const override { return device_; }
  void all_reduce(float* data, int64_t n, ReduceOp op) override {
    EXPECT_EQ(op, ReduceOp::sum);
    ++reduces;
    for (int64_t i = 0; i < n; ++i) data[i] *= static_cast<float>(ranks_);
  }
  void start_all_reduce(float* data, int64_t n, ReduceOp op) override {
    all_reduce(data, n, op);
  }
  bool progress() override { return true; }
  void wait_all() override {}
  void broadcast(void*, int64_t, int) override {}
  void all_gather(const float*, int64_t, float*) override {}
  void barrier() override {}
  int reduces = 0;

 private:
  int ranks_;
  std::string device_;
};

// Restores the default communicator at the end of a test.
struct DefaultCommunicatorGuard {
  ~DefaultCommunicatorGuard() { set_default_communicator(nullptr); }
};

// dy for y: fixed values in [-1, 1), exact in half.
NdArrayPtr dy_for(const VariablePtr& y, uint32_t seed) {
  auto dy = make_ndarray(y->shape());
  const auto v = random_values(y->size(), -1, 1, seed);
  std::copy(v.begin(), v.end(), dy->cast<float>(true));
  return dy;
}

// What one layer gives: y, the grads of x, beta and gamma, the running
// statistics after two forwards.
struct BnRun {
  Doubles y, dx, dbeta, dgamma, mean, var;
};

BnRun run_bn(const std::function<VariablePtr(const BnVars&)>& build,
             const Shape& xs, const Shape& ps) {
  auto v = make_bn_vars(xs, ps, 31);
  auto y = build(v);
  y->forward();
  y->forward();
  y->backward(dy_for(y, 41));
  return {to_doubles(y),         grad_doubles(v.x),  grad_doubles(v.beta),
          grad_doubles(v.gamma), to_doubles(v.mean), to_doubles(v.var)};
}

void expect_same(const BnRun& a, const BnRun& b) {
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dbeta, b.dbeta);
  EXPECT_EQ(a.dgamma, b.dgamma);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.var, b.var);
}

// On one rank (the default communicator, or a local one given) every
// output, grad and running statistic is BatchNormalization's, bit for bit,
// in training and inference, in every type_config.
TEST(SyncBatchNormalization, EqualsBatchNormalizationOnOneRank) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    ContextGuard guard(context("cpu", type));
    for (bool batch_stat : {true, false}) {
      for (const CommunicatorPtr& comm :
           {CommunicatorPtr(), local_communicator()}) {
        SCOPED_TRACE(std::string(type) +
                     (batch_stat ? " training" : " inference") +
                     (comm ? " local" : " default"));
        const auto opts = with_axes({1}, batch_stat);
        const BnRun bn = run_bn(
            [&](const BnVars& v) {
              return F::batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var,
                                            opts);
            },
            {6, 3, 5, 4}, {1, 3, 1, 1});
        const BnRun sync = run_bn(
            [&](const BnVars& v) {
              auto y =
                  F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean,
                                              v.var, comm, sync_options(opts));
              EXPECT_EQ(y->parent()->function().dtype(),
                        context("cpu", type).type_config());
              return y;
            },
            {6, 3, 5, 4}, {1, 3, 1, 1});
        expect_same(sync, bn);
      }
    }
  }
}

// Two ranks holding the same batch are one batch of twice the size: y and
// dx are BatchNormalization's on the doubled batch (each half), the running
// variance is unbiased with the doubled count, and dbeta, dgamma are this
// rank's half of the doubled batch's (not reduced).
TEST(SyncBatchNormalization, TwoRanksAreTheirBatchesTogether) {
  const Shape xs{4, 3, 2, 2}, ps{1, 3, 1, 1};
  auto mirror = std::make_shared<MirrorCommunicator>(2);
  auto v = make_bn_vars(xs, ps, 51);
  auto y =
      F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var, mirror);
  y->forward();
  auto dy = dy_for(y, 61);
  y->backward(dy);
  EXPECT_EQ(mirror->reduces, 3);  // mean and count, variance, dx's sums

  // The doubled batch in one BatchNormalization.
  const auto x = floats(v.x);
  const int64_t n = x.size();
  std::vector<float> x2(x),
      dy2(dy->get<const float>(), dy->get<const float>() + n);
  x2.insert(x2.end(), x.begin(), x.end());
  dy2.insert(dy2.end(), dy2.begin(), dy2.end());
  auto w = make_bn_vars(xs, ps, 51);
  auto xx = variable_from({8, 3, 2, 2}, x2, true);
  auto yy = F::batch_normalization(xx, w.beta, w.gamma, w.mean, w.var);
  yy->forward();
  auto seed = make_ndarray(yy->shape());
  std::copy(dy2.begin(), dy2.end(), seed->cast<float>(true));
  yy->backward(seed);

  const Doubles y2 = to_doubles(yy), dx2 = grad_doubles(xx);
  expect_near(to_doubles(y), Doubles(y2.begin(), y2.begin() + n), 1e-6, 1e-5,
              "y");
  expect_near(grad_doubles(v.x), Doubles(dx2.begin(), dx2.begin() + n), 1e-6,
              1e-5, "dx");
  expect_near(to_doubles(v.mean), to_doubles(w.mean), 1e-7, 1e-6,
              "running mean");
  expect_near(to_doubles(v.var), to_doubles(w.var), 1e-7, 1e-6,
              "running variance");
  Doubles half_beta = grad_doubles(w.beta), half_gamma = grad_doubles(w.gamma);
  for (auto& g : half_beta) g /= 2;
  for (auto& g : half_gamma) g /= 2;
  expect_near(grad_doubles(v.beta), half_beta, 1e-6, 1e-5, "dbeta");
  expect_near(grad_doubles(v.gamma), half_gamma, 1e-6, 1e-5, "dgamma");
}

// Inference normalises with the running statistics: nothing to reduce.
TEST(SyncBatchNormalization, InferenceDoesNotCommunicate) {
  auto mirror = std::make_shared<MirrorCommunicator>(2);
  auto v = make_bn_vars({4, 3}, {1, 3}, 5);
  SyncBatchNormalizationOptions o;
  o.batch_stat = false;
  auto y = F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var,
                                       mirror, o);
  y->forward();
  y->backward(1.0f);
  EXPECT_EQ(mirror->reduces, 0);
}

// Without a communicator (and in a network read from YAML, which cannot
// hold one) forward uses the default communicator of the time.
TEST(SyncBatchNormalization, UsesTheDefaultCommunicatorWithoutOne) {
  DefaultCommunicatorGuard restore;
  auto mirror = std::make_shared<MirrorCommunicator>(2);
  auto v = make_bn_vars({4, 3}, {1, 3}, 7);
  v.x->set_name("x");
  auto y = F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var);
  auto& fn = dynamic_cast<SyncBatchNormalization&>(y->parent()->function());
  EXPECT_EQ(fn.communicator(), local_communicator());
  set_default_communicator(mirror);
  EXPECT_EQ(fn.communicator(), mirror);
  y->forward();
  EXPECT_EQ(mirror->reduces, 2);

  // The arguments written out: the options, never the communicator.
  ParameterScope params;
  params.set("bn/beta", v.beta);
  params.set("bn/gamma", v.gamma);
  params.set("bn/mean", v.mean);
  params.set("bn/var", v.var);
  const std::string yaml = network_to_yaml("net", {{"y", y}}, params);
  EXPECT_NE(yaml.find("group: world"), std::string::npos) << yaml;
  const Network net = network_from_yaml(yaml, params);
  std::copy_n(floats(v.x).begin(), v.x->size(),
              net.input("x")->data()->cast<float>(true));
  net.output("y")->forward();
  EXPECT_EQ(mirror->reduces, 4);

  // A communicator given to the builder is the one used.
  auto other = std::make_shared<MirrorCommunicator>(2);
  auto y2 =
      F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var, other);
  y2->forward();
  EXPECT_EQ(other->reduces, 2);
  EXPECT_EQ(mirror->reduces, 4);
}

// ---- SyncBatchNormalization's bad inputs ----

VariablePtr sync_bn(const Shape& xs, const Shape& ps,
                    const SyncBatchNormalizationOptions& opts = {},
                    CommunicatorPtr comm = nullptr) {
  return F::sync_batch_normalization(make_variable(xs), make_variable(ps),
                                     make_variable(ps), make_variable(ps),
                                     make_variable(ps), std::move(comm), opts);
}

TEST(SyncBatchNormalization, OnlyTheWorldGroup) {
  SyncBatchNormalizationOptions o;
  o.group = "node";
  EXPECT_EQ(error_of([&] {
              sync_bn({2, 3}, {1, 3}, o);
            }),
            "[sync_batch_normalization] group 'node' is not supported: the "
            "only group is 'world' (every rank of the communicator)");
}

TEST(SyncBatchNormalization, BadAxes) {
  EXPECT_EQ(error_of([&] {
              sync_bn({2, 3}, {1, 3}, sync_options(with_axes({2})));
            }),
            "[sync_batch_normalization] axis 2 in axes {2} is out of range "
            "for x with shape (2, 3)");
  EXPECT_EQ(error_of([&] {
              sync_bn({2, 3}, {1, 3}, sync_options(with_axes({})));
            }),
            "[sync_batch_normalization] axes must name at least one axis");
  EXPECT_EQ(
      error_of([&] {
        sync_bn({2, 3, 4, 5}, {1, 3, 1, 5}, sync_options(with_axes({1, 3})));
      }),
      "[sync_batch_normalization] axes {1, 3} for x with shape (2, 3, 4, 5) "
      "must be distinct consecutive axes in increasing order");
  EXPECT_EQ(error_of([&] {
              sync_bn({2, 3, 4}, {1, 3, 1}, sync_options(with_axes({2})));
            }),
            "[sync_batch_normalization] beta with shape (1, 3, 1) must have "
            "shape (1, 1, 4) (x's shape (2, 3, 4) with 1 outside axes {2})");
}

// One value per channel: an error on one rank, enough on two.
TEST(SyncBatchNormalization, TrainingNeedsTwoValuesPerChannel) {
  EXPECT_EQ(error_of([&] {
              sync_bn({1, 3}, {1, 3});
            }),
            "[sync_batch_normalization] x with shape (1, 3) and axes {1} has "
            "1 value per channel; batch statistics (batch_stat = true) need "
            "at least 2");
  EXPECT_EQ(
      error_of([&] {
        sync_bn({0, 3}, {1, 3}, {}, std::make_shared<MirrorCommunicator>(2));
      }),
      "[sync_batch_normalization] x with shape (0, 3) and axes {1} has "
      "0 value per channel on this rank; batch statistics (batch_stat = "
      "true) over 2 ranks need at least 1 on each");
  // Two ranks holding the same value: the batch variance is 0, so y is
  // beta exactly, and the running mean moves toward x.
  const Shape p{1, 3};
  auto mean = variable_from(p, {0, 0, 0});
  auto y = F::sync_batch_normalization(
      variable_from({1, 3}, {1, 2, 3}), variable_from(p, {0.5f, -1, 2}),
      variable_from(p, {3, 3, 3}), mean, variable_from(p, {1, 1, 1}),
      std::make_shared<MirrorCommunicator>(2));
  y->forward();
  expect_near(to_doubles(y), {0.5, -1, 2}, 1e-6, 0,
              "one value per channel on each of two ranks");
  expect_near(to_doubles(mean), {0.1, 0.2, 0.3}, 1e-6, 1e-6,
              "running mean with decay 0.9");
}

// The CPU kernel reduces host buffers: a device communicator is refused.
TEST(SyncBatchNormalization, DeviceCommunicatorIsRefused) {
  auto nccl_like = std::make_shared<MirrorCommunicator>(2, "cuda:0");
  auto v = make_bn_vars({4, 3}, {1, 3}, 3);
  auto y = F::sync_batch_normalization(v.x, v.beta, v.gamma, v.mean, v.var,
                                       nccl_like);
  EXPECT_EQ(error_of([&] { y->forward(); }),
            "[sync_batch_normalization] the mirror communicator reduces "
            "buffers on cuda:0, but the statistics are on the host: give an "
            "MPI (or local) communicator");
}

TEST(ParametricSyncBatchNormalization, BatchNormalizationsParameters) {
  ParameterScope params;
  auto comm = std::make_shared<MirrorCommunicator>(2);
  PF::BatchNormalizationParams p;
  p.decay_rate = 0.5f;
  auto x = make_variable({4, 3, 2, 2});
  auto y = PF::sync_batch_normalization(x, params["bn"], comm, true, p);
  auto list = params.parameters(/*grad_only=*/false);
  ASSERT_EQ(list.size(), 4u);
  const char* names[] = {"bn/bn/beta", "bn/bn/gamma", "bn/bn/mean",
                         "bn/bn/var"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(list[i].first, names[i]);
    EXPECT_EQ(y->parent()->inputs()[i + 1], list[i].second);
  }
  auto& fn = dynamic_cast<SyncBatchNormalization&>(y->parent()->function());
  EXPECT_EQ(fn.communicator(), comm);
  EXPECT_EQ(fn.options().group, "world");
  EXPECT_EQ(fn.options().decay_rate, 0.5f);
  EXPECT_TRUE(fn.options().batch_stat);
  // The same scope feeds a plain layer: the parameters are shared.
  PF::batch_normalization(x, params["bn"]);
  EXPECT_EQ(params.parameters(false).size(), 4u);
  EXPECT_EQ(
      error_of([&] { PF::sync_batch_normalization(nullptr, params["bn"]); }),
      "[sync_batch_normalization] x is a null variable");
}

// NNabla's no_scale and no_bias: the inputs left out are skipped, so with
// both the inputs are (x, mean, variance); gamma is 1 and beta 0.
TEST(BatchNormalization, NNablasNoScaleAndNoBiasTakeTheShorterInputLists) {
  auto x = [] { return variable_from({2, 2}, {1, 2, 3, 6}, true); };
  auto mean = [] { return variable_from({1, 2}, {1, 2}); };
  auto var = [] { return variable_from({1, 2}, {4, 16}); };
  auto args = [](bool batch_stat, bool no_scale, bool no_bias) {
    return FunctionArgs{{"axes", std::vector<int64_t>{1}},
                        {"decay_rate", 0.9},
                        {"eps", 0.0},
                        {"batch_stat", batch_stat},
                        {"no_scale", no_scale},
                        {"no_bias", no_bias}};
  };
  // Inference: (x - mean) / sqrt(var) * gamma + beta.
  auto xi = x();
  auto both = apply_from_args("BatchNormalization", args(false, true, true),
                              {xi, mean(), var()});
  expect_near(to_doubles(both[0]), {0, 0, 1, 1}, 1e-6, 0, "both");
  both[0]->backward();
  expect_near(grad_doubles(xi), {0.5, 0.25, 0.5, 0.25}, 1e-6, 0, "dx");
  auto gamma = variable_from({1, 2}, {2, 4}, true);
  auto no_bias = apply_from_args("BatchNormalization", args(false, false, true),
                                 {x(), gamma, mean(), var()});
  expect_near(to_doubles(no_bias[0]), {0, 0, 2, 4}, 1e-6, 0, "no_bias");
  no_bias[0]->backward();
  expect_near(grad_doubles(gamma), {1, 1}, 1e-6, 0, "dgamma");
  auto beta = variable_from({1, 2}, {10, 20});
  auto no_scale =
      apply_from_args("BatchNormalization", args(false, true, false),
                      {x(), beta, mean(), var()});
  expect_near(to_doubles(no_scale[0]), {10, 20, 11, 21}, 1e-6, 0, "no_scale");
  // Training: the batch's statistics (mean (2, 4), variance (1, 4)), and
  // the running ones updated (unbiased variance (2, 8)).
  auto rm = mean(), rv = var();
  auto train = apply_from_args("BatchNormalization", args(true, true, true),
                               {x(), rm, rv});
  expect_near(to_doubles(train[0]), {-1, -1, 1, 1}, 1e-6, 0, "training");
  expect_near(to_doubles(rm), {1.1, 2.2}, 1e-6, 0, "running mean");
  expect_near(to_doubles(rv), {3.8, 15.2}, 1e-5, 0, "running variance");
  // The count follows the flags.
  expect_error(
      [&] {
        apply_from_args("BatchNormalization", args(false, true, true),
                        {x(), beta, gamma, mean(), var()});
      },
      {"takes 3 inputs (x, mean, variance) with no_bias true and no_scale "
       "true, but got 5"},
      "[batch_normalization] ");
}

}  // namespace
}  // namespace mg::test::batch_normalization_tests
