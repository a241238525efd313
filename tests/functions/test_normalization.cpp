// LayerNormalization, GroupNormalization, InstanceNormalization,
// TensorNormalization and WeightStandardization.
#include <gtest/gtest.h>

#include <cmath>
#include <mixgraph/functions/builder.hpp>
#include <string>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::normalization_tests {
namespace {

// The reference in double: group(idx) names each element's statistics
// group; beta and gamma (of `ps`, each axis 1 or x's) broadcast to x.
using GroupFn = std::function<int64_t(const std::vector<int64_t>&)>;

Doubles norm_ref(const Shape& xs, const Doubles& x, const GroupFn& group,
                 const Shape& ps, const Doubles* beta, const Doubles* gamma,
                 double eps = 1e-5) {
  const int64_t n = shape_size(xs);
  const int nd = static_cast<int>(xs.size());
  std::vector<int64_t> g(n), p(n);
  std::vector<int64_t> idx(nd, 0);
  int64_t groups = 0;
  for (int64_t i = 0; i < n; ++i) {
    g[i] = group(idx);
    groups = std::max(groups, g[i] + 1);
    int64_t q = 0;
    for (int d = 0; d < nd; ++d) q = q * ps[d] + (ps[d] == 1 ? 0 : idx[d]);
    p[i] = q;
    for (int d = nd - 1; d >= 0 && ++idx[d] == xs[d]; --d) idx[d] = 0;
  }
  Doubles sum(groups, 0), sq(groups, 0), cnt(groups, 0);
  for (int64_t i = 0; i < n; ++i) sum[g[i]] += x[i], cnt[g[i]] += 1;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - sum[g[i]] / cnt[g[i]];
    sq[g[i]] += d * d;
  }
  Doubles y(n);
  for (int64_t i = 0; i < n; ++i) {
    const double mean = sum[g[i]] / cnt[g[i]], var = sq[g[i]] / cnt[g[i]];
    y[i] = (x[i] - mean) / std::sqrt(var + eps);
    if (gamma) y[i] *= (*gamma)[p[i]];
    if (beta) y[i] += (*beta)[p[i]];
  }
  return y;
}

const bool kTensorNormalization = harness::add(
    decl::TensorNormalization,
    {{"axes 1: per channel over N, H, W",
      [] {
        FunctionCheck c;
        const Shape xs{3, 4, 2, 3}, ps{1, 4, 1, 1};
        c.inputs = {{xs}, {ps}, {ps, 0.5f, 1.5f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::tensor_normalization(in[0], in[1], in[2], {1});
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return norm_ref(
              xs, in[0], [](const auto& i) { return i[1]; }, ps, &in[1],
              &in[2]);
        };
        return c;
      }},
     {"axes 0, 2 without beta", [] {
        FunctionCheck c;
        const Shape xs{2, 5, 3}, ps{2, 1, 3};
        c.inputs = {{xs}, {ps, 0.5f, 1.5f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::tensor_normalization(in[0], nullptr, in[1], {0, -1});
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return norm_ref(
              xs, in[0], [](const auto& i) { return i[0] * 3 + i[2]; }, ps,
              nullptr, &in[1]);
        };
        return c;
      }}});

const bool kWeightStandardization =
    harness::add(decl::WeightStandardization,
                 {{"convolution weight, channel axis 0",
                   [] {
                     FunctionCheck c;
                     const Shape ws{4, 3, 3, 3};
                     c.inputs = {{ws}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::weight_standardization(in[0]);
                     };
                     c.reference = [=](const std::vector<Doubles>& in) {
                       return norm_ref(
                           ws, in[0], [](const auto& i) { return i[0]; }, ws,
                           nullptr, nullptr);
                     };
                     return c;
                   },
                   false,
                   true,
                   {},
                   "w is a parameter: no batch axis"},
                  {"affine weight, channel axis 1",
                   [] {
                     FunctionCheck c;
                     const Shape ws{6, 5};
                     c.inputs = {{ws}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::weight_standardization(in[0], 1);
                     };
                     c.reference = [=](const std::vector<Doubles>& in) {
                       return norm_ref(
                           ws, in[0], [](const auto& i) { return i[1]; }, ws,
                           nullptr, nullptr);
                     };
                     return c;
                   },
                   false,
                   true,
                   {},
                   "w is a parameter: no batch axis"}});

TEST(TensorNormalization, AxesOneIsBatchNormalizationWithBatchStatistics) {
  auto x = make_variable({4, 3, 2, 2});
  std::vector<float> v(48);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7f * i) * 3;
  std::copy(v.begin(), v.end(), x->data()->cast<float>(true));
  auto y = F::tensor_normalization(x, nullptr, nullptr, {1});
  auto beta = variable_from({1, 3, 1, 1}, {0, 0, 0});
  auto gamma = variable_from({1, 3, 1, 1}, {1, 1, 1});
  auto mean = variable_from({1, 3, 1, 1}, {0, 0, 0});
  auto var = variable_from({1, 3, 1, 1}, {1, 1, 1});
  auto bn = F::batch_normalization(x, beta, gamma, mean, var);
  y->forward();
  bn->forward();
  const Doubles a = to_doubles(y), b = to_doubles(bn);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

TEST(TensorNormalization, BadAxes) {
  expect_error(
      [] {
        F::tensor_normalization(make_variable({2, 3}), nullptr, nullptr, {2});
      },
      {"[tensor_normalization] axes (2,) has axis 2, out of range for x with "
       "shape (2, 3)"});
  expect_error(
      [] {
        F::weight_standardization(make_variable({2, 3}), 2);
      },
      {"[weight_standardization] channel_axis 2 is out of range for x with "
       "shape (2, 3)"});
}

const bool kLayerNormalizationPerSample =
    harness::add(decl::LayerNormalization,
                 {{"per sample", [] {
                     FunctionCheck c;
                     const Shape xs{3, 4, 5}, ps{1, 4, 5};
                     c.inputs = {{xs}, {ps}, {ps, 0.5f, 1.5f}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::layer_normalization(in[0], in[1], in[2]);
                     };
                     c.reference = [=](const std::vector<Doubles>& in) {
                       return norm_ref(
                           xs, in[0], [](const auto& i) { return i[0]; }, ps,
                           &in[1], &in[2]);
                     };
                     return c;
                   }}});

// (T, N, E) with batch axes {0, 1}, gamma and beta of (1, 1, E): a
// Transformer's layer norm.
FunctionCheck sequence_layer_norm_check(const Shape& xs) {
  FunctionCheck c;
  const Shape ps{1, 1, xs[2]};
  c.inputs = {{xs, -2.0f, 2.0f}, {ps}, {ps, 0.5f, 1.5f}};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::layer_normalization(in[0], in[1], in[2], {0, 1});
  };
  const int64_t n = xs[1];
  c.reference = [=](const std::vector<Doubles>& in) {
    return norm_ref(
        xs, in[0], [n](const auto& i) { return i[0] * n + i[1]; }, ps, &in[1],
        &in[2]);
  };
  return c;
}

// The second: 80 rows of 36, on a GPU rows shared unevenly by a warp's
// lanes and gamma's and beta's grads summed in three chunks of rows.
const bool kLayerNormalizationSequences = harness::add(
    decl::LayerNormalization, {{"last axis of a sequence",
                                [] {
                                  return sequence_layer_norm_check({3, 2, 8});
                                }},
                               {"80 rows of a sequence", [] {
                                  return sequence_layer_norm_check({40, 2, 36});
                                }}});

// batch_axis 1 of (4, 3, 5): the groups are not contiguous in memory.
// variant 0: neither beta nor gamma, 1: beta only, 2: gamma only.
FunctionCheck layer_norm_inner_check(int variant) {
  FunctionCheck c;
  const Shape xs{4, 3, 5}, ps{4, 1, 5};
  c.inputs = {{xs}};
  if (variant == 1) c.inputs.push_back({ps});              // beta only
  if (variant == 2) c.inputs.push_back({ps, 0.5f, 1.5f});  // gamma only
  c.build = [variant](const std::vector<VariablePtr>& in) {
    VariablePtr beta = variant == 1 ? in[1] : nullptr;
    VariablePtr gamma = variant == 2 ? in[1] : nullptr;
    return F::layer_normalization(in[0], beta, gamma, {1});
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return norm_ref(
        xs, in[0], [](const auto& i) { return i[1]; }, ps,
        variant == 1 ? &in[1] : nullptr, variant == 2 ? &in[1] : nullptr);
  };
  return c;
}

const bool kLayerNormalizationInner = harness::add(
    decl::LayerNormalization,
    {{"inner batch axis, no beta, no gamma",
      [] { return layer_norm_inner_check(0); }},
     {"inner batch axis, beta only", [] { return layer_norm_inner_check(1); }},
     {"inner batch axis, gamma only",
      [] { return layer_norm_inner_check(2); }}});

TEST(LayerNormalization, HalfMatchesFloatOnALargeOffsetSample) {
  // 50,000 values near 100 per sample: a half sum stalls at 2048 * 16 and a
  // half mean would be far off; fp32 statistics give float's answer.
  std::vector<float> v(2 * 50000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 100.0f + (i % 7) * 0.25f;
  Doubles want;
  {
    auto x = variable_from({2, 50000}, v);
    auto y = F::layer_normalization(x, nullptr, nullptr);
    y->forward();
    want = to_doubles(y);
  }
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({2, 50000}, v);
  auto y = F::layer_normalization(x, nullptr, nullptr);
  EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
  y->forward();
  expect_near(to_doubles(y), want, 1e-2, 1e-2, "half against float");
}

// A Transformer-sized layer norm, (T, N, E) = (64, 4, 256) over E: rows
// split over the threads, dgamma and dbeta summed per thread and then
// across them. Forward and every grad against double precision, in float
// and (inputs and dy exactly representable, fp32 sums) in half and
// bfloat16.
TEST(LayerNormalization, ThreadedRowsMatchDoubleReference) {
  const int64_t rows = 64 * 4, len = 256;
  std::vector<float> x(rows * len), dy(rows * len), gamma(len), beta(len);
  for (int64_t i = 0; i < rows * len; ++i) {
    x[i] = 0.125f * static_cast<float>((i * 37) % 29) - 1.5f + (i / len) % 5;
    dy[i] = 0.0625f * static_cast<float>((i * 11) % 17) - 0.5f;
  }
  for (int64_t j = 0; j < len; ++j) {
    gamma[j] = 0.5f + 0.03125f * static_cast<float>(j % 13);
    beta[j] = 0.25f * static_cast<float>(j % 3) - 0.25f;
  }
  Doubles y(rows * len), dx(rows * len), dgamma(len, 0.0), dbeta(len, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * len;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += xr[j];
    mean /= len;
    for (int64_t j = 0; j < len; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const double rstd = 1.0 / std::sqrt(var / len + 1e-5);
    double m1 = 0, m2 = 0;
    for (int64_t j = 0; j < len; ++j) {
      const double xhat = (xr[j] - mean) * rstd, d = dy[r * len + j];
      y[r * len + j] = xhat * gamma[j] + beta[j];
      dgamma[j] += d * xhat;
      dbeta[j] += d;
      m1 += d * gamma[j] / len;
      m2 += d * gamma[j] * xhat / len;
    }
    for (int64_t j = 0; j < len; ++j) {
      const double xhat = (xr[j] - mean) * rstd;
      dx[r * len + j] = rstd * (dy[r * len + j] * gamma[j] - m1 - xhat * m2);
    }
  }
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    const bool f32 = std::string(type) == "float";
    const double tol = f32 ? 1e-4 : std::string(type) == "half" ? 4e-3 : 3e-2;
    ContextGuard guard(context("cpu", type));
    auto xv = variable_from({64, 4, len}, x, true);
    auto gv = variable_from({1, 1, len}, gamma, true);
    auto bv = variable_from({1, 1, len}, beta, true);
    auto yv = F::layer_normalization(xv, bv, gv, {0, 1});
    yv->forward();
    expect_near(to_doubles(yv), y, tol, tol, "y");
    auto seed = make_ndarray({64, 4, len});
    std::copy(dy.begin(), dy.end(), seed->cast<float>(true));
    for (auto& v : {xv, gv, bv}) v->grad()->zero();
    yv->backward(seed);
    expect_near(grad_doubles(xv), dx, tol, tol, "dx");
    expect_near(grad_doubles(gv), dgamma, tol * 10, tol, "dgamma");
    expect_near(grad_doubles(bv), dbeta, tol * 10, tol, "dbeta");
  }
}

TEST(LayerNormalization, ParametricShapes) {
  ParameterScope params;
  auto y =
      PF::layer_normalization(make_variable({3, 2, 8}), params["ln"], {0, 1});
  EXPECT_EQ(y->shape(), (Shape{3, 2, 8}));
  EXPECT_EQ(params.get("ln/layer_normalization/gamma")->shape(),
            (Shape{1, 1, 8}));
  EXPECT_EQ(to_doubles(params.get("ln/layer_normalization/gamma"))[0], 1.0);
  EXPECT_EQ(params.get("ln/layer_normalization/beta")->shape(),
            (Shape{1, 1, 8}));
}

const bool kGroupNormalizationTwoGroups = harness::add(
    decl::GroupNormalization,
    {{"two groups", [] {
        FunctionCheck c;
        const Shape xs{2, 4, 3, 2}, ps{1, 4, 1, 1};
        c.inputs = {{xs}, {ps}, {ps, 0.5f, 1.5f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::group_normalization(in[0], in[1], in[2], 2);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return norm_ref(
              xs, in[0], [](const auto& i) { return i[0] * 2 + i[1] / 2; }, ps,
              &in[1], &in[2]);
        };
        return c;
      }}});

const bool kGroupNormalizationChannelsLast = harness::add(
    decl::GroupNormalization,
    {{"channels last", [] {
        FunctionCheck c;
        const Shape xs{2, 3, 4}, ps{1, 1, 4};
        c.inputs = {{xs}, {ps}, {ps, 0.5f, 1.5f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::group_normalization(in[0], in[1], in[2], 2, -1);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return norm_ref(
              xs, in[0], [](const auto& i) { return i[0] * 2 + i[2] / 2; }, ps,
              &in[1], &in[2]);
        };
        return c;
      }}});

FunctionCheck instance_norm_check(int axis) {
  FunctionCheck c;
  const Shape xs{2, 3, 6};
  const Shape ps = axis == 1 ? Shape{1, 3, 1} : Shape{1, 1, 6};
  c.inputs = {{xs}, {ps}, {ps, 0.5f, 1.5f}};
  c.build = [axis](const std::vector<VariablePtr>& in) {
    return F::instance_normalization(in[0], in[1], in[2], axis);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return norm_ref(
        xs, in[0],
        [axis](const auto& i) { return i[0] * (axis == 1 ? 3 : 6) + i[axis]; },
        ps, &in[1], &in[2]);
  };
  return c;
}

const bool kInstanceNormalization =
    harness::add(decl::InstanceNormalization,
                 {{"channels first", [] { return instance_norm_check(1); }},
                  {"channels last", [] { return instance_norm_check(2); }}});

TEST(Normalization, ParametricGroupAndInstance) {
  ParameterScope params;
  auto x = make_variable({2, 4, 3, 3});
  PF::group_normalization(x, 2, params["gn"]);
  PF::instance_normalization(x, params["in"]);
  EXPECT_EQ(params.get("gn/group_normalization/gamma")->shape(),
            (Shape{1, 4, 1, 1}));
  EXPECT_EQ(params.get("in/instance_normalization/beta")->shape(),
            (Shape{1, 4, 1, 1}));
}

TEST(Normalization, BadArguments) {
  auto x = make_variable({2, 4, 3});
  expect_error(
      [&] {
        F::layer_normalization(x, make_variable({1, 4, 2}), nullptr);
      },
      {"[layer_normalization] beta with shape (1, 4, 2) must have the "
       "dimensions of x with shape (2, 4, 3)"});
  expect_error(
      [&] { F::layer_normalization(x, nullptr, nullptr, {3}); },
      {"[layer_normalization] batch_axis (3,) has axis 3, out of range "
       "for x with shape (2, 4, 3)"});
  expect_error(
      [&] {
        F::layer_normalization(x, nullptr, nullptr, {0, -3});
      },
      {"[layer_normalization] batch_axis (0, -3) names axis 0 twice for x "
       "with shape (2, 4, 3)"});
  expect_error(
      [&] { F::group_normalization(x, nullptr, nullptr, 3); },
      {"[group_normalization] num_groups 3 must be positive and divide "
       "the 4 channels of x with shape (2, 4, 3) on axis 1"});
  expect_error(
      [&] { F::instance_normalization(x, nullptr, nullptr, 0); },
      {"[instance_normalization] channel_axis 0 is also a batch axis"});
  expect_error([&] { F::instance_normalization(x, nullptr, nullptr, 5); },
               {"[instance_normalization] channel_axis 5 is out of range"});
  expect_error(
      [&] {
        apply_function1(decl::LayerNormalization, LayerNormalizationOptions{},
                        {x, make_variable({1, 4, 3})});
      },
      {"[layer_normalization] takes 3 inputs (x, beta, gamma) with no_bias "
       "false and no_scale false, but got 2"});
}

// 4096 values in [0, 1) per sample (sums near 2048, where an fp16
// accumulator's spacing is 2): the statistics against double.
const bool kLayerNormalizationLong =
    harness::add(decl::LayerNormalization,
                 {{"4096 values per sample",
                   [] {
                     FunctionCheck c;
                     const Shape xs{2, 4096};
                     c.inputs = {{xs, 0.0f, 1.0f}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::layer_normalization(in[0], nullptr, nullptr);
                     };
                     c.reference = [=](const std::vector<Doubles>& in) {
                       return norm_ref(
                           xs, in[0], [](const auto& i) { return i[0]; },
                           {1, 4096}, nullptr, nullptr);
                     };
                     c.half_atol = 4e-3, c.half_rtol = 4e-3;
                     c.bf16_atol = 3e-2, c.bf16_rtol = 2e-2;
                     c.check_grad = false;
                     return c;
                   },
                   /*long_sum=*/true}});

}  // namespace
}  // namespace mg::test::normalization_tests
