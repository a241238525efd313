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

}  // namespace mg::ops
