#include <mixgraph/functions/elementwise_builders.hpp>

#include <stdexcept>
#include <string>

#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
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
    throw std::invalid_argument("[clip_by_value] min " + std::to_string(min) +
                                " must not exceed max " + std::to_string(max));
  }
  return unary(x, ops::ClipByValue{min, max});
}
VariablePtr sqrt(const VariablePtr& x) { return unary<ops::Sqrt>(x); }
VariablePtr rsqrt(const VariablePtr& x) { return unary<ops::Rsqrt>(x); }
VariablePtr abs(const VariablePtr& x) { return unary<ops::Abs>(x); }
VariablePtr erf(const VariablePtr& x) { return unary<ops::Erf>(x); }
VariablePtr sin(const VariablePtr& x) { return unary<ops::Sin>(x); }
VariablePtr maximum2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Maximum2>(x0, x1);
}
VariablePtr minimum2(const VariablePtr& x0, const VariablePtr& x1) {
  return binary<ops::Minimum2>(x0, x1);
}

}  // namespace mg::functions
