// The math of the binary elementwise functions, for host and device.
// grad0 / grad1 (a, b, y, dy) return the grads of a and b.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/graph/function_decl.hpp>

namespace mg::ops {

struct Add2 {
  static constexpr const char* name = "Add2";
  static constexpr const char* snake = "add2";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  static constexpr bool grads_are_dy = true;  // BinaryFunction::inplace_grad
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return a + b; }
  MG_HD float grad0(float, float, float, float dy) const { return dy; }
  MG_HD float grad1(float, float, float, float dy) const { return dy; }

  MG_FIELDS(inplace);
};

struct Sub2 {
  static constexpr const char* name = "Sub2";
  static constexpr const char* snake = "sub2";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return a - b; }
  MG_HD float grad0(float, float, float, float dy) const { return dy; }
  MG_HD float grad1(float, float, float, float dy) const { return -dy; }

  MG_FIELDS(inplace);
};

struct Mul2 {
  static constexpr const char* name = "Mul2";
  static constexpr const char* snake = "mul2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return a * b; }
  MG_HD float grad0(float, float b, float, float dy) const { return dy * b; }
  MG_HD float grad1(float a, float, float, float dy) const { return dy * a; }

  MG_FIELDS(inplace);
};

struct Div2 {
  static constexpr const char* name = "Div2";
  static constexpr const char* snake = "div2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return a / b; }
  MG_HD float grad0(float, float b, float, float dy) const { return dy / b; }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return -dy * a / (b * b);
  }

  MG_FIELDS(inplace);
};

/// (a - b)^2, NNabla's SquaredError (a loss, broadcasting like the others).
struct SquaredError {
  static constexpr const char* name = "SquaredError";
  static constexpr const char* snake = "squared_error";
  /// A loss: fp32 under half and bfloat16, as the other losses.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return (a - b) * (a - b); }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return 2.0f * (a - b) * dy;
  }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return -2.0f * (a - b) * dy;
  }
};

/// max(a, b); on a tie the grad goes to a.
struct Maximum2 {
  static constexpr const char* name = "Maximum2";
  static constexpr const char* snake = "maximum2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a >= b ? a : b; }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return a >= b ? dy : 0.0f;
  }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return a >= b ? 0.0f : dy;
  }
};

/// min(a, b); on a tie the grad goes to a.
struct Minimum2 {
  static constexpr const char* name = "Minimum2";
  static constexpr const char* snake = "minimum2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a <= b ? a : b; }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return a <= b ? dy : 0.0f;
  }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return a <= b ? 0.0f : dy;
  }
};

// ---- comparisons and logical ops (NNabla's Logical category): y is 1 or 0
// in the type_config's type (exact in half and bfloat16), ready to multiply
// into a mask; has_grad = false: their inputs get zero grads ----

/// a == b.
struct Equal {
  static constexpr const char* name = "Equal";
  static constexpr const char* snake = "equal";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return a == b ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a != b.
struct NotEqual {
  static constexpr const char* name = "NotEqual";
  static constexpr const char* snake = "not_equal";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return a != b ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a > b.
struct Greater {
  static constexpr const char* name = "Greater";
  static constexpr const char* snake = "greater";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a > b ? 1.0f : 0.0f; }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a >= b.
struct GreaterEqual {
  static constexpr const char* name = "GreaterEqual";
  static constexpr const char* snake = "greater_equal";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return a >= b ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a < b.
struct Less {
  static constexpr const char* name = "Less";
  static constexpr const char* snake = "less";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a < b ? 1.0f : 0.0f; }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a <= b.
struct LessEqual {
  static constexpr const char* name = "LessEqual";
  static constexpr const char* snake = "less_equal";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return a <= b ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a and b, nonzero meaning true.
struct LogicalAnd {
  static constexpr const char* name = "LogicalAnd";
  static constexpr const char* snake = "logical_and";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a or b, nonzero meaning true.
struct LogicalOr {
  static constexpr const char* name = "LogicalOr";
  static constexpr const char* snake = "logical_or";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// a xor b, nonzero meaning true.
struct LogicalXor {
  static constexpr const char* name = "LogicalXor";
  static constexpr const char* snake = "logical_xor";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return ((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

/// NNabla's BinaryError: 1 where x and the target t fall on different
/// sides of 0.5 ((x >= 0.5) != (t >= 0.5)), else 0. A metric: no grad.
struct BinaryError {
  static constexpr const char* name = "BinaryError";
  static constexpr const char* snake = "binary_error";
  static constexpr bool has_grad = false;
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const {
    return ((a >= 0.5f) != (b >= 0.5f)) ? 1.0f : 0.0f;
  }
  MG_HD float grad0(float, float, float, float) const { return 0.0f; }
  MG_HD float grad1(float, float, float, float) const { return 0.0f; }
};

// ---- more arithmetic and math ----

/// x0 + x1 with broadcasting (NNabla's BcAdd2, the broadcasting form of
/// Add2; here every binary function broadcasts).
struct BcAdd2 {
  static constexpr const char* name = "BcAdd2";
  static constexpr const char* snake = "bc_add2";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return a + b; }
  MG_HD float grad0(float, float, float, float dy) const { return dy; }
  MG_HD float grad1(float, float, float, float dy) const { return dy; }

  MG_FIELDS(inplace);
};

/// x0 ^ x1 (NNabla's Pow2); the grad of x1 is y log(x0) dy, defined for
/// x0 > 0.
struct Pow2 {
  static constexpr const char* name = "Pow2";
  static constexpr const char* snake = "pow2";
  static constexpr bool grad_uses_x = true, grad_uses_y = true;
  /// NNabla's argument, accepted and ignored: it never changes y (NNabla
  /// marks it obsolete too), and our engine decides in-place forward itself.
  bool inplace = false;
  MG_HD float operator()(float a, float b) const { return powf(a, b); }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return b * powf(a, b - 1.0f) * dy;
  }
  MG_HD float grad1(float a, float, float y, float dy) const {
    return y * logf(a) * dy;
  }

  MG_FIELDS(inplace);
};

/// atan2(x0, x1): the angle of the point (x1, x0).
struct ATan2 {
  static constexpr const char* name = "ATan2";
  static constexpr const char* snake = "atan2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return atan2f(a, b); }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return b / (a * a + b * b) * dy;
  }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return -a / (a * a + b * b) * dy;
  }
};

// ---- elementwise losses: fp32 under half and bfloat16, as every loss ----

/// |x0 - x1| (NNabla's AbsoluteError); the grad at 0 is 0.
struct AbsoluteError {
  static constexpr const char* name = "AbsoluteError";
  static constexpr const char* snake = "absolute_error";
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return fabsf(a - b); }
  MG_HD float grad0(float a, float b, float, float dy) const {
    return a > b ? dy : (a < b ? -dy : 0.0f);
  }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return a > b ? -dy : (a < b ? dy : 0.0f);
  }
};

/// NNabla's HuberLoss: d^2 for |d| < delta, delta (2 |d| - delta) beyond,
/// with d = x0 - x1 (twice the textbook Huber loss, as NNabla defines it).
struct HuberLoss {
  static constexpr const char* name = "HuberLoss";
  static constexpr const char* snake = "huber_loss";
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float delta = 1.0f;
  MG_HD float operator()(float a, float b) const {
    const float d = a - b, ad = fabsf(d);
    return ad < delta ? d * d : delta * (2.0f * ad - delta);
  }
  MG_HD float grad0(float a, float b, float, float dy) const {
    const float d = a - b;
    return (fabsf(d) < delta ? 2.0f * d : (d > 0.0f ? 2.0f : -2.0f) * delta) *
           dy;
  }
  MG_HD float grad1(float a, float b, float y, float dy) const {
    return -grad0(a, b, y, dy);
  }

  MG_FIELDS(delta);
};

/// |x0 - x1| - epsilon where that is positive, else 0.
struct EpsilonInsensitiveLoss {
  static constexpr const char* name = "EpsilonInsensitiveLoss";
  static constexpr const char* snake = "epsilon_insensitive_loss";
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float epsilon = 0.1f;
  MG_HD float operator()(float a, float b) const {
    const float ad = fabsf(a - b);
    return ad > epsilon ? ad - epsilon : 0.0f;
  }
  MG_HD float grad0(float a, float b, float, float dy) const {
    const float d = a - b;
    return fabsf(d) > epsilon ? (d > 0.0f ? dy : -dy) : 0.0f;
  }
  MG_HD float grad1(float a, float b, float y, float dy) const {
    return -grad0(a, b, y, dy);
  }

  MG_FIELDS(epsilon);
};

/// -(x1 log x0 + (1 - x1) log(1 - x0)) for a probability x0 and a target
/// x1 in [0, 1] (NNabla's BinaryCrossEntropy); the logs are taken of at
/// least 1e-12, so x0 of exactly 0 or 1 gives a large finite loss, not inf.
struct BinaryCrossEntropy {
  static constexpr const char* name = "BinaryCrossEntropy";
  static constexpr const char* snake = "binary_cross_entropy";
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr float kTiny = 1e-12f;
  MG_HD float operator()(float x, float t) const {
    return -(t * logf(fmaxf(x, kTiny)) +
             (1.0f - t) * logf(fmaxf(1.0f - x, kTiny)));
  }
  MG_HD float grad0(float x, float t, float, float dy) const {
    return (x - t) / fmaxf(x * (1.0f - x), kTiny) * dy;
  }
  MG_HD float grad1(float x, float, float, float dy) const {
    return (logf(fmaxf(1.0f - x, kTiny)) - logf(fmaxf(x, kTiny))) * dy;
  }
};

}  // namespace mg::ops
