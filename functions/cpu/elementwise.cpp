// Registers the CPU elementwise functions: every op of ops/op_list.hpp.
#include <mixgraph/functions/cpu/elementwise.hpp>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/ops/op_list.hpp>

namespace mg::cpu {

void register_elementwise(FunctionRegistry& r) {
  ops::for_each_unary_op(
      [&](auto tag) { register_unary<typename decltype(tag)::type>(r); });
  ops::for_each_binary_op(
      [&](auto tag) { register_binary<typename decltype(tag)::type>(r); });
}

}  // namespace mg::cpu
