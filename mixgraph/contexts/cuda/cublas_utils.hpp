// cuBLAS plumbing: errors with cuBLAS's text, dtype to cudaDataType, one
// handle per device on its stream, and the row-major GEMM the backend uses.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/dtype.hpp>

namespace mg::cuda {

/// Throws std::runtime_error "<call> failed: <cuBLAS status text>" unless ok.
void check_cublas(cublasStatus_t s, const char* call, const char* file,
                  int line);
#define MG_CUBLAS_CHECK(call) \
  ::mg::cuda::check_cublas((call), #call, __FILE__, __LINE__)

/// CUDA_R_32F, CUDA_R_16F or CUDA_R_16BF; std::invalid_argument otherwise.
cudaDataType_t cuda_data_type(Dtype dtype);

/// The cuBLAS handle of device `index`, bound to the device's stream.
cublasHandle_t cublas_handle(int index);

/// C = alpha op(A) op(B) + beta C for row-major matrices: op(A) is m x k,
/// op(B) k x n, C m x n. Inputs of any float dtype (fp16 and bf16 go to the
/// tensor cores), fp32 compute, C of its own dtype (beta scales what C
/// holds). On device `index`, on its stream.
void gemm(int index, bool trans_a, bool trans_b, int64_t m, int64_t n,
          int64_t k, float alpha, const void* a, Dtype a_type, const void* b,
          Dtype b_type, float beta, void* c, Dtype c_type);

/// The same for `batch` products at once: the i-th reads a + i stride_a and
/// b + i stride_b and writes c + i stride_c (strides in elements).
void gemm_batched(int index, bool trans_a, bool trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const void* a, Dtype a_type,
                  int64_t stride_a, const void* b, Dtype b_type,
                  int64_t stride_b, float beta, void* c, Dtype c_type,
                  int64_t stride_c, int64_t batch);

}  // namespace mg::cuda
