// load_onnx's converters of activations, arithmetic and comparisons: one
// function each, a one-element constant operand as a scalar function.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/integer_ops.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/utils/onnx/onnx_import.hpp>

namespace mg::onnx_import {

namespace F = functions;

namespace {

// Binary operators; a one-element constant operand becomes a scalar
// function (AddScalar, RSubScalar, ...).
using BinaryFn = VariablePtr (*)(const VariablePtr&, const VariablePtr&);
using ScalarFn = VariablePtr (*)(const VariablePtr&, float);
// A one-element constant input i that leaves the other operand's shape as
// it is (a rank above the other's would add axes to the result).
bool scalar_operand(const Op& op, int i, int other, double* c) {
  return !op.is_const(other) && op.scalar(i, c) &&
         op.constant(i).shape.size() <= op.shape(other).size();
}

// x with leading ones up to `rank`.
VariablePtr to_rank(const VariablePtr& x, size_t rank) {
  if (x->shape().size() >= rank) return x;
  Shape s(rank - x->shape().size(), 1);
  s.insert(s.end(), x->shape().begin(), x->shape().end());
  return F::reshape(x, s);
}

// ONNX's multidirectional broadcasting of a and b: our binary functions
// broadcast size-1 axes of either operand between equal ranks.
VariablePtr broadcast_binary(BinaryFn both, VariablePtr a, VariablePtr b) {
  const size_t rank = std::max(a->shape().size(), b->shape().size());
  return both(to_rank(a, rank), to_rank(b, rank));
}

Rule binary(BinaryFn both, ScalarFn x_op_c, ScalarFn c_op_x) {
  return [=](const Op& op) {
    double c = 0;
    if (op.num_inputs() != 2) {  // Max, Min, Sum: variadic, from the left
      VariablePtr y = op.x(0);
      for (int k = 1; k < op.num_inputs(); ++k)
        y = broadcast_binary(both, y, op.x(k));
      return op.set(0, y);
    }
    if (x_op_c && scalar_operand(op, 1, 0, &c)) {
      return op.set(0, x_op_c(op.x(0), static_cast<float>(c)));
    }
    if (c_op_x && scalar_operand(op, 0, 1, &c)) {
      return op.set(0, c_op_x(op.x(1), static_cast<float>(c)));
    }
    broadcast_shape(op, op.shape(0), op.shape(1));  // an error names the node
    op.set(0, broadcast_binary(both, op.x(0), op.x(1)));
  };
}

VariablePtr neg(const VariablePtr& x) { return F::mul_scalar(x, -1.0f); }
VariablePtr reciprocal(const VariablePtr& x) {
  return F::r_div_scalar(x, 1.0f);
}
VariablePtr softplus(const VariablePtr& x) { return F::softplus(x); }
VariablePtr sub_from(const VariablePtr& x, float c) {
  return F::r_sub_scalar(x, c);
}
VariablePtr div_from(const VariablePtr& x, float c) {
  return F::r_div_scalar(x, c);
}
VariablePtr sub_c(const VariablePtr& x, float c) {
  return F::add_scalar(x, -c);
}
VariablePtr div_c(const VariablePtr& x, float c) {
  return F::mul_scalar(x, 1.0f / c);
}

}  // namespace

void add_elementwise_rules(std::map<std::string, Rule>& t) {
  t["Relu"] = unary(F::relu);
  t["Sigmoid"] = unary(F::sigmoid);
  t["Tanh"] = unary(F::tanh);
  t["Exp"] = unary(F::exp);
  t["Log"] = unary(F::log);
  t["Sqrt"] = unary(F::sqrt);
  t["Abs"] = unary(F::abs);
  t["Erf"] = unary(F::erf);
  t["Sin"] = unary(F::sin);
  t["Cos"] = unary(F::cos);
  t["Tan"] = unary(F::tan);
  t["Asin"] = unary(F::asin);
  t["Acos"] = unary(F::acos);
  t["Atan"] = unary(F::atan);
  t["Sinh"] = unary(F::sinh);
  t["Cosh"] = unary(F::cosh);
  t["Asinh"] = unary(F::asinh);
  t["Acosh"] = unary(F::acosh);
  t["Atanh"] = unary(F::atanh);
  t["Ceil"] = unary(F::ceil);
  t["Floor"] = unary(F::floor);
  t["Softplus"] = unary(softplus);
  t["Softsign"] = unary(F::softsign);
  t["Neg"] = unary(neg);
  t["Reciprocal"] = unary(reciprocal);
  t["Not"] = unary(F::logical_not);
  t["IsNaN"] = unary(F::isnan);
  t["Identity"] = t["Dropout"] = alias;
  t["LeakyRelu"] = [](const Op& op) {
    op.set(0, F::leaky_relu(op.x(0), static_cast<float>(op.f("alpha", 0.01))));
  };
  t["Elu"] = [](const Op& op) {
    op.set(0, F::elu(op.x(0), static_cast<float>(op.f("alpha", 1.0))));
  };
  t["Selu"] = [](const Op& op) {
    op.set(0, F::selu(op.x(0),
                      static_cast<float>(op.f("gamma", 1.05070102214813232)),
                      static_cast<float>(op.f("alpha", 1.67326319217681884))));
  };
  t["HardSigmoid"] = [](const Op& op) {
    const double a = op.f("alpha", 0.2), b = op.f("beta", 0.5);
    if (std::abs(a - 0.2) < 1e-7 && std::abs(b - 0.5) < 1e-7) {
      return op.set(0, F::hard_sigmoid(op.x(0)));
    }
    op.set(0, F::clip_by_value(
                  F::add_scalar(F::mul_scalar(op.x(0), static_cast<float>(a)),
                                static_cast<float>(b)),
                  0.0f, 1.0f));
  };
  t["Clip"] = [](const Op& op) {
    double lo = -std::numeric_limits<double>::infinity(),
           hi = std::numeric_limits<double>::infinity();
    if (op.has(1) && !op.scalar(1, &lo)) op.fail("min is not a constant");
    if (op.has(2) && !op.scalar(2, &hi)) op.fail("max is not a constant");
    VariablePtr x = op.x(0);
    if (lo == 0.0 && hi == 6.0) return op.set(0, F::relu6(x));
    if (std::isinf(lo))
      return op.set(0, F::minimum_scalar(x, static_cast<float>(hi)));
    if (std::isinf(hi))
      return op.set(0, F::maximum_scalar(x, static_cast<float>(lo)));
    op.set(0,
           F::clip_by_value(x, static_cast<float>(lo), static_cast<float>(hi)));
  };
  t["Add"] = binary(F::add2, F::add_scalar, F::add_scalar);
  t["Sub"] = binary(F::sub2, sub_c, sub_from);
  t["Mul"] = binary(F::mul2, F::mul_scalar, F::mul_scalar);
  t["Div"] = binary(F::div2, div_c, div_from);
  t["Pow"] = binary(F::pow2, F::pow_scalar, F::r_pow_scalar);
  t["Max"] = binary(F::maximum2, F::maximum_scalar, F::maximum_scalar);
  t["Min"] = binary(F::minimum2, F::minimum_scalar, F::minimum_scalar);
  t["Equal"] = binary(F::equal, F::equal_scalar, F::equal_scalar);
  t["Greater"] = binary(F::greater, F::greater_scalar, nullptr);
  t["GreaterOrEqual"] =
      binary(F::greater_equal, F::greater_equal_scalar, nullptr);
  t["Less"] = binary(F::less, F::less_scalar, nullptr);
  t["LessOrEqual"] = binary(F::less_equal, F::less_equal_scalar, nullptr);
  t["And"] = binary(F::logical_and, nullptr, nullptr);
  t["Or"] = binary(F::logical_or, nullptr, nullptr);
  t["Xor"] = binary(F::logical_xor, nullptr, nullptr);
  t["Sum"] = binary(F::add2, nullptr, nullptr);
  t["Mod"] = [](const Op& op) {
    // Integer Mod on constants folds exactly (Python's sign rule or fmod);
    // at run time the data is floating, which our Mod2 computes as fmod.
    if (!op.i("fmod", 0)) {
      op.fail(
          "fmod 0 on data computed at run time is not supported (our Mod2 "
          "computes floating data as fmod, the sign of the dividend)");
    }
    op.set(0, F::mod2(op.x(0), op.x(1), true));
  };
  t["HardSwish"] = [](const Op& op) {  // x relu6(x + 3) / 6
    const VariablePtr x = op.x(0);
    op.set(0, F::mul2(x, F::mul_scalar(F::relu6(F::add_scalar(x, 3.0f)),
                                       1.0f / 6.0f)));
  };
}

}  // namespace mg::onnx_import
