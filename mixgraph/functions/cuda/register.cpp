// The one list of CUDA functions. Functions not listed here run through the
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
  register_elementwise(r);
  register_reduction(r);
  register_affine(r);
  register_convolution(r);
  register_pooling(r);
  register_batch_normalization(r);
  register_softmax(r);
}

}  // namespace mg::cuda
