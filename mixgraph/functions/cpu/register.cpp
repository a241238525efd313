// Registers every CPU function: the groups listed in cpu_functions.hpp.
#include <mixgraph/functions/cpu/cpu_functions.hpp>

namespace mg::cpu {

void register_cpu_functions(FunctionRegistry& r) {
#define MG_CALL_CPU_GROUP(g) register_##g(r);
  MG_CPU_FUNCTION_GROUPS(MG_CALL_CPU_GROUP)
#undef MG_CALL_CPU_GROUP
}

}  // namespace mg::cpu
