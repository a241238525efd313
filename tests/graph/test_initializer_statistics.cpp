// The weights the parametric builders create, by statistics that all-zero
// (or constant, or mis-scaled) weights fail: the mean near zero within a few
// standard errors, the standard deviation that of the fan-in/fan-out rule
// within a few standard errors of a sample's, every value inside the
// uniform limit and the largest near it, and many distinct values. The
// builders' own tests check shapes and reuse; a builder that created its
// weights with a constant or the wrong fans would pass those.
//
// Bounds: for n draws of a uniform on [-a, a] (std s = a / sqrt(3)), the
// sample mean has standard error s / sqrt(n) (bound: 5 of them) and the
// sample std a relative one of sqrt((9/5 - 1) / (4 n)) = 0.45 / sqrt(n)
// (bound: 6 of them); the largest |w| falls below a (1 - 12 / n) with
// probability e^-12. The draws are seeded, so the figures are fixed.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <mixgraph/graph/random.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

struct Stats {
  int64_t n = 0;
  double mean = 0, std = 0, max_abs = 0;
  size_t distinct = 0;
};

Stats stats_of(const VariablePtr& w) {
  Stats s;
  const float* p = w->data()->get<const float>();
  s.n = w->size();
  std::set<float> values;
  for (int64_t i = 0; i < s.n; ++i) {
    s.mean += p[i];
    s.max_abs = std::max(s.max_abs, std::fabs(static_cast<double>(p[i])));
    values.insert(p[i]);
  }
  s.mean /= static_cast<double>(s.n);
  for (int64_t i = 0; i < s.n; ++i) s.std += (p[i] - s.mean) * (p[i] - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(s.n));
  s.distinct = values.size();
  return s;
}

// w is uniform on [-limit, limit] by the statistics above.
void expect_uniform(const VariablePtr& w, double limit,
                    const std::string& what) {
  SCOPED_TRACE(what);
  const Stats s = stats_of(w);
  const double n = static_cast<double>(s.n);
  const double want_std = limit / std::sqrt(3.0);
  ASSERT_GE(s.n, 500) << "too few values for the statistics";
  EXPECT_LE(std::fabs(s.mean), 5 * want_std / std::sqrt(n)) << "mean";
  EXPECT_NEAR(s.std, want_std, want_std * 6 * 0.45 / std::sqrt(n)) << "std";
  EXPECT_LE(s.max_abs, limit) << "largest |w|";
  EXPECT_GE(s.max_abs, limit * (1 - 12 / n)) << "largest |w|";
  EXPECT_GE(s.distinct, static_cast<size_t>(s.n) * 9 / 10) << "distinct values";
}

// Glorot-uniform: limit sqrt(6 / (fan_in + fan_out)).
void expect_glorot(const VariablePtr& w, int64_t fan_in, int64_t fan_out,
                   const std::string& what) {
  expect_uniform(w, std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)),
                 what + " (Glorot, fan_in " + std::to_string(fan_in) +
                     ", fan_out " + std::to_string(fan_out) + ")");
}

void expect_zero(const VariablePtr& b, const std::string& what) {
  const Stats s = stats_of(b);
  EXPECT_EQ(s.max_abs, 0.0) << what << ": a bias starts at zero";
}

TEST(InitializerStatistics, AffineWeightsFollowGlorotOnTheirFans) {
  seed(42);
  ParameterScope params;
  PF::affine(make_variable({8, 20, 15}), 200, params["fc"]);  // fan_in 300
  expect_glorot(params.get("fc/affine/W"), 300, 200, "fc/affine/W");
  expect_zero(params.get("fc/affine/b"), "fc/affine/b");
  // base_axis 2: the fan-in is the product of the axes after it.
  parametric_functions::AffineParams base2;
  base2.base_axis = 2;
  PF::affine(make_variable({4, 3, 10, 50}), 30, params["fc2"], base2);
  expect_glorot(params.get("fc2/affine/W"), 500, 30, "fc2/affine/W");
}

TEST(InitializerStatistics, ConvolutionWeightsFollowGlorotOnTheirFans) {
  seed(43);
  ParameterScope params;
  parametric_functions::ConvolutionParams p;
  p.group = 2;
  PF::convolution(make_variable({2, 6, 9, 9}), 16, {5, 5}, params["conv"], p);
  // fan_in: input channels per group times the kernel; fan_out: outmaps
  // times the kernel.
  expect_glorot(params.get("conv/conv/W"), 3 * 25, 16 * 25, "conv/W");
  expect_zero(params.get("conv/conv/b"), "conv/b");
}

TEST(InitializerStatistics, DeconvolutionWeightsFollowGlorotOnTheirFans) {
  seed(44);
  ParameterScope params;
  parametric_functions::DeconvolutionParams p;
  p.group = 2;
  PF::deconvolution(make_variable({2, 8, 5, 5}), 12, {4, 4}, params["deconv"],
                    p);
  // W (channels, outmaps / group, kernel): fan_in outmaps per group times
  // the kernel, fan_out the channels times the kernel.
  expect_glorot(params.get("deconv/deconv/W"), 6 * 16, 8 * 16, "deconv/W");
  expect_zero(params.get("deconv/deconv/b"), "deconv/b");
}

TEST(InitializerStatistics, EmbedWeightsHaveUnitVariance) {
  seed(45);
  ParameterScope params;
  PF::embed(make_variable({4}), 100, 30, params["emb"]);
  expect_uniform(params.get("emb/embed/W"), std::sqrt(3.0), "emb/W");
}

// The attention's projection weights (NNabla's q_weight, k_weight,
// v_weight, out_weight) follow Glorot on their (fan_in, fan_out) = shape. The
// LSTM's weight_l0 and bias are uniform on +-1/sqrt(hidden) (PyTorch's
// rule).
TEST(InitializerStatistics, CompositeBuildersWeightsFollowGlorot) {
  seed(46);
  ParameterScope params;
  PF::multi_head_attention(make_variable({3, 2, 64}), make_variable({5, 2, 48}),
                           make_variable({5, 2, 40}), 64, 4, params["mha"]);
  PF::lstm(make_variable({4, 2, 40}), nullptr, nullptr, 32, params["lstm"]);
  int weights = 0;
  for (const auto& [name, v] : params.parameters()) {
    const std::string suffix = "_weight";
    if (name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    ASSERT_EQ(v->shape().size(), 2u) << name;
    expect_glorot(v, v->shape()[0], v->shape()[1], name);
    ++weights;
  }
  EXPECT_EQ(weights, 4);  // the four projections
  expect_uniform(params.get("lstm/lstm/weight_l0"), 1.0 / std::sqrt(32.0),
                 "lstm/lstm/weight_l0");
  // The bias has 128 values, too few for the statistics: bound and spread.
  const auto bias = params.get("lstm/lstm/bias");
  double smallest = 1, largest = -1;
  for (double v : to_doubles(bias)) {
    EXPECT_LE(std::abs(v), 1.0 / std::sqrt(32.0));
    smallest = std::min(smallest, v);
    largest = std::max(largest, v);
  }
  EXPECT_GT(largest - smallest, 0.25);  // spread over most of +-0.177
}

// The initializers themselves, on the fan rules, including the means the
// moments test leaves out; and the statistics fail zeros and constants.
TEST(InitializerStatistics, FanRulesHaveTheirMeanAndStd) {
  seed(47);
  const int64_t n = 100000;
  auto w = make_variable({n});
  glorot_uniform_initializer(100, 300)(*w->data());
  expect_uniform(w, std::sqrt(6.0 / 400), "glorot_uniform(100, 300)");
  he_uniform_initializer(50)(*w->data());
  expect_uniform(w, std::sqrt(6.0 / 50), "he_uniform(50)");
  for (auto [init, std_want, what] :
       {std::tuple{glorot_normal_initializer(100, 300), std::sqrt(2.0 / 400),
                   "glorot_normal(100, 300)"},
        std::tuple{he_normal_initializer(50), std::sqrt(2.0 / 50),
                   "he_normal(50)"}}) {
    init(*w->data());
    const Stats s = stats_of(w);
    // A normal's sample std: relative standard error 1 / sqrt(2 n).
    EXPECT_LE(std::fabs(s.mean), 5 * std_want / std::sqrt(double(n))) << what;
    EXPECT_NEAR(s.std, std_want, std_want * 6 / std::sqrt(2.0 * n)) << what;
    EXPECT_GE(s.distinct, static_cast<size_t>(n) * 9 / 10) << what;
  }
}

TEST(InitializerStatistics, TheChecksFailZerosAndConstants) {
  for (float value : {0.0f, 0.05f}) {
    auto w = make_variable({1000});
    constant_initializer(value)(*w->data());
    const Stats s = stats_of(w);
    const double limit = std::sqrt(6.0 / (500 + 500)), n = 1000;
    // The bounds expect_uniform applies, each one a zero or constant
    // fails (mean and the upper bound aside for zeros).
    EXPECT_GT(std::fabs(s.std - limit / std::sqrt(3.0)),
              limit / std::sqrt(3.0) * 6 * 0.45 / std::sqrt(n));
    EXPECT_LT(s.max_abs, limit * (1 - 12 / n));
    EXPECT_LT(s.distinct, 900u);
  }
}

}  // namespace
}  // namespace mg::test
