// The "cuda" DeviceBackend: SyncedArray's copies on GPUs. Registered when
// the library is loaded; it touches the GPU only when first asked.
#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/device.hpp>

namespace mg::cuda {

namespace {

class CudaBackend final : public DeviceBackend {
 public:
  int count(std::string* why) override { return device_count(why); }
  std::unique_ptr<Memory> allocate(int index, size_t bytes) override {
    return CudaDevice::get(index).allocate(bytes);
  }
  void copy_to_device(int index, void* dst, const void* src,
                      size_t bytes) override {
    CudaDevice::get(index).copy_to_device(dst, src, bytes);
  }
  void copy_to_host(int index, void* dst, const void* src,
                    size_t bytes) override {
    CudaDevice::get(index).copy_to_host(dst, src, bytes);
  }
  void convert(int index, const void* src, Dtype s, void* dst, Dtype d,
               size_t n) override {
    DeviceGuard guard(index);
    convert_on_device(src, s, dst, d, n, CudaDevice::get(index).stream());
  }
  void fill(int index, void* dst, Dtype dtype, double value,
            size_t n) override {
    DeviceGuard guard(index);
    fill_on_device(dst, dtype, value, n, CudaDevice::get(index).stream());
  }
  void synchronize(int index) override { CudaDevice::get(index).synchronize(); }
  MemoryStats memory_stats(int index) override {
    return CudaDevice::get(index).allocator().stats();
  }
  void reset_peak(int index) override {
    CudaDevice::get(index).allocator().reset_peak();
  }
  void release_cache(int index) override {
    CudaDevice::get(index).allocator().release_cache();
  }
};

// Registers the backend at load time (no CUDA call happens here).
const bool registered = [] {
  static CudaBackend* backend = new CudaBackend();
  register_device_backend("cuda", backend);
  return true;
}();

}  // namespace

}  // namespace mg::cuda
