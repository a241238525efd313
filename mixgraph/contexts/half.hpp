// Half (IEEE 754 binary16) and BFloat16 value types.
//
// Both are storage types: arithmetic converts to float. Conversions from
// float round to nearest even, overflow to inf and keep nan a (quiet) nan;
// half subnormals are exact in both directions.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include <mixgraph/contexts/macros.hpp>

namespace mg {

namespace detail {

MG_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

MG_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// float -> binary16 bits, round to nearest even.
MG_HD inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) {  // >= 65520 rounds to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25
    // Subnormal: shift the full mantissa into place, round to nearest even.
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24 bits shifted out
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Normal: rebias the exponent and round the 13 dropped bits.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// binary16 bits -> float (exact). A signalling nan comes back quiet (the
// payload kept), as F16C's and AVX-512's vcvtph2ps give it: the host's
// vector paths, this scalar path and the CUDA conversion kernels then agree
// bit for bit on all 65536 patterns.
MG_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) {
    return bits_float(sign | 0x7f800000u | (mant << 13) |
                      (mant ? 0x400000u : 0u));
  }
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal half: value = mant * 2^-24, exactly representable in float.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
  return sign ? -v : v;
}

// float -> bfloat16 bits, round to nearest even; nan stays a quiet nan.
MG_HD inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

MG_HD inline float bf16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

}  // namespace detail

struct FromBits {};

/// IEEE 754 binary16. Converts to and from float; arithmetic is in float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  MG_HD Half(float f) : bits(detail::float_to_half_bits(f)) {}
  MG_HD Half(double d) : Half(static_cast<float>(d)) {}
  MG_HD Half(int i) : Half(static_cast<float>(i)) {}
  MG_HD constexpr Half(uint16_t b, FromBits) : bits(b) {}
  MG_HD operator float() const { return detail::half_bits_to_float(bits); }
  MG_HD static constexpr Half from_bits(uint16_t b) {
    return Half(b, FromBits{});
  }
};

/// bfloat16: the top 16 bits of a float. Arithmetic is in float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  MG_HD BFloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  MG_HD BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  MG_HD BFloat16(int i) : BFloat16(static_cast<float>(i)) {}
  MG_HD constexpr BFloat16(uint16_t b, FromBits) : bits(b) {}
  MG_HD operator float() const { return detail::bf16_bits_to_float(bits); }
  MG_HD static constexpr BFloat16 from_bits(uint16_t b) {
    return BFloat16(b, FromBits{});
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

/// The type a kernel accumulates in: float for the 16-bit types.
template <class T>
struct AccumTypeOf {
  using type = T;
};
template <>
struct AccumTypeOf<Half> {
  using type = float;
};
template <>
struct AccumTypeOf<BFloat16> {
  using type = float;
};
template <class T>
using AccumType = typename AccumTypeOf<T>::type;

}  // namespace mg

namespace std {

template <>
class numeric_limits<mg::Half> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool has_denorm_loss = false;
  static constexpr float_denorm_style has_denorm = denorm_present;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
  static constexpr mg::Half min() noexcept {
    return mg::Half::from_bits(0x0400);
  }
  static constexpr mg::Half lowest() noexcept {
    return mg::Half::from_bits(0xfbff);
  }
  static constexpr mg::Half max() noexcept {
    return mg::Half::from_bits(0x7bff);
  }
  static constexpr mg::Half epsilon() noexcept {
    return mg::Half::from_bits(0x1400);
  }
  static constexpr mg::Half round_error() noexcept {
    return mg::Half::from_bits(0x3800);
  }
  static constexpr mg::Half infinity() noexcept {
    return mg::Half::from_bits(0x7c00);
  }
  static constexpr mg::Half quiet_NaN() noexcept {
    return mg::Half::from_bits(0x7e00);
  }
  static constexpr mg::Half signaling_NaN() noexcept {
    return mg::Half::from_bits(0x7d00);
  }
  static constexpr mg::Half denorm_min() noexcept {
    return mg::Half::from_bits(0x0001);
  }
};

template <>
class numeric_limits<mg::BFloat16> {
 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool has_denorm_loss = false;
  static constexpr float_denorm_style has_denorm = denorm_present;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
  static constexpr mg::BFloat16 min() noexcept {
    return mg::BFloat16::from_bits(0x0080);
  }
  static constexpr mg::BFloat16 lowest() noexcept {
    return mg::BFloat16::from_bits(0xff7f);
  }
  static constexpr mg::BFloat16 max() noexcept {
    return mg::BFloat16::from_bits(0x7f7f);
  }
  static constexpr mg::BFloat16 epsilon() noexcept {
    return mg::BFloat16::from_bits(0x3c00);
  }
  static constexpr mg::BFloat16 round_error() noexcept {
    return mg::BFloat16::from_bits(0x3f00);
  }
  static constexpr mg::BFloat16 infinity() noexcept {
    return mg::BFloat16::from_bits(0x7f80);
  }
  static constexpr mg::BFloat16 quiet_NaN() noexcept {
    return mg::BFloat16::from_bits(0x7fc0);
  }
  static constexpr mg::BFloat16 signaling_NaN() noexcept {
    return mg::BFloat16::from_bits(0x7fa0);
  }
  static constexpr mg::BFloat16 denorm_min() noexcept {
    return mg::BFloat16::from_bits(0x0001);
  }
};

}  // namespace std
