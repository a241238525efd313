// The one list of elementwise ops. Every backend registers its kernels by
// walking these lists, so an op added here reaches the CPU and CUDA alike.
#pragma once

#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/quantize_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

namespace mg::ops {

/// Calls f(TypeTag<Op>{}) for every unary elementwise op.
template <class F>
void for_each_unary_op(F&& f) {
  f(TypeTag<ReLU>{}), f(TypeTag<LeakyReLU>{}), f(TypeTag<Sigmoid>{});
  f(TypeTag<Tanh>{}), f(TypeTag<ELU>{}), f(TypeTag<GELU>{});
  f(TypeTag<Exp>{}), f(TypeTag<Log>{}), f(TypeTag<Identity>{});
  f(TypeTag<AddScalar>{}), f(TypeTag<MulScalar>{}), f(TypeTag<PowScalar>{});
  f(TypeTag<SoftPlus>{}), f(TypeTag<Swish>{}), f(TypeTag<HardTanh>{});
  f(TypeTag<ClipByValue>{}), f(TypeTag<Sqrt>{}), f(TypeTag<Rsqrt>{});
  f(TypeTag<Abs>{}), f(TypeTag<Erf>{}), f(TypeTag<Sin>{});
  f(TypeTag<Cos>{}), f(TypeTag<Tan>{}), f(TypeTag<ASin>{});
  f(TypeTag<ACos>{}), f(TypeTag<ATan>{}), f(TypeTag<Sinh>{});
  f(TypeTag<Cosh>{}), f(TypeTag<ASinh>{}), f(TypeTag<ACosh>{});
  f(TypeTag<ATanh>{}), f(TypeTag<Round>{}), f(TypeTag<Ceil>{});
  f(TypeTag<Floor>{}), f(TypeTag<Sign>{}), f(TypeTag<SELU>{});
  f(TypeTag<ReLU6>{}), f(TypeTag<HardSigmoid>{}), f(TypeTag<LogSigmoid>{});
  f(TypeTag<SoftSign>{}), f(TypeTag<TanhShrink>{}), f(TypeTag<Sinc>{});
  f(TypeTag<Mish>{}), f(TypeTag<RSubScalar>{}), f(TypeTag<RDivScalar>{});
  f(TypeTag<RPowScalar>{}), f(TypeTag<MaximumScalar>{});
  f(TypeTag<MinimumScalar>{}), f(TypeTag<EqualScalar>{});
  f(TypeTag<NotEqualScalar>{}), f(TypeTag<GreaterScalar>{});
  f(TypeTag<GreaterEqualScalar>{}), f(TypeTag<LessScalar>{});
  f(TypeTag<LessEqualScalar>{}), f(TypeTag<LogicalAndScalar>{});
  f(TypeTag<LogicalOrScalar>{}), f(TypeTag<LogicalXorScalar>{});
  f(TypeTag<LogicalNot>{}), f(TypeTag<IsNaN>{}), f(TypeTag<IsInf>{});
  f(TypeTag<ResetNaN>{}), f(TypeTag<ResetInf>{});
  f(TypeTag<BinarySigmoid>{}), f(TypeTag<BinaryTanh>{});
  f(TypeTag<FixedPointQuantize>{}), f(TypeTag<Pow2Quantize>{});
  f(TypeTag<Unlink>{});
}

/// Calls f(TypeTag<Op>{}) for every binary elementwise op (broadcasting).
template <class F>
void for_each_binary_op(F&& f) {
  f(TypeTag<Add2>{}), f(TypeTag<Sub2>{}), f(TypeTag<Mul2>{});
  f(TypeTag<Div2>{}), f(TypeTag<SquaredError>{}), f(TypeTag<Maximum2>{});
  f(TypeTag<Minimum2>{}), f(TypeTag<Equal>{}), f(TypeTag<NotEqual>{});
  f(TypeTag<Greater>{}), f(TypeTag<GreaterEqual>{}), f(TypeTag<Less>{});
  f(TypeTag<LessEqual>{}), f(TypeTag<LogicalAnd>{}), f(TypeTag<LogicalOr>{});
  f(TypeTag<LogicalXor>{}), f(TypeTag<BcAdd2>{}), f(TypeTag<Pow2>{});
  f(TypeTag<ATan2>{}), f(TypeTag<AbsoluteError>{}), f(TypeTag<HuberLoss>{});
  f(TypeTag<EpsilonInsensitiveLoss>{}), f(TypeTag<BinaryCrossEntropy>{});
  f(TypeTag<BinaryError>{});
}

}  // namespace mg::ops
