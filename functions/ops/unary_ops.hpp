// The math of the unary elementwise functions, for host and device.
//
// Each functor is the function's options too: its fields are the function's
// arguments. grad(x, y, dy) returns dx; grad_uses_x / grad_uses_y say which
// of x and y backward reads, so clear_no_need_grad can free the others.
#pragma once

#include <cmath>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/graph/function_decl.hpp>

namespace mg::ops {

// The grad reads y (y > 0 exactly where x > 0, nan and -0 included), not x:
// then clear_no_need_grad frees x, typically a convolution's output, as
// PyTorch's threshold_backward does.
struct ReLU {
  static constexpr const char* name = "ReLU";
  static constexpr const char* snake = "relu";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
  MG_HD float grad(float, float y, float dy) const {
    return y > 0.0f ? dy : 0.0f;
  }
};

struct LeakyReLU {
  static constexpr const char* name = "LeakyReLU";
  static constexpr const char* snake = "leaky_relu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float alpha = 0.1f;
  MG_HD float operator()(float x) const { return x > 0.0f ? x : alpha * x; }
  MG_HD float grad(float x, float, float dy) const {
    return x > 0.0f ? dy : alpha * dy;
  }
};

struct Sigmoid {
  static constexpr const char* name = "Sigmoid";
  static constexpr const char* snake = "sigmoid";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
  MG_HD float grad(float, float y, float dy) const {
    return dy * y * (1.0f - y);
  }
};

struct Tanh {
  static constexpr const char* name = "Tanh";
  static constexpr const char* snake = "tanh";
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return tanhf(x); }
  MG_HD float grad(float, float y, float dy) const {
    return dy * (1.0f - y * y);
  }
};

struct ELU {
  static constexpr const char* name = "ELU";
  static constexpr const char* snake = "elu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float alpha = 1.0f;
  MG_HD float operator()(float x) const {
    return x >= 0.0f ? x : alpha * (expf(x) - 1.0f);
  }
  MG_HD float grad(float x, float, float dy) const {
    return x >= 0.0f ? dy : dy * alpha * expf(x);
  }
};

/// NNabla's GELU: the tanh approximation
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
struct GELU {
  static constexpr const char* name = "GELU";
  static constexpr const char* snake = "gelu";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  static constexpr float kC = 0.7978845608028654f;  // sqrt(2 / pi)
  MG_HD float operator()(float x) const {
    return 0.5f * x * (1.0f + tanhf(kC * (x + 0.044715f * x * x * x)));
  }
  MG_HD float grad(float x, float, float dy) const {
    const float t = tanhf(kC * (x + 0.044715f * x * x * x));
    const float dt = kC * (1.0f + 3.0f * 0.044715f * x * x) * (1.0f - t * t);
    return dy * 0.5f * (1.0f + t + x * dt);
  }
};

struct Exp {
  static constexpr const char* name = "Exp";
  static constexpr const char* snake = "exp";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = false, grad_uses_y = true;
  MG_HD float operator()(float x) const { return expf(x); }
  MG_HD float grad(float, float y, float dy) const { return dy * y; }
};

struct Log {
  static constexpr const char* name = "Log";
  static constexpr const char* snake = "log";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return logf(x); }
  MG_HD float grad(float x, float, float dy) const { return dy / x; }
};

struct Identity {
  static constexpr const char* name = "Identity";
  static constexpr const char* snake = "identity";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x; }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

struct AddScalar {
  static constexpr const char* name = "AddScalar";
  static constexpr const char* snake = "add_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x + val; }
  MG_HD float grad(float, float, float dy) const { return dy; }
};

struct MulScalar {
  static constexpr const char* name = "MulScalar";
  static constexpr const char* snake = "mul_scalar";
  static constexpr bool grad_uses_x = false, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return x * val; }
  MG_HD float grad(float, float, float dy) const { return dy * val; }
};

struct PowScalar {
  static constexpr const char* name = "PowScalar";
  static constexpr const char* snake = "pow_scalar";
  // fp32 whatever the context: its range overflows fp16.
  static constexpr Precision precision = Precision::float32;
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float val = 1.0f;
  MG_HD float operator()(float x) const { return powf(x, val); }
  MG_HD float grad(float x, float, float dy) const {
    return dy * val * powf(x, val - 1.0f);
  }
};

// The fields of the ops that have arguments (for saving graphs).
template <class V> void visit_fields(LeakyReLU& o, V&& v) { v("alpha", o.alpha); }
template <class V> void visit_fields(ELU& o, V&& v) { v("alpha", o.alpha); }
template <class V> void visit_fields(AddScalar& o, V&& v) { v("val", o.val); }
template <class V> void visit_fields(MulScalar& o, V&& v) { v("val", o.val); }
template <class V> void visit_fields(PowScalar& o, V&& v) { v("val", o.val); }

/// NNabla's SoftPlus: log(1 + exp(beta x)) / beta, computed without overflow.
struct SoftPlus {
  static constexpr const char* name = "SoftPlus";
  static constexpr const char* snake = "softplus";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  float beta = 1.0f;
  MG_HD float operator()(float x) const {
    const float bx = beta * x;
    return (fmaxf(bx, 0.0f) + log1pf(expf(-fabsf(bx)))) / beta;
  }
  MG_HD float grad(float x, float, float dy) const {
    return dy / (1.0f + expf(-beta * x));
  }
};

/// x sigmoid(x) (SiLU).
struct Swish {
  static constexpr const char* name = "Swish";
  static constexpr const char* snake = "swish";
  static constexpr bool grad_uses_x = true, grad_uses_y = false;
  MG_HD float operator()(float x) const { return x / (1.0f + expf(-x)); }
  MG_HD float grad(float x, float, float dy) const {
    const float s = 1.0f / (1.0f + expf(-x));
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
  static constexpr float kC = 1.1283791670955126f;  // 2 / sqrt(pi)
  MG_HD float operator()(float x) const { return erff(x); }
  MG_HD float grad(float x, float, float dy) const {
    return dy * kC * expf(-x * x);
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

template <class V> void visit_fields(SoftPlus& o, V&& v) { v("beta", o.beta); }
template <class V> void visit_fields(ClipByValue& o, V&& v) {
  v("min", o.min);
  v("max", o.max);
}

}  // namespace mg::ops
