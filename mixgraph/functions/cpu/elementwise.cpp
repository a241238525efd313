// Registers the CPU elementwise functions: every op of ops/op_list.hpp.
#include <mixgraph/functions/cpu/elementwise.hpp>

#include <mixgraph/functions/cpu/axis_tile.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/ops/op_list.hpp>

namespace mg::cpu {

namespace exp_loops {
// clang-format off
#define MG_EXP_LOOP(NS, TARGET)                                            \
  namespace NS {                                                           \
  TARGET void exp_of_difference(const float* x, float shift, float* y,     \
                                int64_t n) {                               \
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp(x[i] - shift);       \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_EXP_LOOP)
#undef MG_EXP_LOOP
// clang-format on

void run(const float* x, float shift, float* y, int64_t n) {
  MG_CALL_VECTOR_ISA(exp_of_difference(x, shift, y, n));
}
}  // namespace exp_loops

void exp_of_difference(const float* x, int64_t stride, float shift, float* y,
                       int64_t n) {
  if (stride != 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp(x[i * stride] - shift);
    return;
  }
  exp_loops::run(x, shift, y, n);
}

void register_elementwise(FunctionRegistry& r) {
  ops::for_each_unary_op(
      [&](auto tag) { register_unary<typename decltype(tag)::type>(r); });
  ops::for_each_binary_op(
      [&](auto tag) { register_binary<typename decltype(tag)::type>(r); });
}

}  // namespace mg::cpu
