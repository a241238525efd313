#include <mixgraph/contexts/cuda/cudnn_utils.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

namespace mg::cuda {

void check_cudnn(cudnnStatus_t s, const char* call, const char* file,
                 int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw std::runtime_error(msg("[cudnn] ", call,
                               " failed: ", cudnnGetErrorString(s), " (", file,
                               ":", line, ")"));
}

cudnnDataType_t cudnn_data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return CUDNN_DATA_FLOAT;
    case Dtype::f16:
      return CUDNN_DATA_HALF;
    case Dtype::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      break;
  }
  throw std::invalid_argument(msg("[cudnn] unsupported dtype ",
                                  dtype_name(dtype),
                                  "; expected float, half or bfloat16"));
}

cudnnHandle_t cudnn_handle(int index) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cudnnHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(index);
  if (it != handles->end()) return it->second;
  DeviceGuard guard(index);
  cudnnHandle_t h = nullptr;
  MG_CUDNN_CHECK(cudnnCreate(&h));
  MG_CUDNN_CHECK(cudnnSetStream(h, CudaDevice::get(index).stream()));
  handles->emplace(index, h);
  return h;
}

void set_tensor(cudnnTensorDescriptor_t desc, Dtype dtype,
                std::vector<int64_t> dims) {
  while (dims.size() < 4) dims.push_back(1);
  std::vector<int> d(dims.size()), strides(dims.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (dims[i] > INT_MAX || stride > INT_MAX) {
      throw std::runtime_error(
          "[cudnn] a tensor dimension or stride is past "
          "2^31 - 1");
    }
    d[i] = static_cast<int>(dims[i]);
    strides[i] = static_cast<int>(stride);
    stride *= std::max<int64_t>(dims[i], 1);
  }
  MG_CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc, cudnn_data_type(dtype),
                                            static_cast<int>(d.size()),
                                            d.data(), strides.data()));
}

}  // namespace mg::cuda
