#include <mixgraph/contexts/cuda/cublas_utils.hpp>

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <string>

namespace mg::cuda {

void check_cublas(cublasStatus_t s, const char* call, const char* file,
                  int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("[cublas] ") + call + " failed: " +
                           cublasGetStatusName(s) + ": " +
                           cublasGetStatusString(s) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

cudaDataType_t cuda_data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32: return CUDA_R_32F;
    case Dtype::f16: return CUDA_R_16F;
    case Dtype::bf16: return CUDA_R_16BF;
    default: break;
  }
  throw std::invalid_argument(std::string("[cublas] unsupported dtype ") +
                              dtype_name(dtype) +
                              "; expected float, half or bfloat16");
}

cublasHandle_t cublas_handle(int index) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(index);
  if (it != handles->end()) return it->second;
  DeviceGuard guard(index);
  cublasHandle_t h = nullptr;
  MG_CUBLAS_CHECK(cublasCreate(&h));
  MG_CUBLAS_CHECK(cublasSetStream(h, CudaDevice::get(index).stream()));
  handles->emplace(index, h);
  return h;
}

void gemm(int index, bool trans_a, bool trans_b, int64_t m, int64_t n,
          int64_t k, float alpha, const void* a, Dtype a_type, const void* b,
          Dtype b_type, float beta, void* c, Dtype c_type) {
  if (m == 0 || n == 0) return;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    throw std::runtime_error("[cublas] gemm of " + std::to_string(m) + " x " +
                             std::to_string(n) + " x " + std::to_string(k) +
                             " has a side past 2^31 - 1");
  }
  DeviceGuard guard(index);
  cublasHandle_t h = cublas_handle(index);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // row-major arrays read as column-major are already the transposes.
  const int lda = static_cast<int>(std::max<int64_t>(1, trans_a ? m : k));
  const int ldb = static_cast<int>(std::max<int64_t>(1, trans_b ? k : n));
  // With k = 0 cuBLAS leaves C as beta C, which is what the product means.
  MG_CUBLAS_CHECK(cublasGemmEx(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
      cuda_data_type(b_type), ldb, a, cuda_data_type(a_type), lda, &beta, c,
      cuda_data_type(c_type), static_cast<int>(n), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace mg::cuda
