// Sum, Mean and Max: the shared checker, fp32 accumulation in half and
// bfloat16, argmax routing and bad axes.
//
// Tolerances: the checker's defaults (half 1e-2, bfloat16 5e-2, absolute
// and relative). The reduced runs differ from float only by rounding the
// inputs, the output grad and the result to 11 (half) or 8 (bfloat16)
// significant bits; the sums themselves are in fp32. For at most 60 inputs
// in [-1, 1] that is a few 1e-3 in half and about 1e-2 in bfloat16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::reduction_tests {
namespace {

enum class Kind { sum, mean, max };

// The reduction in double by explicit index arithmetic, y in row-major
// order of the kept axes.
Doubles reduce_ref(const Shape& shape, std::vector<int> axes, Kind kind,
                   const Doubles& x) {
  const int nd = static_cast<int>(shape.size());
  if (axes.empty()) {
    for (int a = 0; a < nd; ++a) axes.push_back(a);
  }
  std::vector<bool> reduced(nd, false);
  for (int a : axes) reduced[a < 0 ? a + nd : a] = true;
  int64_t n_out = 1, count = 1;
  for (int a = 0; a < nd; ++a) (reduced[a] ? count : n_out) *= shape[a];
  const double init =
      kind == Kind::max ? -std::numeric_limits<double>::infinity() : 0.0;
  Doubles y(n_out, init);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    for (int a = nd - 1; a >= 0; --a) {
      const int64_t idx = rem % shape[a];
      rem /= shape[a];
      if (reduced[a]) continue;
      o += idx * stride;
      stride *= shape[a];
    }
    y[o] = kind == Kind::max ? std::max(y[o], x[i]) : y[o] + x[i];
  }
  if (kind == Kind::mean) {
    for (double& v : y) v /= static_cast<double>(count);
  }
  return y;
}

VariablePtr build(Kind kind, const VariablePtr& x, std::vector<int> axes,
                  bool keep_dims) {
  switch (kind) {
    case Kind::sum:
      return F::sum(x, axes, keep_dims);
    case Kind::mean:
      return F::mean(x, axes, keep_dims);
    case Kind::max:
      return F::max(x, axes, keep_dims);
  }
  return nullptr;
}

// Max gets distinct values j/16 - 2, exact in half and bfloat16, so no
// rounding can move the argmax and the numerical gradient (step 1e-3) never
// crosses another value.
std::vector<float> distinct_values(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (int64_t j = 0; j < n; ++j) v[j] = static_cast<float>(j) / 16.0f - 2.0f;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

FunctionCheck reduce_check(Kind kind, const Shape& shape, std::vector<int> axes,
                           bool keep_dims) {
  FunctionCheck c;
  if (kind == Kind::max) {
    c.inputs = {InputSpec::fixed(shape, distinct_values(shape_size(shape), 3),
                                 /*need_grad=*/true)};
  } else {
    c.inputs = {{shape}};
  }
  c.build = [=](const std::vector<VariablePtr>& in) {
    return build(kind, in[0], axes, keep_dims);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return reduce_ref(shape, axes, kind, in[0]);
  };
  return c;
}

struct Axes {
  const char* name;
  Shape shape;
  std::vector<int> axes;
  bool keep_dims;
};

const std::vector<Axes>& every_axes() {
  static const std::vector<Axes> list = {
      {"all", {3, 4, 5}, {}, false},
      {"all, keep_dims", {3, 4, 5}, {}, true},
      {"middle", {2, 3, 4}, {1}, false},
      {"middle, keep_dims", {2, 3, 4}, {1}, true},
      {"last", {4, 6}, {-1}, false},
      {"first", {6, 4}, {0}, false},
      {"adjacent pair", {2, 3, 4, 2}, {1, 2}, true},
      {"non-adjacent", {4, 3, 5}, {0, 2}, false},
      {"non-adjacent, keep_dims", {4, 3, 5, 2}, {3, 1}, true},
      {"negative non-adjacent", {3, 2, 4, 2}, {-1, 0, -3}, false},
      {"size-one axes", {3, 1, 4}, {1}, false}};
  return list;
}

// 8192 values in [0, 1) summed along a middle axis of 2048 (sums near
// 1000): an fp16 accumulator's spacing there is 0.5, so it would miss the
// double reference by far more than the output's own rounding (2^-11).
FunctionCheck long_sum_check(Kind kind) {
  FunctionCheck c = reduce_check(kind, {2, 2048, 2}, {1}, false);
  c.inputs = {{{2, 2048, 2}, 0.0f, 1.0f}};
  c.half_atol = c.bf16_atol = 0.0;
  c.half_rtol = 2e-3;
  c.bf16_rtol = 1e-2;
  c.check_grad = false;
  return c;
}

std::vector<harness::Case> reduce_cases(Kind kind) {
  std::vector<harness::Case> out;
  for (const Axes& a : every_axes()) {
    out.push_back({a.name, [kind, a] {
                     return reduce_check(kind, a.shape, a.axes, a.keep_dims);
                   }});
  }
  if (kind != Kind::max) {
    out.push_back({"2048-term sums", [kind] { return long_sum_check(kind); },
                   /*long_sum=*/true});
  }
  return out;
}

const bool kSum = harness::add(decl::Sum, reduce_cases(Kind::sum));
const bool kMean = harness::add(decl::Mean, reduce_cases(Kind::mean));
const bool kMax = harness::add(decl::Max, reduce_cases(Kind::max));

// ---- the acceptance: fp32 accumulation under a half context ----

VariablePtr filled(int64_t n, float value) {
  auto x = make_variable({n});
  std::fill_n(x->data()->cast<float>(true), n, value);
  return x;
}

float read_float(const VariablePtr& y) {
  return y->data()->get<const float>()[0];
}

// Sum and Mean run in fp32 by default (they reduce losses); these tests set
// them reduced to check that their half and bfloat16 kernels, stored in the
// reduced type, still accumulate in fp32.
struct ReducedSumAndMean {
  ReducedSumAndMean() {
    PrecisionPolicy::instance().set("Sum", Precision::reduced);
    PrecisionPolicy::instance().set("Mean", Precision::reduced);
  }
  ~ReducedSumAndMean() { PrecisionPolicy::instance().reset(); }
};

TEST(ReduceAccumulation, SumAndMeanOutputFloatByDefault) {
  for (const char* type : {"half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto x = make_variable({3});
    auto y = F::mean(F::mul_scalar(x, 2.0f));
    EXPECT_EQ(y->parent()->function().dtype(), Dtype::f32);
    y->forward();
    EXPECT_EQ(y->data()->array().dtype(), Dtype::f32);
    auto z = F::sum(x);
    EXPECT_EQ(z->parent()->function().dtype(), Dtype::f32);
  }
}

TEST(ReduceAccumulation, MeanOfOneHundredThousandOnesIsOneInHalf) {
  ReducedSumAndMean reduced;
  ContextGuard guard(context("cpu", "half"));
  auto y = F::mean(filled(100000, 1.0f));
  EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
  y->forward();
  EXPECT_EQ(y->shape(), Shape{});
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f16);  // stored in half
  EXPECT_EQ(read_float(y), 1.0f);
}

TEST(ReduceAccumulation, HalfAccumulationWouldSaturate) {
  // What the test above guards against: a running sum kept in half stops
  // at 2048, where 2048 + 1 rounds back to 2048.
  Half s(0.0f);
  for (int i = 0; i < 100000; ++i) s = Half(static_cast<float>(s) + 1.0f);
  EXPECT_EQ(static_cast<float>(s), 2048.0f);
}

TEST(ReduceAccumulation, SumOfSixtyThousandOnesInHalf) {
  ReducedSumAndMean reduced;
  // 100,000 would overflow the half output (max 65504); 60000 = 1875 * 32
  // is exact in half.
  ContextGuard guard(context("cpu", "half"));
  auto y = F::sum(filled(60000, 1.0f));
  y->forward();
  EXPECT_EQ(read_float(y), 60000.0f);
}

TEST(ReduceAccumulation, SumOfOneHundredThousandHalvesInHalf) {
  ReducedSumAndMean reduced;
  // The fp32 sum is exactly 50000; half spacing at 50000 is 32, so the
  // stored output is 50000 rounded to half: 49984 (the tie goes to even).
  ContextGuard guard(context("cpu", "half"));
  auto y = F::sum(filled(100000, 0.5f));
  y->forward();
  EXPECT_EQ(read_float(y), static_cast<float>(Half(50000.0f)));
  EXPECT_EQ(read_float(y), 49984.0f);
}

TEST(ReduceAccumulation, MeanOfOneHundredThousandOnesIsOneInBFloat16) {
  ReducedSumAndMean reduced;
  ContextGuard guard(context("cpu", "bfloat16"));
  auto y = F::mean(filled(100000, 1.0f));
  EXPECT_EQ(y->parent()->function().dtype(), Dtype::bf16);
  y->forward();
  EXPECT_EQ(read_float(y), 1.0f);
}

TEST(ReduceAccumulation, MeanKeepDimsOverNonAdjacentAxesInHalf) {
  ReducedSumAndMean reduced;
  // 2 x 5000 x 3 x 10: each output averages 50000 values; fp16 accumulation
  // would be far off, fp32 is exact for these values (multiples of 1/4).
  ContextGuard guard(context("cpu", "half"));
  const Shape shape{2, 5000, 3, 10};
  auto x = make_variable(shape);
  float* p = x->data()->cast<float>(true);
  Doubles xd(shape_size(shape));
  for (int64_t i = 0; i < shape_size(shape); ++i) {
    p[i] = xd[i] = static_cast<double>(i % 7) / 4.0;
  }
  auto y = F::mean(x, {1, 3}, true);
  EXPECT_EQ(y->shape(), (Shape{2, 1, 3, 1}));
  y->forward();
  expect_near(to_doubles(y), reduce_ref(shape, {1, 3}, Kind::mean, xd), 0,
              1.0 / 1024, "mean in half against double");
}

// ---- large arrays: the parallel and chunked paths ----

TEST(Reduce, LargeArraysMatchDouble) {
  struct Big {
    Shape shape;
    std::vector<int> axes;
  };
  for (const Big& b : {Big{{1 << 20}, {}}, Big{{3, 70000}, {1}},
                       Big{{70000, 3}, {0}}, Big{{40, 50, 30}, {0, 2}}}) {
    SCOPED_TRACE(shape_str(b.shape));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto x = make_variable(b.shape);
    float* p = x->data()->cast<float>(true);
    Doubles xd(x->size());
    for (int64_t i = 0; i < x->size(); ++i) xd[i] = p[i] = dist(rng);
    for (Kind k : {Kind::sum, Kind::max}) {
      auto y = build(k, x, b.axes, false);
      y->forward();
      // fp32 sums of up to 2^20 terms of size 1: |error| well below 1e-3.
      expect_near(to_doubles(y), reduce_ref(b.shape, b.axes, k, xd), 1e-3, 1e-5,
                  "large reduction");
    }
  }
}

// ---- Max routes the grad to the first maximum ----

TEST(MaxReduce, GradGoesToTheFirstMaximum) {
  auto x = variable_from({2, 4}, {1, 3, 3, 2, 5, 5, 5, 5}, true);
  auto y = F::max(x, {1});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{3, 5}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(MaxReduce, TiesAcrossSeveralPassesGoToTheFirstFlatIndex) {
  // Axes 0 and 2 are reduced in two passes; every value ties.
  auto x = variable_from({2, 2, 2}, std::vector<float>(8, 1.0f), true);
  auto y = F::max(x, {0, 2});
  y->forward();
  y->backward();
  // y[j] takes the first of x[:, j, :]: flat indices 0 and 2.
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 0, 1, 0, 0, 0, 0, 0}));
}

TEST(MaxReduce, NanWins) {
  auto x = variable_from({3}, {1, std::nanf(""), 2});
  auto y = F::max(x);
  y->forward();
  EXPECT_TRUE(std::isnan(to_doubles(y)[0]));
}

// ---- shapes ----

TEST(Reduce, OutputShapes) {
  auto x = make_variable({2, 3, 4});
  EXPECT_EQ(F::sum(x)->shape(), Shape{});
  EXPECT_EQ(F::mean(x, {}, true)->shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(F::max(x, {0, -1})->shape(), (Shape{3}));
  EXPECT_EQ(F::sum(x, {2, 0}, true)->shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(F::mean(make_variable({8, 1}))->shape(), Shape{});
}

TEST(Reduce, EmptyAxisSumsToZero) {
  auto y = F::sum(make_variable({2, 0}), {1});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0, 0}));
}

// ---- bad input ----

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

TEST(Reduce, DuplicateAxesAreRejected) {
  EXPECT_EQ(error_of([] {
              F::sum(make_variable({2, 3, 4}), {1, -2});
            }),
            "[sum] axes (1, -2) names axis 1 twice for x with shape (2, 3, 4)");
}

TEST(Reduce, OutOfRangeAxesAreRejected) {
  EXPECT_EQ(error_of([] {
              F::mean(make_variable({2, 3, 4}), {3});
            }),
            "[mean] axes (3,) has axis 3, out of range for x with shape (2, 3, "
            "4)");
  EXPECT_EQ(error_of([] {
              F::max(make_variable({2, 3}), {-3});
            }),
            "[max] axes (-3,) has axis -3, out of range for x with shape (2, "
            "3)");
}

TEST(Reduce, MaxOfAnEmptyAxisIsRejected) {
  EXPECT_EQ(error_of([] {
              F::max(make_variable({2, 0}), {1});
            }),
            "[max] x with shape (2, 0) has no elements on axis 1 to take the "
            "max of");
}

TEST(Reduce, PrecisionPolicy) {
  auto& policy = PrecisionPolicy::instance();
  EXPECT_EQ(policy.get("Sum"), Precision::float32);  // losses are reduced
  EXPECT_EQ(policy.get("Mean"), Precision::float32);
  EXPECT_EQ(policy.get("Max"), Precision::reduced);  // a max does not round
}

}  // namespace
}  // namespace mg::test::reduction_tests
