// lanes.hpp's reductions: the order they promise (lane k takes the elements
// k mod 16 in order; lane k joins lane k + 8, then k + 4, k + 2, k + 1),
// bit for bit against that order written out one element at a time, for
// every length from empty to past a few whole vectors, on values whose sum
// depends on the order; and max's rule (a NaN never wins) through the tree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <mixgraph/functions/cpu/lanes.hpp>

namespace mg::test::lanes_tests {
namespace {

// The documented order, one float at a time.
template <class Op>
float reference(const std::vector<float>& x, float init, Op op) {
  float acc[16];
  for (float& a : acc) a = init;
  for (size_t i = 0; i < x.size(); ++i) acc[i % 16] = op(acc[i % 16], x[i]);
  for (int w = 8; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
  }
  return acc[0];
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Magnitudes from 2^-20 to 2^20: a sum in another order rounds otherwise.
std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> x(n);
  for (float& v : x) v = std::ldexp(mantissa(rng), exponent(rng));
  return x;
}

TEST(Lanes, SumIsTheDocumentedOrderBitForBit) {
  auto add = [](float s, float v) { return s + v; };
  int order_mattered = 0;
  for (int64_t n = 0; n <= 70; ++n) {
    const std::vector<float> x = values(n, static_cast<uint32_t>(n));
    const float got = cpu::lanes_sum(n, [&](int64_t i) { return x[i]; });
    const float want = reference(x, 0.0f, add);
    EXPECT_EQ(bits(got), bits(want)) << "n " << n;
    float in_order = 0.0f;
    for (float v : x) in_order += v;
    order_mattered += bits(in_order) != bits(want);
  }
  // The values must tell orders apart, or the bit check proves nothing.
  EXPECT_GT(order_mattered, 30);  // 39 of the 71 lengths here
}

TEST(Lanes, MaxNeverTakesANaNAndSeesEveryLane) {
  auto max_op = [](auto m, auto v) { return m < v ? v : m; };
  auto scalar_max = [](float m, float v) { return m < v ? v : m; };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float low = -std::numeric_limits<float>::infinity();
  for (int64_t n = 1; n <= 40; ++n) {
    for (int64_t at = 0; at < n; ++at) {
      std::vector<float> x = values(n, static_cast<uint32_t>(100 + n));
      for (float& v : x) v = -std::fabs(v);
      x[at] = 7.0f;  // the maximum, in any lane
      if (n > 1) x[(at + 1) % n] = nan;
      const float got = cpu::lanes_reduce(
          n, low, [&](int64_t i) { return x[i]; }, max_op);
      EXPECT_EQ(got, 7.0f) << "n " << n << ", maximum at " << at;
      EXPECT_EQ(bits(got), bits(reference(x, low, scalar_max)));
    }
  }
}

}  // namespace
}  // namespace mg::test::lanes_tests
