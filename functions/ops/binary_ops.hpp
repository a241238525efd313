// The math of the binary elementwise functions, for host and device.
// grad0 / grad1 (a, b, y, dy) return the grads of a and b.
#pragma once

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/graph/function_decl.hpp>

namespace mg::ops {

struct Add2 {
  static constexpr const char* name = "Add2";
  static constexpr const char* snake = "add2";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a + b; }
  MG_HD float grad0(float, float, float, float dy) const { return dy; }
  MG_HD float grad1(float, float, float, float dy) const { return dy; }
};

struct Sub2 {
  static constexpr const char* name = "Sub2";
  static constexpr const char* snake = "sub2";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a - b; }
  MG_HD float grad0(float, float, float, float dy) const { return dy; }
  MG_HD float grad1(float, float, float, float dy) const { return -dy; }
};

struct Mul2 {
  static constexpr const char* name = "Mul2";
  static constexpr const char* snake = "mul2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a * b; }
  MG_HD float grad0(float, float b, float, float dy) const { return dy * b; }
  MG_HD float grad1(float a, float, float, float dy) const { return dy * a; }
};

struct Div2 {
  static constexpr const char* name = "Div2";
  static constexpr const char* snake = "div2";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float a, float b) const { return a / b; }
  MG_HD float grad0(float, float b, float, float dy) const { return dy / b; }
  MG_HD float grad1(float a, float b, float, float dy) const {
    return -dy * a / (b * b);
  }
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

}  // namespace mg::ops
