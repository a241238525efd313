// The elementwise quantizers of NNabla's quantization layers, for host and
// device: BinarySigmoid, BinaryTanh, FixedPointQuantize and Pow2Quantize.
// Their forwards are step functions; their grads are NNabla's
// straight-through estimators (dy where the input is inside the quantizer's
// range, 0 outside). The math runs in fp32 and the result is rounded to the
// storage type once: quantized values with more significant bits than the
// type holds (bfloat16 has 8) come out rounded.
#pragma once

#include <cmath>
#include <string>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/fields.hpp>

namespace mg::ops {

/// 1 for x > 0, else 0; the grad is dy / 2 inside (-1, 1), else 0.
struct BinarySigmoid {
  static constexpr const char* name = "BinarySigmoid";
  static constexpr const char* snake = "binary_sigmoid";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x > 0.0f ? 1.0f : 0.0f; }
  MG_HD float grad(float x, float, float dy) const {
    return fabsf(x) >= 1.0f ? 0.0f : 0.5f * dy;
  }
};

/// 1 for x > 0, else -1; the grad is dy inside (-1, 1), else 0.
struct BinaryTanh {
  static constexpr const char* name = "BinaryTanh";
  static constexpr const char* snake = "binary_tanh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x > 0.0f ? 1.0f : -1.0f; }
  MG_HD float grad(float x, float, float dy) const {
    return fabsf(x) >= 1.0f ? 0.0f : dy;
  }
};

/// x rounded to a multiple of delta (halves away from zero) within n bits:
/// [-(2^(n-1) - 1) delta, (2^(n-1) - 1) delta] with sign, else [0, (2^n - 1)
/// delta]; outside, the bound. The grad is dy inside the bounds (0 outside)
/// with ste_fine_grained, else dy everywhere.
struct FixedPointQuantize {
  static constexpr const char* name = "FixedPointQuantize";
  static constexpr const char* snake = "fixed_point_quantize";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  bool sign = true;
  int n = 8;
  float delta = 0.0625f;
  bool ste_fine_grained = true;
  MG_HD float upper() const {
    return (ldexpf(1.0f, sign ? n - 1 : n) - 1.0f) * delta;
  }
  MG_HD float lower() const { return sign ? -upper() : 0.0f; }
  MG_HD float operator()(float x) const {
    const float hi = upper(), lo = lower();
    if (x > hi) return hi;
    if (x < lo) return lo;
    const float q = floorf(fabsf(x) / delta + 0.5f) * delta;
    return x < 0.0f ? -q : q;
  }
  MG_HD float grad(float x, float, float dy) const {
    if (!ste_fine_grained) return dy;
    return (x > upper() || x < lower()) ? 0.0f : dy;
  }
  /// Why the arguments are unusable, or "".
  std::string invalid() const {
    if (!(delta > 0.0f)) return msg("delta ", delta, " must be positive");
    const int bits = sign ? n - 1 : n;
    if (bits < 1 || n > 31) {
      return msg("n ", n, " must be in [", sign ? 2 : 1, ", 31]",
                 sign ? " (one bit holds the sign)" : "");
    }
    return "";
  }

  MG_FIELDS(sign, n, delta, ste_fine_grained);
};

/// |x| rounded to a power of two 2^round(log2 |x|) in [2^(m - (2^k - 1)),
/// 2^m], k = n minus a bit for the sign and one for zero; with_zero maps
/// |x| below the smallest power / sqrt(2) to 0. Without sign, negative x
/// become 0 (with_zero) or the smallest power. The grad (ste_fine_grained)
/// is 0 where the rounded power exceeds 2^m or, without sign, where x < 0;
/// else dy.
struct Pow2Quantize {
  static constexpr const char* name = "Pow2Quantize";
  static constexpr const char* snake = "pow2_quantize";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  bool sign = true;
  bool with_zero = true;
  int n = 8;
  int m = 1;
  bool ste_fine_grained = true;
  MG_HD int exponent_bits() const {
    return n - (sign ? 1 : 0) - (with_zero ? 1 : 0);
  }
  MG_HD float p_max() const { return ldexpf(1.0f, m); }
  MG_HD float p_min() const {
    return ldexpf(1.0f, m - ((1 << exponent_bits()) - 1));
  }
  MG_HD float operator()(float x) const {
    const float a = fabsf(x), hi = p_max(), lo = p_min();
    float q = exp2f(roundf(log2f(a)));
    if (q > hi) {
      q = hi;
    } else if (q < lo) {
      q = with_zero && a < lo * 0.70710678118654752f ? 0.0f : lo;
    }
    if (sign) return x < 0.0f ? -q : q;
    return x < 0.0f ? (with_zero ? 0.0f : lo) : q;
  }
  MG_HD float grad(float x, float, float dy) const {
    if (!ste_fine_grained) return dy;
    const float q = exp2f(roundf(log2f(fabsf(x))));
    if (q > p_max()) return 0.0f;
    return (!sign && x < 0.0f) ? 0.0f : dy;
  }
  std::string invalid() const {
    const int k = exponent_bits();
    if (k < 1 || k > 7) {
      return msg("n ", n, " leaves ", k,
                 " exponent bits after the sign and zero bits; 1 to 7 are "
                 "supported");
    }
    return "";
  }

  MG_FIELDS(sign, with_zero, n, m, ste_fine_grained);
};

}  // namespace mg::ops
