// Registers every CUDA function: the groups listed in cuda_functions.hpp.
// Functions not listed there run through the
// context's fallback (cuda:float, then cpu:float), the data moving through
// SyncedArray.
#include <mixgraph/functions/cuda/cuda_functions.hpp>

#include <stdexcept>

#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>

namespace mg::cuda {

int checked_device(const Function& f) {
  // Says "device 'cuda:0' is not available: no GPU present (...)" where
  // there is none.
  const DeviceRef d = resolve_device(f.device(), f.tag());
  if (d.name != "cuda") {
    throw std::invalid_argument(
        msg(f.tag(), "runs on CUDA (", f.backend().str(),
            "), but its context's device is '", f.device(),
            "'; make the context with mg::context(\"cudnn\", ...) or give it "
            "array_class CudaArray"));
  }
  return d.index;
}

void register_cuda_functions(FunctionRegistry& r) {
#define MG_CALL_CUDA_GROUP(g) register_##g(r);
  MG_CUDA_FUNCTION_GROUPS(MG_CALL_CUDA_GROUP)
#undef MG_CALL_CUDA_GROUP
}

}  // namespace mg::cuda
