// Small kernels the CUDA and cuDNN functions share (channel sums, bias,
// fp32 to storage type), and the reduction the binary functions' backward
// uses. T is float, Half or BFloat16; everything accumulates in fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include <mixgraph/graph/shape.hpp>

namespace mg::cuda {

/// Per channel c of an (outer, C, inner) array: sum_dy[c] = the sum of dy,
/// and when x is given sum_dy_xmu[c] = the sum of dy (x - mean[c]) (mean may
/// be null for 0). One block per channel, a fixed order: deterministic.
template <class T>
void channel_sums(const T* dy, const T* x, const float* mean, int64_t outer,
                  int64_t C, int64_t inner, float* sum_dy, float* sum_dy_xmu,
                  cudaStream_t stream);

/// y = src + b[c] per channel of an (outer, C, inner) array, rounded to T
/// once; src is fp32 (a GEMM's fp32 result) or T (and may be y).
template <class T, class S>
void add_channel_bias(const S* src, const float* b, T* y, int64_t outer,
                      int64_t C, int64_t inner, cudaStream_t stream);

/// dst = src (or dst + src with accum), rounded to T.
template <class T>
void store_f32(const float* src, T* dst, int64_t n, bool accum,
               cudaStream_t stream);

/// dx = a[c] dy (+ dx with accum) per channel.
template <class T>
void channel_scale(const T* dy, const float* a, T* dx, int64_t outer, int64_t C,
                   int64_t inner, bool accum, cudaStream_t stream);

/// BatchNormalization with running statistics, backward: from the channel
/// sums of dy and dy (x - mean), a[c] = gamma[c] / sqrt(var[c] + eps) (for
/// dx = a dy), dbeta = sum_dy and dgamma = sum_dy_xmu / sqrt(var + eps),
/// each stored to T when not null (added with its accum flag).
template <class T>
void bn_inference_grads(const float* sum_dy, const float* sum_dy_xmu,
                        const float* gamma, const float* var, float eps,
                        int64_t C, float* a, T* dbeta, bool accum_beta,
                        T* dgamma, bool accum_gamma, cudaStream_t stream);

/// FusedBatchNormalization's forward over an (outer, C, inner) array from
/// the statistics (index_kernels.hpp's FusedBnForwardBody); z may be null.
template <class T>
void fused_bn_forward(const T* x, const T* z, const float* mean,
                      const float* inv_std, const float* gamma,
                      const float* beta, T* y, int64_t outer, int64_t C,
                      int64_t inner, cudaStream_t stream);

/// inv_std[c] = 1 / sqrt(var[c] + eps) for C channels (InvStdBody).
void inv_std_of(const float* var, float eps, float* inv_std, int64_t C,
                cudaStream_t stream);

/// Its ReLU grad: dm = dy where y > 0, and dz = dm (added with accum_z)
/// where dz is not null; index_kernels.hpp's ReluMaskBody.
template <class T>
void relu_mask(const T* y, const T* dy, T* dm, T* dz, bool accum_z, int64_t n,
               cudaStream_t stream);

/// y = the sum of the fp32 array x of `shape` over `axes` (sorted, in
/// range), in the order of the kept axes; on device `index`.
void reduce_sum_f32(int index, const float* x, const Shape& shape,
                    const std::vector<int>& axes, float* y,
                    cudaStream_t stream);

}  // namespace mg::cuda
