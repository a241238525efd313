// Builders of the elementwise functions: activations and arithmetic.
#pragma once

#include <mixgraph/graph/variable.hpp>

namespace mg::functions {

/// max(x, 0).
VariablePtr relu(const VariablePtr& x);
/// x for x > 0, alpha x otherwise.
VariablePtr leaky_relu(const VariablePtr& x, float alpha = 0.1f);
/// 1 / (1 + exp(-x)).
VariablePtr sigmoid(const VariablePtr& x);
VariablePtr tanh(const VariablePtr& x);
/// x for x >= 0, alpha (exp(x) - 1) otherwise.
VariablePtr elu(const VariablePtr& x, float alpha = 1.0f);
/// The tanh approximation of GELU, as NNabla computes it.
VariablePtr gelu(const VariablePtr& x);
VariablePtr exp(const VariablePtr& x);
VariablePtr log(const VariablePtr& x);
/// A copy of x.
VariablePtr identity(const VariablePtr& x);
/// x + val.
VariablePtr add_scalar(const VariablePtr& x, float val = 1.0f);
/// x * val.
VariablePtr mul_scalar(const VariablePtr& x, float val = 1.0f);
/// x ^ val.
VariablePtr pow_scalar(const VariablePtr& x, float val = 1.0f);

/// x0 + x1, x0 - x1, x0 * x1, x0 / x1, with NumPy broadcasting.
VariablePtr add2(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr sub2(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr mul2(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr div2(const VariablePtr& x0, const VariablePtr& x1);

/// log(1 + exp(beta x)) / beta.
VariablePtr softplus(const VariablePtr& x, float beta = 1.0f);
/// x sigmoid(x), also called SiLU.
VariablePtr swish(const VariablePtr& x);
/// max(-1, min(1, x)).
VariablePtr hard_tanh(const VariablePtr& x);
/// min(max(x, min), max) with scalar bounds.
VariablePtr clip_by_value(const VariablePtr& x, float min, float max);
VariablePtr sqrt(const VariablePtr& x);
/// 1 / sqrt(x).
VariablePtr rsqrt(const VariablePtr& x);
VariablePtr abs(const VariablePtr& x);
/// The Gauss error function.
VariablePtr erf(const VariablePtr& x);
VariablePtr sin(const VariablePtr& x);
/// Elementwise max(x0, x1) and min(x0, x1), with NumPy broadcasting.
VariablePtr maximum2(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr minimum2(const VariablePtr& x0, const VariablePtr& x1);

}  // namespace mg::functions
