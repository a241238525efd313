// Registers the CPU elementwise functions.
#include <mixgraph/functions/cpu/elementwise.hpp>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

namespace mg::cpu {

void register_elementwise(FunctionRegistry& r) {
  register_unary<ops::ReLU>(r);
  register_unary<ops::LeakyReLU>(r);
  register_unary<ops::Sigmoid>(r);
  register_unary<ops::Tanh>(r);
  register_unary<ops::ELU>(r);
  register_unary<ops::GELU>(r);
  register_unary<ops::Exp>(r);
  register_unary<ops::Log>(r);
  register_unary<ops::Identity>(r);
  register_unary<ops::AddScalar>(r);
  register_unary<ops::MulScalar>(r);
  register_unary<ops::PowScalar>(r);
  register_binary<ops::Add2>(r);
  register_binary<ops::Sub2>(r);
  register_binary<ops::Mul2>(r);
  register_binary<ops::Div2>(r);
  register_binary<ops::SquaredError>(r);
}

}  // namespace mg::cpu
