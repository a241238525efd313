// The math of the unary elementwise functions, for host and device.
//
// Each functor is the function's options too: its fields are the function's
// arguments. grad(x, y, dy) returns dx; grad_uses_x / grad_uses_y say which
// of x and y backward reads, so clear_no_need_grad can free the others.
// long_math, where a functor has it, says its math is long (an exp, log,
// tanh or erf per element): the CPU loops then ask for their arrays' lines
// ahead, which the out-of-order window, full of that math, does not reach
// (cpu/elementwise.hpp); a grad that reads x recomputes the math, one that
// reads y (Sigmoid's, Tanh's, Exp's) is short.
//
// Over 600 lines on purpose: one short functor per unary function (about
// 90), a table read top to bottom; splitting it would scatter the list the
// registration (op_list.hpp) mirrors.
#pragma once

#include <cmath>
#include <cstdint>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>
#include <mixgraph/graph/function_decl.hpp>

namespace mg::ops {

// The grad reads y (y > 0 exactly where x > 0, nan and -0 included), not x:
// then clear_no_need_grad frees x, typically a convolution's output, as
// PyTorch's threshold_backward does.
struct ReLU {
  static constexpr const char* name = "ReLU";
  static constexpr const char* snake = "relu";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
  MG_HD float grad(float, float y, float dy) const {
    return y > 0.0f ? dy : 0.0f;
  }
  // x > 0 read off the bits of a half or bfloat16 (inf: +inf's bits): the
  // bits less one, unsigned, are below +inf's for exactly the values above
  // zero (+inf too; +0 wraps, negatives and nans land above). Kernels run
  // ReLU on 16-bit data this way, with the results of the two above and no
  // conversion (a nan dy passes with its payload as it is).
  MG_HD static bool positive_bits(uint16_t b, uint16_t inf) {
    return static_cast<uint16_t>(b - 1u) < inf;
  }

  MG_FIELDS(inplace);
};

struct LeakyReLU {
  static constexpr const char* name = "LeakyReLU";
  static constexpr const char* snake = "leaky_relu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float alpha = 0.1f;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float x) const { return x > 0.0f ? x : alpha * x; }
  MG_HD float grad(float x, float, float dy) const {
    return x > 0.0f ? dy : alpha * dy;
  }

  MG_FIELDS(alpha, inplace);
};

struct Sigmoid {
  static constexpr const char* name = "Sigmoid";
  static constexpr const char* snake = "sigmoid";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return vmath::sigmoid(x); }
  MG_HD float grad(float, float y, float dy) const {
    return dy * y * (1.0f - y);
  }
};

struct Tanh {
  static constexpr const char* name = "Tanh";
  static constexpr const char* snake = "tanh";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return vmath::tanh(x); }
  MG_HD float grad(float, float y, float dy) const {
    return dy * (1.0f - y * y);
  }
};

struct ELU {
  static constexpr const char* name = "ELU";
  static constexpr const char* snake = "elu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  float alpha = 1.0f;
  MG_HD float operator()(float x) const {
    return x >= 0.0f ? x : alpha * vmath::expm1_nonpositive(x);
  }
  MG_HD float grad(float x, float, float dy) const {
    return x >= 0.0f ? dy : dy * alpha * vmath::exp(x);
  }

  MG_FIELDS(alpha);
};

/// NNabla's GELU: the tanh approximation
/// 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), computed as
/// x sigmoid(2 u), which it equals: one exp and one division, where tanh
/// took an expm1 and the sum 1 + tanh(u) lost the digits of its tail (x
/// far below 0, where 1 + tanh(u) cancels).
struct GELU {
  static constexpr const char* name = "GELU";
  static constexpr const char* snake = "gelu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  static constexpr float k2C = 1.5957691216057308f;  // 2 sqrt(2 / pi)
  static constexpr float kA = 0.044715f;
  MG_HD float operator()(float x) const {
    return x * vmath::sigmoid(k2C * (x + kA * x * x * x));
  }
  // d/dx x s(v) = s + x s (1 - s) v', v = 2 u.
  MG_HD float grad(float x, float, float dy) const {
    const float s = vmath::sigmoid(k2C * (x + kA * x * x * x));
    const float dv = k2C * (1.0f + 3.0f * kA * x * x);
    return dy * (s + x * s * (1.0f - s) * dv);
  }
};

struct Exp {
  static constexpr const char* name = "Exp";
  static constexpr const char* snake = "exp";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return vmath::exp(x); }
  MG_HD float grad(float, float y, float dy) const { return dy * y; }
};

struct Log {
  static constexpr const char* name = "Log";
  static constexpr const char* snake = "log";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return vmath::log(x); }
  MG_HD float grad(float x, float, float dy) const { return dy / x; }
};

struct Identity {
  static constexpr const char* name = "Identity";
  static constexpr const char* snake = "identity";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x; }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

/// y = x with the backward cut: no grad reaches x (NNabla's Unlink, a
/// function-shaped Variable::unlink for networks built from files).
struct Unlink {
  static constexpr const char* name = "Unlink";
  static constexpr const char* snake = "unlink";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x; }
  MG_HD float grad(float, float, float) const { return 0.0f; }
};

struct AddScalar {
  static constexpr const char* name = "AddScalar";
  static constexpr const char* snake = "add_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float x) const { return x + val; }
  MG_HD float grad(float, float, float dy) const { return dy; }

  MG_FIELDS(val, inplace);
};

struct MulScalar {
  static constexpr const char* name = "MulScalar";
  static constexpr const char* snake = "mul_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float x) const { return x * val; }
  MG_HD float grad(float, float, float dy) const { return dy * val; }

  MG_FIELDS(val, inplace);
};

struct PowScalar {
  static constexpr const char* name = "PowScalar";
  static constexpr const char* snake = "pow_scalar";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 1.0f;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float x) const { return powf(x, val); }
  MG_HD float grad(float x, float, float dy) const {
    return dy * val * powf(x, val - 1.0f);
  }

  MG_FIELDS(val, inplace);
};

/// NNabla's SoftPlus: log(1 + exp(beta x)) / beta, computed without overflow.
struct SoftPlus {
  static constexpr const char* name = "SoftPlus";
  static constexpr const char* snake = "softplus";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  float beta = 1.0f;
  MG_HD float operator()(float x) const {
    const float bx = beta * x;
    return ((bx > 0.0f ? bx : 0.0f) + vmath::log1p(vmath::exp(-fabsf(bx)))) /
           beta;
  }
  MG_HD float grad(float x, float, float dy) const {
    return dy * vmath::sigmoid(beta * x);
  }

  MG_FIELDS(beta);
};

/// x sigmoid(x) (SiLU).
struct Swish {
  static constexpr const char* name = "Swish";
  static constexpr const char* snake = "swish";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return x * vmath::sigmoid(x); }
  MG_HD float grad(float x, float, float dy) const {
    const float s = vmath::sigmoid(x);
    return dy * s * (1.0f + x * (1.0f - s));
  }
};

/// max(-1, min(1, x)); the grad passes only strictly inside (-1, 1).
struct HardTanh {
  static constexpr const char* name = "HardTanh";
  static constexpr const char* snake = "hard_tanh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const {
    return x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
  }
  MG_HD float grad(float x, float, float dy) const {
    return (x > -1.0f && x < 1.0f) ? dy : 0.0f;
  }
};

/// min(max(x, min), max); the grad passes where min <= x <= max.
struct ClipByValue {
  static constexpr const char* name = "ClipByValue";
  static constexpr const char* snake = "clip_by_value";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float min = -1.0f, max = 1.0f;
  MG_HD float operator()(float x) const {
    return x < min ? min : (x > max ? max : x);
  }
  MG_HD float grad(float x, float, float dy) const {
    return (x >= min && x <= max) ? dy : 0.0f;
  }

  MG_FIELDS(min, max);
};

struct Sqrt {
  static constexpr const char* name = "Sqrt";
  static constexpr const char* snake = "sqrt";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return sqrtf(x); }
  MG_HD float grad(float, float y, float dy) const { return 0.5f * dy / y; }
};

/// 1 / sqrt(x).
struct Rsqrt {
  static constexpr const char* name = "Rsqrt";
  static constexpr const char* snake = "rsqrt";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return 1.0f / sqrtf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return -0.5f * dy / (x * sqrtf(x));
  }
};

/// |x|; the grad at 0 is 0 (sign(0) = 0).
struct Abs {
  static constexpr const char* name = "Abs";
  static constexpr const char* snake = "abs";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return fabsf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f);
  }
};

/// The Gauss error function.
struct Erf {
  static constexpr const char* name = "Erf";
  static constexpr const char* snake = "erf";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  static constexpr float kC = 1.1283791670955126f;  // 2 / sqrt(pi)
  MG_HD float operator()(float x) const { return erff(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy * kC * vmath::exp(-x * x);
  }
};

/// sin(x) (NNabla's Sin); its grad is cos(x) dy.
struct Sin {
  static constexpr const char* name = "Sin";
  static constexpr const char* snake = "sin";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return sinf(x); }
  MG_HD float grad(float x, float, float dy) const { return cosf(x) * dy; }
};

// ---- trigonometric and hyperbolic functions and their inverses (NNabla's
// Math category); each grad is the derivative times dy, in fp32 ----

/// cos(x).
struct Cos {
  static constexpr const char* name = "Cos";
  static constexpr const char* snake = "cos";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return cosf(x); }
  MG_HD float grad(float x, float, float dy) const { return -sinf(x) * dy; }
};

/// tan(x); its grad is (1 + y^2) dy.
struct Tan {
  static constexpr const char* name = "Tan";
  static constexpr const char* snake = "tan";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return tanf(x); }
  MG_HD float grad(float, float y, float dy) const {
    return (1.0f + y * y) * dy;
  }
};

/// asin(x), for |x| <= 1.
struct ASin {
  static constexpr const char* name = "ASin";
  static constexpr const char* snake = "asin";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return asinf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy / sqrtf(1.0f - x * x);
  }
};

/// acos(x), for |x| <= 1.
struct ACos {
  static constexpr const char* name = "ACos";
  static constexpr const char* snake = "acos";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return acosf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return -dy / sqrtf(1.0f - x * x);
  }
};

/// atan(x).
struct ATan {
  static constexpr const char* name = "ATan";
  static constexpr const char* snake = "atan";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return atanf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy / (1.0f + x * x);
  }
};

/// sinh(x).
struct Sinh {
  static constexpr const char* name = "Sinh";
  static constexpr const char* snake = "sinh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return sinhf(x); }
  MG_HD float grad(float x, float, float dy) const { return coshf(x) * dy; }
};

/// cosh(x).
struct Cosh {
  static constexpr const char* name = "Cosh";
  static constexpr const char* snake = "cosh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return coshf(x); }
  MG_HD float grad(float x, float, float dy) const { return sinhf(x) * dy; }
};

/// asinh(x).
struct ASinh {
  static constexpr const char* name = "ASinh";
  static constexpr const char* snake = "asinh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return asinhf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy / sqrtf(x * x + 1.0f);
  }
};

/// acosh(x), for x >= 1.
struct ACosh {
  static constexpr const char* name = "ACosh";
  static constexpr const char* snake = "acosh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return acoshf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy / sqrtf(x * x - 1.0f);
  }
};

/// atanh(x), for |x| < 1.
struct ATanh {
  static constexpr const char* name = "ATanh";
  static constexpr const char* snake = "atanh";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return atanhf(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy / (1.0f - x * x);
  }
};

// ---- rounding: NNabla passes the grad straight through (dx = dy), the
// straight-through estimator quantization-aware training relies on ----

/// x rounded to the nearest integer, halves away from zero; grad dy.
struct Round {
  static constexpr const char* name = "Round";
  static constexpr const char* snake = "round";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return roundf(x); }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

/// The smallest integer >= x; grad dy (straight through).
struct Ceil {
  static constexpr const char* name = "Ceil";
  static constexpr const char* snake = "ceil";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return ceilf(x); }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

/// The largest integer <= x; grad dy (straight through).
struct Floor {
  static constexpr const char* name = "Floor";
  static constexpr const char* snake = "floor";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return floorf(x); }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

/// 1 for x > 0, -1 for x < 0, alpha for x = 0 (NNabla's Sign); grad dy
/// (straight through, as NNabla's).
struct Sign {
  static constexpr const char* name = "Sign";
  static constexpr const char* snake = "sign";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float alpha = 1.0f;
  MG_HD float operator()(float x) const {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : alpha);
  }
  MG_HD float grad(float, float, float dy) const { return dy; }

  MG_FIELDS(alpha);
};

// ---- activations ----

/// scale x for x > 0, scale alpha (exp(x) - 1) otherwise; NNabla's defaults
/// are the self-normalizing constants of Klambauer et al.
struct SELU {
  static constexpr const char* name = "SELU";
  static constexpr const char* snake = "selu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  float scale = 1.05070098735548f, alpha = 1.673263242354377f;
  MG_HD float operator()(float x) const {
    return x > 0.0f ? scale * x : scale * alpha * vmath::expm1_nonpositive(x);
  }
  MG_HD float grad(float x, float, float dy) const {
    return x > 0.0f ? scale * dy : scale * alpha * vmath::exp(x) * dy;
  }

  MG_FIELDS(scale, alpha);
};

/// min(max(x, 0), 6); the grad passes strictly inside (0, 6).
struct ReLU6 {
  static constexpr const char* name = "ReLU6";
  static constexpr const char* snake = "relu6";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const {
    return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
  }
  MG_HD float grad(float x, float, float dy) const {
    return (x > 0.0f && x < 6.0f) ? dy : 0.0f;
  }
};

/// min(max(0.2 x + 0.5, 0), 1); the grad 0.2 dy strictly inside (-2.5, 2.5).
struct HardSigmoid {
  static constexpr const char* name = "HardSigmoid";
  static constexpr const char* snake = "hard_sigmoid";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const {
    const float v = 0.2f * x + 0.5f;
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
  }
  MG_HD float grad(float x, float, float dy) const {
    return (x > -2.5f && x < 2.5f) ? 0.2f * dy : 0.0f;
  }
};

/// log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), without overflow.
struct LogSigmoid {
  static constexpr const char* name = "LogSigmoid";
  static constexpr const char* snake = "log_sigmoid";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const {
    return (x < 0.0f ? x : 0.0f) - vmath::log1p(vmath::exp(-fabsf(x)));
  }
  MG_HD float grad(float x, float, float dy) const {
    return dy * vmath::sigmoid(-x);
  }
};

/// x / (1 + |x|).
struct SoftSign {
  static constexpr const char* name = "SoftSign";
  static constexpr const char* snake = "softsign";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x / (1.0f + fabsf(x)); }
  MG_HD float grad(float x, float, float dy) const {
    const float d = 1.0f + fabsf(x);
    return dy / (d * d);
  }
};

/// x - tanh(x).
struct TanhShrink {
  static constexpr const char* name = "TanhShrink";
  static constexpr const char* snake = "tanh_shrink";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  MG_HD float operator()(float x) const { return x - vmath::tanh(x); }
  MG_HD float grad(float x, float, float dy) const {
    const float t = vmath::tanh(x);
    return t * t * dy;
  }
};

/// sin(x) / x, and 1 at x = 0 (NNabla's unnormalized sinc).
struct Sinc {
  static constexpr const char* name = "Sinc";
  static constexpr const char* snake = "sinc";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const {
    return x == 0.0f ? 1.0f : sinf(x) / x;
  }
  MG_HD float grad(float x, float, float dy) const {
    return x == 0.0f ? 0.0f : (cosf(x) - sinf(x) / x) / x * dy;
  }
};

/// x tanh(softplus(x)) (Misra 2019).
struct Mish {
  static constexpr const char* name = "Mish";
  static constexpr const char* snake = "mish";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr bool long_math = true;
  MG_HD static float softplus(float x) {
    return (x > 0.0f ? x : 0.0f) + vmath::log1p(vmath::exp(-fabsf(x)));
  }
  MG_HD float operator()(float x) const { return x * vmath::tanh(softplus(x)); }
  MG_HD float grad(float x, float, float dy) const {
    const float t = vmath::tanh(softplus(x));
    const float s = vmath::sigmoid(x);
    return (t + x * (1.0f - t * t) * s) * dy;
  }
};

// ---- scalar arithmetic with x on the right, and scalar max/min ----

/// val - x.
struct RSubScalar {
  static constexpr const char* name = "RSubScalar";
  static constexpr const char* snake = "r_sub_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return val - x; }
  MG_HD float grad(float, float, float dy) const { return -dy; }

  MG_FIELDS(val);
};

/// val / x; its grad is -y / x dy.
struct RDivScalar {
  static constexpr const char* name = "RDivScalar";
  static constexpr const char* snake = "r_div_scalar";
  static constexpr bool grad_uses_x = true, grad_uses_y = true;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return val / x; }
  MG_HD float grad(float x, float y, float dy) const { return -y / x * dy; }

  MG_FIELDS(val);
};

/// val ^ x; its grad is y log(val) dy.
struct RPowScalar {
  static constexpr const char* name = "RPowScalar";
  static constexpr const char* snake = "r_pow_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return powf(val, x); }
  MG_HD float grad(float, float y, float dy) const {
    return y * logf(val) * dy;
  }

  MG_FIELDS(val);
};

/// max(x, val); the grad passes where x > val (NNabla's rule).
struct MaximumScalar {
  static constexpr const char* name = "MaximumScalar";
  static constexpr const char* snake = "maximum_scalar";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x > val ? x : val; }
  MG_HD float grad(float x, float, float dy) const {
    return x > val ? dy : 0.0f;
  }

  MG_FIELDS(val);
};

/// min(x, val); the grad passes where x < val (NNabla's rule).
struct MinimumScalar {
  static constexpr const char* name = "MinimumScalar";
  static constexpr const char* snake = "minimum_scalar";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x < val ? x : val; }
  MG_HD float grad(float x, float, float dy) const {
    return x < val ? dy : 0.0f;
  }

  MG_FIELDS(val);
};

// nan and inf tests that mean the same on host and device, whatever the
// <cmath> overloads in scope (nan is the one value unequal to itself).
MG_HD inline bool is_nan(float x) { return x != x; }
MG_HD inline bool is_inf(float x) { return fabsf(x) > 3.40282347e+38f; }

// ---- comparisons with a scalar, logical ops and the nan/inf tests: 1 or 0
// in the type_config's type; has_grad = false (zero grads) ----

/// x == val.
struct EqualScalar {
  static constexpr const char* name = "EqualScalar";
  static constexpr const char* snake = "equal_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x == val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x != val.
struct NotEqualScalar {
  static constexpr const char* name = "NotEqualScalar";
  static constexpr const char* snake = "not_equal_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x != val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x > val.
struct GreaterScalar {
  static constexpr const char* name = "GreaterScalar";
  static constexpr const char* snake = "greater_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x > val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x >= val.
struct GreaterEqualScalar {
  static constexpr const char* name = "GreaterEqualScalar";
  static constexpr const char* snake = "greater_equal_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x >= val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x < val.
struct LessScalar {
  static constexpr const char* name = "LessScalar";
  static constexpr const char* snake = "less_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x < val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x <= val.
struct LessEqualScalar {
  static constexpr const char* name = "LessEqualScalar";
  static constexpr const char* snake = "less_equal_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x <= val ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x and val, nonzero x meaning true.
struct LogicalAndScalar {
  static constexpr const char* name = "LogicalAndScalar";
  static constexpr const char* snake = "logical_and_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  bool val = true;
  MG_HD float operator()(float x) const {
    return (x != 0.0f && val) ? 1.0f : 0.0f;
  }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x or val, nonzero x meaning true.
struct LogicalOrScalar {
  static constexpr const char* name = "LogicalOrScalar";
  static constexpr const char* snake = "logical_or_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  bool val = true;
  MG_HD float operator()(float x) const {
    return (x != 0.0f || val) ? 1.0f : 0.0f;
  }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// x xor val, nonzero x meaning true.
struct LogicalXorScalar {
  static constexpr const char* name = "LogicalXorScalar";
  static constexpr const char* snake = "logical_xor_scalar";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  bool val = true;
  MG_HD float operator()(float x) const {
    return ((x != 0.0f) != val) ? 1.0f : 0.0f;
  }
  MG_HD float grad(float, float, float) const { return 0.0f; }

  MG_FIELDS(val);
};

/// not x: 1 where x is 0.
struct LogicalNot {
  static constexpr const char* name = "LogicalNot";
  static constexpr const char* snake = "logical_not";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return (x == 0.0f) ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }
};

/// 1 where x is nan.
struct IsNaN {
  static constexpr const char* name = "IsNaN";
  static constexpr const char* snake = "isnan";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return is_nan(x) ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }
};

/// 1 where x is +inf or -inf.
struct IsInf {
  static constexpr const char* name = "IsInf";
  static constexpr const char* snake = "isinf";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return is_inf(x) ? 1.0f : 0.0f; }
  MG_HD float grad(float, float, float) const { return 0.0f; }
};

/// x, with every nan replaced by val; the grad passes where x is not nan.
struct ResetNaN {
  static constexpr const char* name = "ResetNaN";
  static constexpr const char* snake = "reset_nan";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 0.0f;
  MG_HD float operator()(float x) const { return is_nan(x) ? val : x; }
  MG_HD float grad(float x, float, float dy) const {
    return is_nan(x) ? 0.0f : dy;
  }

  MG_FIELDS(val);
};

/// x, with every +inf and -inf replaced by val; the grad passes where x is
/// finite (or nan).
struct ResetInf {
  static constexpr const char* name = "ResetInf";
  static constexpr const char* snake = "reset_inf";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 0.0f;
  MG_HD float operator()(float x) const { return is_inf(x) ? val : x; }
  MG_HD float grad(float x, float, float dy) const {
    return is_inf(x) ? 0.0f : dy;
  }

  MG_FIELDS(val);
};

}  // namespace mg::ops
