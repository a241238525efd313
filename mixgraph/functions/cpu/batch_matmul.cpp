// BatchMatmul on the CPU: one batched oneDNN matrix product (cpu::gemm, fp32
// accumulation) for all batch entries.
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class BatchMatmulCpu : public BatchMatmul {
 public:
  using BatchMatmul::BatchMatmul;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* a = input<T>(in[0]);
    const T* b = input<T>(in[1]);
    T* y = output<T>(out[0]);
    const bool ta = opts_.transpose_a, tb = opts_.transpose_b;
    gemm<T>(ta, tb, m_, n_, k_, a, b, y, nullptr, false, batch_);
  }

  // With y = op(a) op(b): d op(a) = dy op(b)^T and d op(b) = op(a)^T dy,
  // transposed back where a (b) is stored transposed.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const Operand a{input<T>(in[0]), dtype_of<T>};
    const Operand b{input<T>(in[1]), dtype_of<T>};
    // dy serves both products: where they compute in fp32, converted once.
    std::unique_ptr<Memory> dyf;
    const Operand dy = product_operand<T>(out[0]->grad(), true, dyf);
    const bool ta = opts_.transpose_a, tb = opts_.transpose_b;
    if (propagate_down[0]) {
      T* da = input_grad<T>(in[0], accum[0]);
      if (!ta) {  // da (M, K) = dy op(b)^T
        gemm<T>(false, !tb, m_, k_, n_, dy, b, da, nullptr, accum[0], batch_);
      } else {  // da (K, M) = op(b) dy^T
        gemm<T>(tb, true, k_, m_, n_, b, dy, da, nullptr, accum[0], batch_);
      }
    }
    if (propagate_down[1]) {
      T* db = input_grad<T>(in[1], accum[1]);
      if (!tb) {  // db (K, N) = op(a)^T dy
        gemm<T>(!ta, false, k_, n_, m_, a, dy, db, nullptr, accum[1], batch_);
      } else {  // db (N, K) = dy^T op(a)
        gemm<T>(true, ta, n_, k_, m_, dy, a, db, nullptr, accum[1], batch_);
      }
    }
  }
};

}  // namespace

void register_batch_matmul(FunctionRegistry& r) {
  register_float_types<BatchMatmulCpu>(r, decl::BatchMatmul, "cpu");
}

}  // namespace mg::cpu
