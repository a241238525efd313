// The one list of elementwise ops. Every backend registers its kernels by
// walking these lists, so an op added here reaches the CPU and CUDA alike.
#pragma once

#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
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
}

/// Calls f(TypeTag<Op>{}) for every binary elementwise op (broadcasting).
template <class F>
void for_each_binary_op(F&& f) {
  f(TypeTag<Add2>{}), f(TypeTag<Sub2>{}), f(TypeTag<Mul2>{});
  f(TypeTag<Div2>{}), f(TypeTag<SquaredError>{}), f(TypeTag<Maximum2>{});
  f(TypeTag<Minimum2>{});
}

}  // namespace mg::ops
