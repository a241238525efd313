// The one list of CPU functions.
#include <mixgraph/functions/cpu/cpu_functions.hpp>

namespace mg::cpu {

void register_cpu_functions(FunctionRegistry& r) {
  register_elementwise(r);
  register_affine(r);
  register_convolution(r);
  register_deconvolution(r);
  register_pooling(r);
}

}  // namespace mg::cpu
