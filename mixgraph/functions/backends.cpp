// The backends this build has, in the order their functions are registered.
// A new backend adds its register_*_functions call here.
#include <mixgraph/functions/backends.hpp>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#ifdef MIXGRAPH_WITH_CUDA
#include <mixgraph/functions/cuda/cuda_functions.hpp>  // no CUDA headers
#endif

namespace mg {

void register_backends(FunctionRegistry& r) {
  cpu::register_cpu_functions(r);
#ifdef MIXGRAPH_WITH_CUDA
  cuda::register_cuda_functions(r);
#endif
}

}  // namespace mg
