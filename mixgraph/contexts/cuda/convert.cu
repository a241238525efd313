// Conversions and fills on the device, through the same convert_one as the
// host's scalar path, so a conversion gives the same bits on both.
#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>

namespace mg::cuda {

namespace {

template <class S, class D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    dst[i] = convert_one<D>(src[i]);
  }
}

template <class T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    dst[i] = value;
  }
}

}  // namespace

void convert_on_device(const void* src, Dtype src_dtype, void* dst,
                       Dtype dst_dtype, size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (src_dtype == dst_dtype) {
    MG_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(src_dtype),
                                  cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const int64_t count = static_cast<int64_t>(n);
  dispatch_all_types(src_dtype, "convert_on_device", [&](auto s) {
    using S = typename decltype(s)::type;
    dispatch_all_types(dst_dtype, "convert_on_device", [&](auto d) {
      using D = typename decltype(d)::type;
      convert_kernel<S, D><<<blocks_for(count), kThreads, 0, stream>>>(
          static_cast<const S*>(src), static_cast<D*>(dst), count);
    });
  });
  MG_CUDA_CHECK_LAUNCH();
}

void fill_on_device(void* dst, Dtype dtype, double value, size_t n,
                    cudaStream_t stream) {
  if (n == 0) return;
  if (value == 0.0) {  // every dtype's zero is all zero bits
    MG_CUDA_CHECK(cudaMemsetAsync(dst, 0, n * dtype_size(dtype), stream));
    return;
  }
  const int64_t count = static_cast<int64_t>(n);
  dispatch_all_types(dtype, "fill_on_device", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T*>(dst), convert_one<T>(value), count);
  });
  MG_CUDA_CHECK_LAUNCH();
}

}  // namespace mg::cuda
