// What every CUDA and cuDNN function uses: typed device pointers of its
// variables on the function's device, the device and stream to launch on,
// and a CPU stand-in for configurations the vendor library cannot express.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <typeindex>

#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg::cuda {

/// The CUDA device of a function (checked: it is there), current while
/// this lives, and its stream.
int checked_device(const Function& f);

/// The device of a function, current while it lives, and its stream.
struct Launch {
  explicit Launch(const Function& f)
      : index(checked_device(f)), guard(index), stream(cuda::stream(index)) {}
  int index;
  DeviceGuard guard;
  cudaStream_t stream;
  /// Scratch device memory, back in the cache when the Memory goes (the
  /// stream orders its reuse after the work queued here).
  std::unique_ptr<Memory> scratch(size_t bytes) const {
    return CudaDevice::get(index).allocate(bytes);
  }
};

template <class T>
const T* input(const Function& f, Variable* v) {
  return v->data()->get<const T>(f.device());
}
/// The output's data on the device, to be overwritten.
template <class T>
T* output(const Function& f, Variable* v) {
  return v->data()->cast<T>(/*write_only=*/true, f.device());
}
template <class T>
const T* output_grad(const Function& f, Variable* v) {
  return v->grad()->get<const T>(f.device());
}
/// The input's grad on the device; with accum its contents are kept.
template <class T>
T* input_grad(const Function& f, Variable* v, bool accum) {
  return v->grad()->cast<T>(/*write_only=*/!accum, f.device());
}

/// Whether a kernel on T writes v's grad in fp32: where v is held in fp32
/// (an fp32 master weight, the rule of every backend), on the host or on
/// f's device. held_in_float() looks at the host copy alone, and a solver
/// that updates on the GPU leaves the fp32 master there only: after the
/// first step the grads would otherwise come back in T.
template <class T>
bool grad_in_float(const Function& f, Variable* v) {
  if constexpr (std::is_same_v<T, float>) {
    (void)f, (void)v;
    return false;
  } else {
    return held_in_float(*v->data()) ||
           v->data()->array().has_copy(Dtype::f32, f.device());
  }
}

/// Stores a parameter grad computed in fp32 (`src`, n values on the device)
/// into v's grad: in fp32 where v is an fp32 master weight (the rule of
/// every backend), else in T; adds to it with accum.
template <class T>
void store_param_grad(const Function& f, const float* src, Variable* v,
                      bool accum, cudaStream_t stream) {
  const int64_t n = v->size();
  if (grad_in_float<T>(f, v)) {
    store_f32<float>(src, input_grad<float>(f, v, accum), n, accum, stream);
  } else {
    store_f32<T>(src, input_grad<T>(f, v, accum), n, accum, stream);
  }
}

/// The same function on the CPU (cpu:type, then cpu:float), for a
/// configuration the device code does not take: it reads and writes host
/// copies, and SyncedArray moves the data.
inline std::shared_ptr<Function> cpu_stand_in(const FunctionDecl& decl,
                                              Dtype type,
                                              std::type_index options,
                                              const void* opts) {
  Context ctx;
  ctx.backends = {{"cpu", type}, {"cpu", Dtype::f32}};
  return FunctionRegistry::instance().create(decl, ctx, options, opts);
}

}  // namespace mg::cuda
