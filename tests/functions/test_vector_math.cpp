// ops/vector_math.hpp against double precision over the whole float range:
// a sweep of every 4093rd bit pattern (about a million floats of every
// sign, exponent and class: subnormals, infinities, nans), a dense sweep
// where the functions change fastest, and the special values written out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <mixgraph/functions/ops/vector_math.hpp>

namespace mg::test::vector_math_tests {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// |got - ref| in units of the last place of ref rounded to float (the
// subnormals' ulp below the normal range); 0 where both are the same
// infinity or both nan, and "infinitely wrong" where only one is.
double ulps(float got, double ref) {
  if (std::isnan(ref) || std::isnan(got)) {
    return std::isnan(ref) && std::isnan(got) ? 0 : HUGE_VAL;
  }
  const float rounded = static_cast<float>(ref);
  if (std::isinf(rounded) || std::isinf(got))
    return got == rounded ? 0 : HUGE_VAL;
  int e;
  std::frexp(ref, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(static_cast<double>(got) - ref) / ulp;
}

struct Worst {
  double ulps = 0;
  float x = 0;
};

template <class Fn, class Ref>
Worst sweep(Fn fn, Ref ref, float lo = -kInf, float hi = kInf) {
  Worst w;
  auto visit = [&](float x) {
    if (!(x >= lo && x <= hi) && !std::isnan(x)) return;
    const double e = ulps(fn(x), ref(static_cast<double>(x)));
    if (!(e <= w.ulps)) w = {e, x};
  };
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093) {
    visit(from_bits(static_cast<uint32_t>(b)));
  }
  // Densely where the reductions switch and the results change fastest.
  for (float x = -20.0f; x <= 20.0f; x += 1.0f / 4096) visit(x);
  return w;
}

#define EXPECT_WITHIN(worst, bound)                                 \
  EXPECT_LE((worst).ulps, bound)                                    \
      << "worst at x = " << (worst).x << " (bits " << std::hexfloat \
      << (worst).x << std::defaultfloat << ")"

TEST(VectorMath, Exp) {
  EXPECT_WITHIN(sweep(vmath::exp, [](double x) { return std::exp(x); }), 1.5);
  EXPECT_EQ(vmath::exp(0.0f), 1.0f);
  EXPECT_EQ(vmath::exp(-0.0f), 1.0f);
  EXPECT_EQ(vmath::exp(kInf), kInf);
  EXPECT_EQ(vmath::exp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(vmath::exp(kNan)));
  // The edges of the range: the largest finite result, the first inf, the
  // subnormals and the first 0.
  EXPECT_LE(ulps(vmath::exp(88.72283f), std::exp(double{88.72283f})), 1.5);
  EXPECT_EQ(vmath::exp(88.72284f), kInf);
  EXPECT_LE(ulps(vmath::exp(-87.5f), std::exp(double{-87.5f})), 1.5);  // normal
  EXPECT_LE(ulps(vmath::exp(-100.0f), std::exp(-100.0)), 1.5);  // subnormal
  EXPECT_EQ(vmath::exp(-104.0f), 0.0f);
}

TEST(VectorMath, Expm1OfNonPositive) {
  EXPECT_WITHIN(sweep(
                    vmath::expm1_nonpositive,
                    [](double x) { return std::expm1(x); }, -kInf, 0.0f),
                1.5);
  // Small |x|, where e^x - 1 would lose every digit.
  EXPECT_EQ(vmath::expm1_nonpositive(-1e-10f), -1e-10f);
  EXPECT_EQ(vmath::expm1_nonpositive(-0.0f), 0.0f);
  EXPECT_EQ(vmath::expm1_nonpositive(-kInf), -1.0f);
  EXPECT_TRUE(std::isnan(vmath::expm1_nonpositive(kNan)));
  EXPECT_EQ(vmath::expm1_nonpositive(3.0f), 0.0f);  // documented
}

TEST(VectorMath, Log) {
  EXPECT_WITHIN(sweep(vmath::log, [](double x) { return std::log(x); }), 1.0);
  EXPECT_EQ(vmath::log(1.0f), 0.0f);
  EXPECT_EQ(vmath::log(0.0f), -kInf);
  EXPECT_EQ(vmath::log(-0.0f), -kInf);
  EXPECT_EQ(vmath::log(kInf), kInf);
  EXPECT_TRUE(std::isnan(vmath::log(-1.0f)));
  EXPECT_TRUE(std::isnan(vmath::log(-kInf)));
  EXPECT_TRUE(std::isnan(vmath::log(kNan)));
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_LE(ulps(vmath::log(tiny), std::log(double{tiny})), 1.0);
}

TEST(VectorMath, Log1p) {
  EXPECT_WITHIN(sweep(vmath::log1p, [](double x) { return std::log1p(x); }),
                3.0);
  EXPECT_EQ(vmath::log1p(1e-10f), 1e-10f);
  EXPECT_EQ(vmath::log1p(-0.0f), -0.0f);
  EXPECT_TRUE(std::signbit(vmath::log1p(-0.0f)));
  EXPECT_EQ(vmath::log1p(-1.0f), -kInf);
  EXPECT_EQ(vmath::log1p(kInf), kInf);
  EXPECT_TRUE(std::isnan(vmath::log1p(-2.0f)));
  EXPECT_TRUE(std::isnan(vmath::log1p(kNan)));
}

TEST(VectorMath, Tanh) {
  EXPECT_WITHIN(sweep(vmath::tanh, [](double x) { return std::tanh(x); }), 3.0);
  EXPECT_EQ(vmath::tanh(kInf), 1.0f);
  EXPECT_EQ(vmath::tanh(-kInf), -1.0f);
  EXPECT_EQ(vmath::tanh(1e-30f), 1e-30f);
  EXPECT_TRUE(std::signbit(vmath::tanh(-0.0f)));
  EXPECT_TRUE(std::isnan(vmath::tanh(kNan)));
}

TEST(VectorMath, Sigmoid) {
  EXPECT_WITHIN(sweep(vmath::sigmoid,
                      [](double x) { return 1.0 / (1.0 + std::exp(-x)); }),
                3.0);
  EXPECT_EQ(vmath::sigmoid(0.0f), 0.5f);
  EXPECT_EQ(vmath::sigmoid(kInf), 1.0f);
  EXPECT_EQ(vmath::sigmoid(-kInf), 0.0f);
  // Far below 0 the answer is e^x, not 1 / (1 + inf) = 0.
  EXPECT_GT(vmath::sigmoid(-95.0f), 0.0f);
  EXPECT_TRUE(std::isnan(vmath::sigmoid(kNan)));
}

}  // namespace
}  // namespace mg::test::vector_math_tests
