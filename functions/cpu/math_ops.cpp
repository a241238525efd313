// Registers the CPU elementwise functions added for ResNet, LSTM and
// Transformer models; their math is in ops/unary_ops.hpp and binary_ops.hpp.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/elementwise.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

namespace mg::cpu {

void register_math_ops(FunctionRegistry& r) {
  register_unary<ops::SoftPlus>(r);
  register_unary<ops::Swish>(r);
  register_unary<ops::HardTanh>(r);
  register_unary<ops::ClipByValue>(r);
  register_unary<ops::Sqrt>(r);
  register_unary<ops::Rsqrt>(r);
  register_unary<ops::Abs>(r);
  register_unary<ops::Erf>(r);
  register_binary<ops::Maximum2>(r);
  register_binary<ops::Minimum2>(r);
}

}  // namespace mg::cpu
