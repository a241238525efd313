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
VariablePtr cos(const VariablePtr& x);
VariablePtr tan(const VariablePtr& x);
VariablePtr asin(const VariablePtr& x);
VariablePtr acos(const VariablePtr& x);
VariablePtr atan(const VariablePtr& x);
VariablePtr sinh(const VariablePtr& x);
VariablePtr cosh(const VariablePtr& x);
VariablePtr asinh(const VariablePtr& x);
VariablePtr acosh(const VariablePtr& x);
VariablePtr atanh(const VariablePtr& x);
/// Rounding (halves away from zero), ceiling and floor; their grads pass
/// straight through (dx = dy), as NNabla's.
VariablePtr round(const VariablePtr& x);
VariablePtr ceil(const VariablePtr& x);
VariablePtr floor(const VariablePtr& x);
/// 1, -1, or alpha at 0; the grad passes straight through.
VariablePtr sign(const VariablePtr& x, float alpha = 1.0f);
/// scale x for x > 0, scale alpha (exp(x) - 1) otherwise.
VariablePtr selu(const VariablePtr& x, float scale = 1.05070098735548f,
                 float alpha = 1.673263242354377f);
/// min(max(x, 0), 6).
VariablePtr relu6(const VariablePtr& x);
/// min(max(0.2 x + 0.5, 0), 1).
VariablePtr hard_sigmoid(const VariablePtr& x);
/// log(sigmoid(x)).
VariablePtr log_sigmoid(const VariablePtr& x);
/// x / (1 + |x|).
VariablePtr softsign(const VariablePtr& x);
/// x - tanh(x).
VariablePtr tanh_shrink(const VariablePtr& x);
/// sin(x) / x (1 at 0).
VariablePtr sinc(const VariablePtr& x);
/// x tanh(softplus(x)).
VariablePtr mish(const VariablePtr& x);
/// val - x, val / x, val ^ x.
VariablePtr r_sub_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr r_div_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr r_pow_scalar(const VariablePtr& x, float val = 1.0f);
/// max(x, val) and min(x, val).
VariablePtr maximum_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr minimum_scalar(const VariablePtr& x, float val = 1.0f);
/// Elementwise max(x0, x1) and min(x0, x1), with NumPy broadcasting.
VariablePtr maximum2(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr minimum2(const VariablePtr& x0, const VariablePtr& x1);

/// Comparisons and logical ops, with NumPy broadcasting: y is 1 where the
/// relation holds and 0 elsewhere, in the context's type (exact in half and
/// bfloat16), so it multiplies straight into a mask. Nonzero means true for
/// the logical ops. They have no grad (their inputs' grads are zero), as
/// NNabla's.
VariablePtr equal(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr not_equal(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr greater(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr greater_equal(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr less(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr less_equal(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr logical_and(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr logical_or(const VariablePtr& x0, const VariablePtr& x1);
VariablePtr logical_xor(const VariablePtr& x0, const VariablePtr& x1);
/// 1 where x and t fall on different sides of 0.5 (NNabla's BinaryError).
VariablePtr binary_error(const VariablePtr& x, const VariablePtr& t);
/// x0 + x1 (NNabla's broadcasting add; the same as add2 here).
VariablePtr bc_add2(const VariablePtr& x0, const VariablePtr& x1);
/// x0 ^ x1.
VariablePtr pow2(const VariablePtr& x0, const VariablePtr& x1);
/// atan2(x0, x1).
VariablePtr atan2(const VariablePtr& x0, const VariablePtr& x1);
/// The same against a scalar.
VariablePtr equal_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr not_equal_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr greater_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr greater_equal_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr less_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr less_equal_scalar(const VariablePtr& x, float val = 1.0f);
VariablePtr logical_and_scalar(const VariablePtr& x, bool val);
VariablePtr logical_or_scalar(const VariablePtr& x, bool val);
VariablePtr logical_xor_scalar(const VariablePtr& x, bool val);
/// 1 where x is 0.
VariablePtr logical_not(const VariablePtr& x);
/// 1 where x is nan; 1 where x is +inf or -inf.
VariablePtr isnan(const VariablePtr& x);
VariablePtr isinf(const VariablePtr& x);
/// x with nan (inf) replaced by val; the grad passes elsewhere.
VariablePtr reset_nan(const VariablePtr& x, float val = 0.0f);
VariablePtr reset_inf(const VariablePtr& x, float val = 0.0f);

/// y = x, with no grad flowing back to x (NNabla's Unlink).
VariablePtr unlink(const VariablePtr& x);

/// The quantizers of NNabla's quantization layers (functions/ops/
/// quantize_ops.hpp), with straight-through grads: 1 or 0 (BinarySigmoid),
/// 1 or -1 (BinaryTanh), multiples of delta in n bits (FixedPointQuantize),
/// powers of two (Pow2Quantize).
VariablePtr binary_sigmoid(const VariablePtr& x);
VariablePtr binary_tanh(const VariablePtr& x);
VariablePtr fixed_point_quantize(const VariablePtr& x, bool sign = true,
                                 int n = 8, float delta = 0.0625f,
                                 bool ste_fine_grained = true);
VariablePtr pow2_quantize(const VariablePtr& x, bool sign = true,
                          bool with_zero = true, int n = 8, int m = 1,
                          bool ste_fine_grained = true);

}  // namespace mg::functions
