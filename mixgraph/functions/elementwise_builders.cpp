#include <mixgraph/functions/elementwise_builders.hpp>

#include <stdexcept>
#include <string>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/quantize_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

namespace mg::functions {

namespace {

template <class Op>
VariablePtr unary(const VariablePtr& x, const Op& op = {}) {
  return apply_function1(decl::unary<Op>, op, {x});
}

template <class Op>
VariablePtr binary(const VariablePtr& x0, const VariablePtr& x1) {
  return apply_function1(decl::binary<Op>, Op{}, {x0, x1});
}

}  // namespace

VariablePtr relu(const VariablePtr& x) { return unary<ops::ReLU>(x); }
VariablePtr leaky_relu(const VariablePtr& x, float alpha) {
  return unary(x, ops::LeakyReLU{alpha});
}
VariablePtr sigmoid(const VariablePtr& x) { return unary<ops::Sigmoid>(x); }
VariablePtr tanh(const VariablePtr& x) { return unary<ops::Tanh>(x); }
VariablePtr elu(const VariablePtr& x, float alpha) {
  return unary(x, ops::ELU{alpha});
}
VariablePtr gelu(const VariablePtr& x) { return unary<ops::GELU>(x); }
VariablePtr exp(const VariablePtr& x) { return unary<ops::Exp>(x); }
VariablePtr log(const VariablePtr& x) { return unary<ops::Log>(x); }
VariablePtr identity(const VariablePtr& x) { return unary<ops::Identity>(x); }
VariablePtr add_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::AddScalar{val});
}
VariablePtr mul_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::MulScalar{val});
}
VariablePtr pow_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::PowScalar{val});
}

VariablePtr add2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Add2>(x0, x1);
}
VariablePtr sub2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Sub2>(x0, x1);
}
VariablePtr mul2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Mul2>(x0, x1);
}
VariablePtr div2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Div2>(x0, x1);
}

VariablePtr softplus(const VariablePtr& x, float beta) {
  return unary(x, ops::SoftPlus{beta});
}
VariablePtr swish(const VariablePtr& x) { return unary<ops::Swish>(x); }
VariablePtr hard_tanh(const VariablePtr& x) { return unary<ops::HardTanh>(x); }
VariablePtr clip_by_value(const VariablePtr& x, float min, float max) {
  if (!(min <= max)) {
    throw std::invalid_argument(
        msg("[clip_by_value] min ", min, " must not exceed max ", max));
  }
  return unary(x, ops::ClipByValue{min, max});
}
VariablePtr sqrt(const VariablePtr& x) { return unary<ops::Sqrt>(x); }
VariablePtr rsqrt(const VariablePtr& x) { return unary<ops::Rsqrt>(x); }
VariablePtr abs(const VariablePtr& x) { return unary<ops::Abs>(x); }
VariablePtr erf(const VariablePtr& x) { return unary<ops::Erf>(x); }
VariablePtr sin(const VariablePtr& x) { return unary<ops::Sin>(x); }
VariablePtr cos(const VariablePtr& x) { return unary<ops::Cos>(x); }
VariablePtr tan(const VariablePtr& x) { return unary<ops::Tan>(x); }
VariablePtr asin(const VariablePtr& x) { return unary<ops::ASin>(x); }
VariablePtr acos(const VariablePtr& x) { return unary<ops::ACos>(x); }
VariablePtr atan(const VariablePtr& x) { return unary<ops::ATan>(x); }
VariablePtr sinh(const VariablePtr& x) { return unary<ops::Sinh>(x); }
VariablePtr cosh(const VariablePtr& x) { return unary<ops::Cosh>(x); }
VariablePtr asinh(const VariablePtr& x) { return unary<ops::ASinh>(x); }
VariablePtr acosh(const VariablePtr& x) { return unary<ops::ACosh>(x); }
VariablePtr atanh(const VariablePtr& x) { return unary<ops::ATanh>(x); }
VariablePtr round(const VariablePtr& x) { return unary<ops::Round>(x); }
VariablePtr ceil(const VariablePtr& x) { return unary<ops::Ceil>(x); }
VariablePtr floor(const VariablePtr& x) { return unary<ops::Floor>(x); }
VariablePtr relu6(const VariablePtr& x) { return unary<ops::ReLU6>(x); }
VariablePtr hard_sigmoid(const VariablePtr& x) {
  return unary<ops::HardSigmoid>(x);
}
VariablePtr log_sigmoid(const VariablePtr& x) {
  return unary<ops::LogSigmoid>(x);
}
VariablePtr softsign(const VariablePtr& x) { return unary<ops::SoftSign>(x); }
VariablePtr tanh_shrink(const VariablePtr& x) {
  return unary<ops::TanhShrink>(x);
}
VariablePtr sinc(const VariablePtr& x) { return unary<ops::Sinc>(x); }
VariablePtr mish(const VariablePtr& x) { return unary<ops::Mish>(x); }
VariablePtr sign(const VariablePtr& x, float alpha) {
  return unary(x, ops::Sign{alpha});
}
VariablePtr selu(const VariablePtr& x, float scale, float alpha) {
  return unary(x, ops::SELU{scale, alpha});
}
VariablePtr r_sub_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::RSubScalar{val});
}
VariablePtr r_div_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::RDivScalar{val});
}
VariablePtr r_pow_scalar(const VariablePtr& x, float val) {
  if (!(val > 0.0f)) {
    throw std::invalid_argument(
        msg("[r_pow_scalar] val ", val,
            " must be positive (val ^ x is not real for every x otherwise)"));
  }
  return unary(x, ops::RPowScalar{val});
}
VariablePtr maximum_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::MaximumScalar{val});
}
VariablePtr minimum_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::MinimumScalar{val});
}
VariablePtr maximum2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Maximum2>(x0, x1);
}
VariablePtr minimum2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Minimum2>(x0, x1);
}

VariablePtr equal(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Equal>(x0, x1);
}
VariablePtr not_equal(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::NotEqual>(x0, x1);
}
VariablePtr greater(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Greater>(x0, x1);
}
VariablePtr greater_equal(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::GreaterEqual>(x0, x1);
}
VariablePtr less(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Less>(x0, x1);
}
VariablePtr less_equal(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::LessEqual>(x0, x1);
}
VariablePtr logical_and(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::LogicalAnd>(x0, x1);
}
VariablePtr logical_or(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::LogicalOr>(x0, x1);
}
VariablePtr logical_xor(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::LogicalXor>(x0, x1);
}

VariablePtr binary_error(const VariablePtr& x, const VariablePtr& t) {
  return binary<ops::BinaryError>(x, t);
}

VariablePtr equal_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::EqualScalar{val});
}
VariablePtr not_equal_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::NotEqualScalar{val});
}
VariablePtr greater_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::GreaterScalar{val});
}
VariablePtr greater_equal_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::GreaterEqualScalar{val});
}
VariablePtr less_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::LessScalar{val});
}
VariablePtr less_equal_scalar(const VariablePtr& x, float val) {
  return unary(x, ops::LessEqualScalar{val});
}
VariablePtr logical_and_scalar(const VariablePtr& x, bool val) {
  return unary(x, ops::LogicalAndScalar{val});
}
VariablePtr logical_or_scalar(const VariablePtr& x, bool val) {
  return unary(x, ops::LogicalOrScalar{val});
}
VariablePtr logical_xor_scalar(const VariablePtr& x, bool val) {
  return unary(x, ops::LogicalXorScalar{val});
}
VariablePtr reset_nan(const VariablePtr& x, float val) {
  return unary(x, ops::ResetNaN{val});
}
VariablePtr reset_inf(const VariablePtr& x, float val) {
  return unary(x, ops::ResetInf{val});
}
VariablePtr logical_not(const VariablePtr& x) {
  return unary<ops::LogicalNot>(x);
}
VariablePtr isnan(const VariablePtr& x) { return unary<ops::IsNaN>(x); }
VariablePtr isinf(const VariablePtr& x) { return unary<ops::IsInf>(x); }
VariablePtr bc_add2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::BcAdd2>(x0, x1);
}
VariablePtr pow2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Pow2>(x0, x1);
}
VariablePtr atan2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::ATan2>(x0, x1);
}
VariablePtr unlink(const VariablePtr& x) { return unary<ops::Unlink>(x); }
VariablePtr binary_sigmoid(const VariablePtr& x) {
  return unary<ops::BinarySigmoid>(x);
}
VariablePtr binary_tanh(const VariablePtr& x) {
  return unary<ops::BinaryTanh>(x);
}
VariablePtr fixed_point_quantize(const VariablePtr& x, bool sign, int n,
                                 float delta, bool ste_fine_grained) {
  return unary(x, ops::FixedPointQuantize{sign, n, delta, ste_fine_grained});
}
VariablePtr pow2_quantize(const VariablePtr& x, bool sign, bool with_zero,
                          int n, int m, bool ste_fine_grained) {
  return unary(x, ops::Pow2Quantize{sign, with_zero, n, m, ste_fine_grained});
}
}  // namespace mg::functions
