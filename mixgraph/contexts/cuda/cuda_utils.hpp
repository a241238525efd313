// CUDA plumbing shared by the backend: error checks that carry CUDA's own
// text, the current-device guard, launch sizes, and each device's stream,
// caching allocator and pinned staging buffers (CudaDevice).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <mixgraph/contexts/caching_allocator.hpp>
#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/memory.hpp>

namespace mg::cuda {

/// Throws std::runtime_error "<call> failed: <CUDA's error name and text>
/// (<file>:<line>)" unless e is cudaSuccess.
void check(cudaError_t e, const char* call, const char* file, int line);

#define MG_CUDA_CHECK(call) ::mg::cuda::check((call), #call, __FILE__, __LINE__)
/// After a kernel launch: reports a bad launch configuration at once.
#define MG_CUDA_CHECK_LAUNCH() MG_CUDA_CHECK(cudaGetLastError())

/// Makes `index` the current device while it lives.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

/// Threads per block of the elementwise kernels.
constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over n elements (at least 1, capped: the
/// loop covers the rest).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

/// In a kernel: `for` each index i in [0, n) this thread owns, striding by
/// the whole grid (so any grid size from blocks_for covers n).
#define MG_GRID_STRIDE(i, n)                                            \
  for (int64_t i =                                                      \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

/// The number of CUDA devices; 0 with the reason in `why` when there is no
/// usable GPU (no driver, no device). Asked once.
int device_count(std::string* why = nullptr);

/// "cuda:3" -> 3; throws std::invalid_argument for anything else.
int device_index(const std::string& device);

/// One GPU: the stream every kernel, copy and library call of the device
/// runs on (so freed blocks can be reused at once, in stream order), its
/// caching allocator over cudaMalloc, and two pinned host buffers through
/// which transfers are staged, double buffered.
class CudaDevice {
 public:
  /// The device, set up on first use; never destroyed (arrays may be freed
  /// after main returns).
  static CudaDevice& get(int index);

  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }
  CachingAllocator& allocator() { return allocator_; }
  /// Device memory from the caching allocator.
  std::unique_ptr<Memory> allocate(size_t bytes) {
    return allocator_.allocate(bytes);
  }

  /// Host -> device through the pinned buffers; returns once the host data
  /// is staged (the last chunk may still be on its way, in stream order).
  void copy_to_device(void* dst, const void* host_src, size_t bytes);
  /// Device -> host through the pinned buffers; the data is there on return.
  void copy_to_host(void* host_dst, const void* src, size_t bytes);
  void synchronize();

 private:
  struct Raw : RawAllocator {
    int index = 0;
    void* allocate(size_t bytes) override;
    void free(void* ptr) override;
  };
  explicit CudaDevice(int index);
  void ensure_staging();

  int index_;
  cudaStream_t stream_ = nullptr;
  Raw raw_;
  CachingAllocator allocator_;
  std::mutex staging_mutex_;
  void* staging_[2] = {nullptr, nullptr};
  cudaEvent_t staged_[2] = {nullptr, nullptr};
};

/// The stream of device `index`.
inline cudaStream_t stream(int index) {
  return CudaDevice::get(index).stream();
}

/// dst = src converted, n elements on the device (contexts/cuda/convert.cu:
/// the same convert_one as the host).
void convert_on_device(const void* src, Dtype src_dtype, void* dst,
                       Dtype dst_dtype, size_t n, cudaStream_t stream);
/// n elements of dst = value.
void fill_on_device(void* dst, Dtype dtype, double value, size_t n,
                    cudaStream_t stream);

}  // namespace mg::cuda
