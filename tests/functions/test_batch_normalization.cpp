// BatchNormalization: training and inference through the shared checker,
// the running statistics (exact, fp32 under half), fp32 sums over a large
// half batch, the parametric layer and every bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <mixgraph/functions/builder.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test {
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
  EXPECT_NO_THROW(bn({1, 3}, p, p, p, p, with_axes({1}, false)));
}

TEST(BatchNormalization, WrongNumberOfInputs) {
  EXPECT_EQ(error_of([] {
              apply_function1(decl::BatchNormalization,
                              BatchNormalizationOptions{},
                              {make_variable({2, 3}), make_variable({1, 3})});
            }),
            "[batch_normalization] takes 5 inputs, but got 2 with shapes "
            "(2, 3), (1, 3)");
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
  const char* names[] = {"bn1/beta", "bn1/gamma", "bn1/mean", "bn1/var"};
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
  EXPECT_EQ(params.get("gamma")->shape(), (Shape{1, 1, 4}));
  EXPECT_FALSE(params.get("beta")->need_grad());
  EXPECT_FALSE(params.get("gamma")->need_grad());
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

}  // namespace
}  // namespace mg::test
