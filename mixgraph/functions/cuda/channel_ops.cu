// The small kernels of functions/cuda/kernels.hpp: per-channel sums, bias,
// scaling, fp32 results stored to the storage type, and FusedBatch-
// Normalization's forward and ReLU grad (index bodies of index_kernels.hpp).
#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/half.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

// One block per channel: the (outer, inner) elements of channel c, summed
// per thread, then in a fixed tree.
template <class T>
__global__ void channel_sums_kernel(const T* dy, const T* x, const float* mean,
                                    int64_t outer, int64_t C, int64_t inner,
                                    float* sum_dy, float* sum_dy_xmu) {
  __shared__ float s0[kThreads], s1[kThreads];
  const int64_t count = outer * inner;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const float mu = mean ? mean[c] : 0.0f;
    float a = 0.0f, b = 0.0f;
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const int64_t o = r / inner, j = r - o * inner;
      const int64_t off = (o * C + c) * inner + j;
      const float d = static_cast<float>(dy[off]);
      a += d;
      if (x) b += d * (static_cast<float>(x[off]) - mu);
    }
    s0[threadIdx.x] = a;
    s1[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        s0[threadIdx.x] += s0[threadIdx.x + s];
        s1[threadIdx.x] += s1[threadIdx.x + s];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      sum_dy[c] = s0[0];
      if (x) sum_dy_xmu[c] = s1[0];
    }
    __syncthreads();
  }
}

template <class T, class S>
__global__ void add_bias_kernel(const S* src, const float* b, T* y, int64_t n,
                                int64_t C, int64_t inner) {
  MG_GRID_STRIDE(i, n) {
    const int64_t c = (i / inner) % C;
    y[i] = T(static_cast<float>(src[i]) + b[c]);
  }
}

template <class T>
__global__ void store_kernel(const float* src, T* dst, int64_t n, bool accum) {
  MG_GRID_STRIDE(i, n) {
    dst[i] = T(accum ? static_cast<float>(dst[i]) + src[i] : src[i]);
  }
}

template <class T>
__global__ void channel_scale_kernel(const T* dy, const float* a, T* dx,
                                     int64_t n, int64_t C, int64_t inner,
                                     bool accum) {
  MG_GRID_STRIDE(i, n) {
    const float g = a[(i / inner) % C] * static_cast<float>(dy[i]);
    dx[i] = T(accum ? static_cast<float>(dx[i]) + g : g);
  }
}

template <class T>
__global__ void bn_inference_grads_kernel(const float* sum_dy,
                                          const float* sum_dy_xmu,
                                          const float* gamma, const float* var,
                                          float eps, int64_t C, float* a,
                                          T* dbeta, bool accum_beta, T* dgamma,
                                          bool accum_gamma) {
  MG_GRID_STRIDE(c, C) {
    const float inv_std = 1.0f / sqrtf(var[c] + eps);
    a[c] = gamma[c] * inv_std;
    if (dbeta) {
      dbeta[c] =
          T(accum_beta ? static_cast<float>(dbeta[c]) + sum_dy[c] : sum_dy[c]);
    }
    if (dgamma) {
      const float g = sum_dy_xmu[c] * inv_std;
      dgamma[c] = T(accum_gamma ? static_cast<float>(dgamma[c]) + g : g);
    }
  }
}

}  // namespace

template <class T>
void channel_sums(const T* dy, const T* x, const float* mean, int64_t outer,
                  int64_t C, int64_t inner, float* sum_dy, float* sum_dy_xmu,
                  cudaStream_t stream) {
  if (C == 0) return;
  const unsigned grid = static_cast<unsigned>(C < 65535 * 8 ? C : 65535 * 8);
  channel_sums_kernel<T><<<grid, kThreads, 0, stream>>>(
      dy, x, mean, outer, C, inner, sum_dy, sum_dy_xmu);
  MG_CUDA_CHECK_LAUNCH();
}

template <class T, class S>
void add_channel_bias(const S* src, const float* b, T* y, int64_t outer,
                      int64_t C, int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * C * inner;
  if (n == 0) return;
  add_bias_kernel<T, S>
      <<<blocks_for(n), kThreads, 0, stream>>>(src, b, y, n, C, inner);
  MG_CUDA_CHECK_LAUNCH();
}

template <class T>
void store_f32(const float* src, T* dst, int64_t n, bool accum,
               cudaStream_t stream) {
  if (n == 0) return;
  store_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n, accum);
  MG_CUDA_CHECK_LAUNCH();
}

template <class T>
void channel_scale(const T* dy, const float* a, T* dx, int64_t outer, int64_t C,
                   int64_t inner, bool accum, cudaStream_t stream) {
  const int64_t n = outer * C * inner;
  if (n == 0) return;
  channel_scale_kernel<T>
      <<<blocks_for(n), kThreads, 0, stream>>>(dy, a, dx, n, C, inner, accum);
  MG_CUDA_CHECK_LAUNCH();
}

template <class T>
void bn_inference_grads(const float* sum_dy, const float* sum_dy_xmu,
                        const float* gamma, const float* var, float eps,
                        int64_t C, float* a, T* dbeta, bool accum_beta,
                        T* dgamma, bool accum_gamma, cudaStream_t stream) {
  if (C == 0) return;
  bn_inference_grads_kernel<T><<<blocks_for(C), kThreads, 0, stream>>>(
      sum_dy, sum_dy_xmu, gamma, var, eps, C, a, dbeta, accum_beta, dgamma,
      accum_gamma);
  MG_CUDA_CHECK_LAUNCH();
}

template <class T>
void fused_bn_forward(const T* x, const T* z, const float* mean,
                      const float* inv_std, const float* gamma,
                      const float* beta, T* y, int64_t outer, int64_t C,
                      int64_t inner, cudaStream_t stream) {
  launch(outer * C * inner,
         FusedBnForwardBody<T>{x, z, mean, inv_std, gamma, beta, y, C, inner},
         stream);
}

void inv_std_of(const float* var, float eps, float* inv_std, int64_t C,
                cudaStream_t stream) {
  launch(C, InvStdBody{var, eps, inv_std}, stream);
}

template <class T>
void relu_mask(const T* y, const T* dy, T* dm, T* dz, bool accum_z, int64_t n,
               cudaStream_t stream) {
  launch(n, ReluMaskBody<T>{y, dy, dm, dz, accum_z}, stream);
}

#define MG_INSTANTIATE(T)                                                      \
  template void channel_sums<T>(const T*, const T*, const float*, int64_t,     \
                                int64_t, int64_t, float*, float*,              \
                                cudaStream_t);                                 \
  template void add_channel_bias<T, T>(const T*, const float*, T*, int64_t,    \
                                       int64_t, int64_t, cudaStream_t);        \
  template void store_f32<T>(const float*, T*, int64_t, bool, cudaStream_t);   \
  template void channel_scale<T>(const T*, const float*, T*, int64_t, int64_t, \
                                 int64_t, bool, cudaStream_t);                 \
  template void bn_inference_grads<T>(                                         \
      const float*, const float*, const float*, const float*, float, int64_t,  \
      float*, T*, bool, T*, bool, cudaStream_t);                               \
  template void fused_bn_forward<T>(                                           \
      const T*, const T*, const float*, const float*, const float*,            \
      const float*, T*, int64_t, int64_t, int64_t, cudaStream_t);              \
  template void relu_mask<T>(const T*, const T*, T*, T*, bool, int64_t,        \
                             cudaStream_t);
MG_INSTANTIATE(float)
MG_INSTANTIATE(Half)
MG_INSTANTIATE(BFloat16)
#undef MG_INSTANTIATE
template void add_channel_bias<Half, float>(const float*, const float*, Half*,
                                            int64_t, int64_t, int64_t,
                                            cudaStream_t);
template void add_channel_bias<BFloat16, float>(const float*, const float*,
                                                BFloat16*, int64_t, int64_t,
                                                int64_t, cudaStream_t);

}  // namespace mg::cuda
