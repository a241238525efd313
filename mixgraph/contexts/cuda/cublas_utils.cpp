// cuBLAS is loaded on first use (dlopen), not linked: loading cuBLAS and
// cuBLASLt costs every process about 80 ms, which a program (or test) that
// never multiplies on a GPU should not pay.
#include <mixgraph/contexts/cuda/cublas_utils.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <string>

namespace mg::cuda {

namespace {

// The seven cuBLAS entry points mixgraph uses.
struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t,
                            cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType,
                            int, cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched_ex)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
      const void*, const void*, cudaDataType, int, long long int, const void*,
      cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
      long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  const char* (*status_name)(cublasStatus_t);
  const char* (*status_string)(cublasStatus_t);
};

const Cublas& cublas() {
  static const Cublas api = [] {
    const std::string soname =
        "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      throw std::runtime_error(msg("[cublas] cannot load ", soname, ": ",
                                   (why ? why : "unknown error")));
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(lib, name);
      if (!p) {
        throw std::runtime_error(
            msg("[cublas] ", soname, " has no symbol ", name));
      }
      return p;
    };
    Cublas a;
    a.create = reinterpret_cast<decltype(a.create)>(sym("cublasCreate_v2"));
    a.set_stream =
        reinterpret_cast<decltype(a.set_stream)>(sym("cublasSetStream_v2"));
    a.set_math_mode =
        reinterpret_cast<decltype(a.set_math_mode)>(sym("cublasSetMathMode"));
    a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(sym("cublasGemmEx"));
    a.gemm_strided_batched_ex =
        reinterpret_cast<decltype(a.gemm_strided_batched_ex)>(
            sym("cublasGemmStridedBatchedEx"));
    a.status_name =
        reinterpret_cast<decltype(a.status_name)>(sym("cublasGetStatusName"));
    a.status_string = reinterpret_cast<decltype(a.status_string)>(
        sym("cublasGetStatusString"));
    return a;
  }();
  return api;
}

}  // namespace

void check_cublas(cublasStatus_t s, const char* call, const char* file,
                  int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(
      msg("[cublas] ", call, " failed: ", cublas().status_name(s), ": ",
          cublas().status_string(s), " (", file, ":", line, ")"));
}

cudaDataType_t cuda_data_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return CUDA_R_32F;
    case Dtype::f16:
      return CUDA_R_16F;
    case Dtype::bf16:
      return CUDA_R_16BF;
    default:
      break;
  }
  throw std::invalid_argument(msg("[cublas] unsupported dtype ",
                                  dtype_name(dtype),
                                  "; expected float, half or bfloat16"));
}

cublasHandle_t cublas_handle(int index) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasHandle_t>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(index);
  if (it != handles->end()) return it->second;
  DeviceGuard guard(index);
  cublasHandle_t h = nullptr;
  MG_CUBLAS_CHECK(cublas().create(&h));
  MG_CUBLAS_CHECK(cublas().set_stream(h, CudaDevice::get(index).stream()));
  // fp32 compute all the way: by default cuBLAS may add split-K partial
  // products in the output type (fp16 / bf16) when it is narrower than the
  // compute type. Tensor cores stay allowed for fp16 and bf16 inputs.
  MG_CUBLAS_CHECK(cublas().set_math_mode(
      h, static_cast<cublasMath_t>(
             CUBLAS_DEFAULT_MATH |
             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  handles->emplace(index, h);
  return h;
}

void gemm(int index, bool trans_a, bool trans_b, int64_t m, int64_t n,
          int64_t k, float alpha, const void* a, Dtype a_type, const void* b,
          Dtype b_type, float beta, void* c, Dtype c_type) {
  gemm_batched(index, trans_a, trans_b, m, n, k, alpha, a, a_type, 0, b, b_type,
               0, beta, c, c_type, 0, 1);
}

void gemm_batched(int index, bool trans_a, bool trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const void* a, Dtype a_type,
                  int64_t stride_a, const void* b, Dtype b_type,
                  int64_t stride_b, float beta, void* c, Dtype c_type,
                  int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX) {
    throw std::runtime_error(msg("[cublas] gemm of ", batch, " x ", m, " x ", n,
                                 " x ", k, " has a side past 2^31 - 1"));
  }
  DeviceGuard guard(index);
  cublasHandle_t h = cublas_handle(index);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // row-major arrays read as column-major are already the transposes.
  const int lda = static_cast<int>(std::max<int64_t>(1, trans_a ? m : k));
  const int ldb = static_cast<int>(std::max<int64_t>(1, trans_b ? k : n));
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // With k = 0 cuBLAS leaves C as beta C, which is what the product means.
  if (batch == 1) {
    MG_CUBLAS_CHECK(cublas().gemm_ex(
        h, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k), &alpha, b, cuda_data_type(b_type), ldb, a,
        cuda_data_type(a_type), lda, &beta, c, cuda_data_type(c_type),
        static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  MG_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
      h, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b, cuda_data_type(b_type), ldb, stride_b, a,
      cuda_data_type(a_type), lda, stride_a, &beta, c, cuda_data_type(c_type),
      static_cast<int>(n), stride_c, static_cast<int>(batch),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace mg::cuda
