// Half and BFloat16: rounding, special values, limits, and the vector
// conversion paths against the scalar ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/half.hpp>

namespace mg {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, EveryBitPatternRoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h = Half::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    const Half back(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(back))) << b;
      EXPECT_EQ(back.bits & 0x8000, b & 0x8000) << "nan sign of " << b;
    } else {
      EXPECT_EQ(back.bits, b) << "pattern " << b << " (" << f << ")";
    }
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half(0.0f).bits, 0x0000);
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x03ff)),
            std::ldexp(1023.0f, -24));
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x0400)), std::ldexp(1.0f, -14));
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9: up.
  EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(Half(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)).bits,
            0x3c01);
  // Subnormal ties: 2^-25 is halfway between 0 and 2^-24: to even (0).
  EXPECT_EQ(Half(std::ldexp(1.0f, -25)).bits, 0x0000);
  EXPECT_EQ(Half(3 * std::ldexp(1.0f, -25)).bits, 0x0002);
  EXPECT_EQ(Half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 0x0001);
  // Largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(Half(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)).bits, 0x0400);
}

TEST(Half, OverflowsToInfinity) {
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);  // below the halfway point
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);  // halfway ties to even: inf
  EXPECT_EQ(Half(1e10f).bits, 0x7c00);
  EXPECT_EQ(Half(-1e10f).bits, 0xfc00);
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
}

TEST(Half, NumericLimits) {
  using L = std::numeric_limits<Half>;
  EXPECT_EQ(static_cast<float>(L::max()), 65504.0f);
  EXPECT_EQ(static_cast<float>(L::lowest()), -65504.0f);
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, -14));
  EXPECT_EQ(static_cast<float>(L::epsilon()), std::ldexp(1.0f, -10));
  EXPECT_EQ(static_cast<float>(L::denorm_min()), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(static_cast<float>(L::infinity())));
  EXPECT_TRUE(std::isnan(static_cast<float>(L::quiet_NaN())));
  EXPECT_EQ(L::digits, 11);
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
  EXPECT_EQ(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(BFloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  const BFloat16 nan(std::nanf(""));
  EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
  // A nan whose payload is only in the low bits must not become inf.
  EXPECT_TRUE(
      std::isnan(static_cast<float>(BFloat16(bits_to_float(0x7f800001)))));
  EXPECT_EQ(static_cast<float>(std::numeric_limits<BFloat16>::epsilon()),
            std::ldexp(1.0f, -7));
  EXPECT_EQ(static_cast<float>(std::numeric_limits<BFloat16>::max()),
            bits_to_float(0x7f7f0000));
}

TEST(BFloat16, EveryBitPatternRoundTripsThroughFloat) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const BFloat16 v = BFloat16::from_bits(static_cast<uint16_t>(b));
    const float f = v;
    if (std::isnan(f)) continue;
    EXPECT_EQ(BFloat16(f).bits, b);
  }
}

// Random floats of every magnitude plus the edge cases.
std::vector<float> conversion_inputs() {
  std::vector<float> v;
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 100000; ++i) v.push_back(bits_to_float(bits(rng)));
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 1e-8f,
                  std::ldexp(1.0f, -25), std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min()}) {
    v.push_back(f);
    v.push_back(-f);
  }
  for (uint32_t b = 0; b < 65536; ++b) {
    v.push_back(static_cast<float>(Half::from_bits(static_cast<uint16_t>(b))));
  }
  return v;
}

// The vector paths (F16C / AVX-512, chosen at run time) give the same bits as
// the scalar path, in both directions, for a run long enough to be split
// across threads.
TEST(Convert, VectorPathsMatchScalar) {
  const auto in = conversion_inputs();
  for (Dtype reduced : {Dtype::f16, Dtype::bf16}) {
    std::vector<uint16_t> vec(in.size()), ref(in.size());
    convert(in.data(), Dtype::f32, vec.data(), reduced, in.size());
    convert_scalar(in.data(), Dtype::f32, ref.data(), reduced, in.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool nan_ref = reduced == Dtype::f16
                               ? std::isnan(float(Half::from_bits(ref[i])))
                               : std::isnan(float(BFloat16::from_bits(ref[i])));
      if (nan_ref) continue;  // nan payloads may differ
      mismatches += vec[i] != ref[i];
    }
    EXPECT_EQ(mismatches, 0u) << dtype_name(reduced);
    std::vector<float> back_vec(in.size()), back_ref(in.size());
    convert(ref.data(), reduced, back_vec.data(), Dtype::f32, in.size());
    convert_scalar(ref.data(), reduced, back_ref.data(), Dtype::f32, in.size());
    EXPECT_EQ(0, std::memcmp(back_vec.data(), back_ref.data(),
                             in.size() * sizeof(float)))
        << dtype_name(reduced);
  }
}

// Half to float, every pattern bit for bit: signalling nans come back quiet
// on every path (vcvtph2ps quiets them; so do the scalar path and the CUDA
// kernels, which share it).
TEST(Convert, HalfToFloatPathsAgreeOnEveryPattern) {
  std::vector<uint16_t> h(65536);
  for (uint32_t b = 0; b < 65536; ++b) h[b] = static_cast<uint16_t>(b);
  std::vector<float> vec(h.size()), ref(h.size());
  convert(h.data(), Dtype::f16, vec.data(), Dtype::f32, h.size());
  convert_scalar(h.data(), Dtype::f16, ref.data(), Dtype::f32, h.size());
  EXPECT_EQ(0, std::memcmp(vec.data(), ref.data(), h.size() * sizeof(float)));
  uint32_t snan;  // 0x7c01: a signalling nan with payload 1
  const float f = Half::from_bits(0x7c01);
  std::memcpy(&snan, &f, 4);
  EXPECT_EQ(snan, 0x7fc02000u);
}

TEST(Convert, IntegerAndBoolConversions) {
  const float src[4] = {1.7f, -2.5f, 0.0f, 3.0f};
  int32_t i[4];
  convert(src, Dtype::f32, i, Dtype::i32, 4);
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(i[1], -2);
  bool b[4];
  convert(src, Dtype::f32, b, Dtype::b8, 4);
  EXPECT_TRUE(b[0]);
  EXPECT_FALSE(b[2]);
  double d[4];
  convert(i, Dtype::i32, d, Dtype::f64, 4);
  EXPECT_EQ(d[3], 3.0);
}

TEST(Convert, FillWritesTheValueInEachType) {
  uint16_t h[3];
  fill(h, Dtype::f16, 2.5, 3);
  EXPECT_EQ(static_cast<float>(Half::from_bits(h[2])), 2.5f);
  int64_t l[2];
  fill(l, Dtype::i64, 7, 2);
  EXPECT_EQ(l[1], 7);
}

}  // namespace
}  // namespace mg
