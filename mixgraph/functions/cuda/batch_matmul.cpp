// BatchMatmul on CUDA: one strided-batched cuBLAS product per pass
// (cublasGemmStridedBatchedEx: fp16/bf16 on the tensor cores, fp32
// compute). With C = op(A) op(B), backward is dop(A) = dC op(B)^T and
// dop(B) = op(A)^T dC, each written in A's (B's) own layout.
#include <mixgraph/functions/batch_matmul.hpp>

#include <mixgraph/contexts/cuda/cublas_utils.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>

namespace mg::cuda {

namespace {

template <class T>
class BatchMatmulCuda : public BatchMatmul {
 public:
  using BatchMatmul::BatchMatmul;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    constexpr Dtype t = dtype_of<T>;
    gemm_batched(l.index, opts_.transpose_a, opts_.transpose_b, m_, n_, k_,
                 1.0f, input<T>(*this, in[0]), t, m_ * k_,
                 input<T>(*this, in[1]), t, k_ * n_, 0.0f,
                 output<T>(*this, out[0]), t, m_ * n_, batch_);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const Launch l(*this);
    constexpr Dtype t = dtype_of<T>;
    const bool ta = opts_.transpose_a, tb = opts_.transpose_b;
    const T* a = input<T>(*this, in[0]);
    const T* b = input<T>(*this, in[1]);
    const T* dc = output_grad<T>(*this, out[0]);
    const int64_t sa = m_ * k_, sb = k_ * n_, sc = m_ * n_;
    if (propagate_down[0]) {
      T* da = input_grad<T>(*this, in[0], accum[0]);
      const float beta = accum[0] ? 1.0f : 0.0f;
      if (!ta) {  // dA (m x k) = dC op(B)^T
        gemm_batched(l.index, false, !tb, m_, k_, n_, 1.0f, dc, t, sc, b, t, sb,
                     beta, da, t, sa, batch_);
      } else {  // A is k x m: dA = op(B) dC^T
        gemm_batched(l.index, tb, true, k_, m_, n_, 1.0f, b, t, sb, dc, t, sc,
                     beta, da, t, sa, batch_);
      }
    }
    if (propagate_down[1]) {
      T* db = input_grad<T>(*this, in[1], accum[1]);
      const float beta = accum[1] ? 1.0f : 0.0f;
      if (!tb) {  // dB (k x n) = op(A)^T dC
        gemm_batched(l.index, !ta, false, k_, n_, m_, 1.0f, a, t, sa, dc, t, sc,
                     beta, db, t, sb, batch_);
      } else {  // B is n x k: dB = dC^T op(A)
        gemm_batched(l.index, true, ta, n_, k_, m_, 1.0f, dc, t, sc, a, t, sa,
                     beta, db, t, sb, batch_);
      }
    }
  }
};

}  // namespace

void register_batch_matmul(FunctionRegistry& r) {
  register_float_types<BatchMatmulCuda>(r, decl::BatchMatmul, "cuda");
}

}  // namespace mg::cuda
