// The one list of CUDA functions. Functions not listed here run through the
// context's fallback (cuda:float, then cpu:float), the data moving through
// SyncedArray.
#include <mixgraph/functions/cuda/cuda_functions.hpp>

namespace mg::cuda {

void register_cuda_functions(FunctionRegistry& r) {
  register_elementwise(r);
  register_reduction(r);
  register_affine(r);
  register_convolution(r);
  register_pooling(r);
  register_batch_normalization(r);
  register_softmax(r);
}

}  // namespace mg::cuda
