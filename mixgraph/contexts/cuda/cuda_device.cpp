// CudaDevice: stream, caching allocator and pinned staging of one GPU.
#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

namespace mg::cuda {

namespace {

// Each pinned staging buffer; transfers go in chunks of this size, one
// buffer filling while the other is on its way.
constexpr size_t kStagingBytes = 4 << 20;

}  // namespace

void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(
      msg("[cuda] ", call, " failed: ", cudaGetErrorName(e), ": ",
          cudaGetErrorString(e), " (", file, ":", line, ")"));
}

DeviceGuard::DeviceGuard(int index) {
  MG_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != index) MG_CUDA_CHECK(cudaSetDevice(index));
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) {
    cudaSetDevice(previous_);
  }
}

int device_count(std::string* why) {
  static const auto answer = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    std::string reason;
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it: a missing GPU is not an error state
      n = 0;
      reason = std::string("no GPU present (cudaGetDeviceCount: ") +
               cudaGetErrorString(e) + ")";
    } else if (n == 0) {
      reason = "no GPU present";
    }
    return std::make_pair(n, reason);
  }();
  if (why) *why = answer.second;
  return answer.first;
}

int device_index(const std::string& device) {
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos) {
    return std::stoi(device.substr(5));
  }
  throw std::invalid_argument(
      msg("[cuda] '", device, "' is not a CUDA device; expected cuda:<index>"));
}

CudaDevice& CudaDevice::get(int index) {
  static std::mutex mutex;
  static auto* devices = new std::map<int, CudaDevice*>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = devices->find(index);
  if (it == devices->end()) {
    it = devices->emplace(index, new CudaDevice(index)).first;
  }
  return *it->second;
}

CudaDevice::CudaDevice(int index)
    : index_(index), allocator_(raw_, "cuda:" + std::to_string(index)) {
  raw_.index = index;
  DeviceGuard guard(index);
  MG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

void* CudaDevice::Raw::allocate(size_t bytes) {
  DeviceGuard guard(index);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // the allocator releases its cache and retries
    return nullptr;
  }
  MG_CUDA_CHECK(e);
  return p;
}

void CudaDevice::Raw::free(void* ptr) {
  DeviceGuard guard(index);
  MG_CUDA_CHECK(cudaFree(ptr));
}

void CudaDevice::ensure_staging() {
  if (staging_[0]) return;
  for (int k = 0; k < 2; ++k) {
    MG_CUDA_CHECK(
        cudaHostAlloc(&staging_[k], kStagingBytes, cudaHostAllocDefault));
    MG_CUDA_CHECK(
        cudaEventCreateWithFlags(&staged_[k], cudaEventDisableTiming));
  }
}

void CudaDevice::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  DeviceGuard guard(index_);
  ensure_staging();
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(host_src);
  int k = 0;
  for (size_t off = 0; off < bytes; off += kStagingBytes, k ^= 1) {
    const size_t len = std::min(kStagingBytes, bytes - off);
    // The last copy out of this buffer must be done before it is refilled.
    MG_CUDA_CHECK(cudaEventSynchronize(staged_[k]));
    std::memcpy(staging_[k], s + off, len);
    MG_CUDA_CHECK(cudaMemcpyAsync(d + off, staging_[k], len,
                                  cudaMemcpyHostToDevice, stream_));
    MG_CUDA_CHECK(cudaEventRecord(staged_[k], stream_));
  }
}

void CudaDevice::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  DeviceGuard guard(index_);
  ensure_staging();
  auto* d = static_cast<char*>(host_dst);
  const auto* s = static_cast<const char*>(src);
  // Chunk i lands in buffer i % 2 while the host drains chunk i - 1. A
  // buffer's earlier host -> device copies are ahead on the same stream.
  size_t pending_off = 0, pending_len = 0;
  int pending = -1, k = 0;
  auto drain = [&] {
    MG_CUDA_CHECK(cudaEventSynchronize(staged_[pending]));
    std::memcpy(d + pending_off, staging_[pending], pending_len);
  };
  for (size_t off = 0; off < bytes; off += kStagingBytes, k ^= 1) {
    const size_t len = std::min(kStagingBytes, bytes - off);
    MG_CUDA_CHECK(cudaMemcpyAsync(staging_[k], s + off, len,
                                  cudaMemcpyDeviceToHost, stream_));
    MG_CUDA_CHECK(cudaEventRecord(staged_[k], stream_));
    if (pending >= 0) drain();
    pending = k, pending_off = off, pending_len = len;
  }
  if (pending >= 0) drain();
}

void CudaDevice::synchronize() {
  DeviceGuard guard(index_);
  MG_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace mg::cuda
