// Affine on the CPU: the matrix products go through oneDNN (cpu::gemm).
// Where they compute in fp32 (half), inputs held in fp32 (W's master copy,
// data fed in fp32) are read as they are, and W's grad is written in fp32.
#include <mixgraph/functions/affine.hpp>

#include <memory>
#include <type_traits>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class AffineCpu : public Affine {
 public:
  using Affine::Affine;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // The bias stays fp32: it is added to the fp32 accumulator.
    const float* b = in.size() == 3 ? input<float>(in[2]) : nullptr;
    std::unique_ptr<Memory> xf;
    gemm<T>(false, false, batch_, outputs_, features_,
            product_operand<T>(in[0]->data(), false, xf), operand<T>(in[1]),
            output<T>(out[0]), b);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    std::unique_ptr<Memory> dyf, xf;
    const Operand g = product_operand<T>(out[0]->grad(), true, dyf);
    if (propagate_down[0]) {  // dx = dy W^T
      gemm<T>(false, true, batch_, features_, outputs_, g, operand<T>(in[1]),
              input_grad<T>(in[0], accum[0]), nullptr, accum[0]);
    }
    if (propagate_down[1]) {  // dW = x^T dy, fp32 for an fp32 master
      const Operand x = product_operand<T>(in[0]->data(), false, xf);
      // Where the product saw every value of dW finite as it wrote it, the
      // loss scaler's check need not read it again (a pass over the
      // weights: 8% of an MLP's half step).
      bool finite = false;
      if (grad_in_float<T>(in[1])) {
        gemm<float>(true, false, features_, outputs_, batch_, x, g,
                    input_grad<float>(in[1], accum[1]), nullptr, accum[1], 1,
                    &finite);
      } else {
        gemm<T>(true, false, features_, outputs_, batch_, x, g,
                input_grad<T>(in[1], accum[1]), nullptr, accum[1], 1, &finite);
      }
      if (finite) in[1]->grad()->array().mark_finite();
    }
    if (in.size() == 3 && propagate_down[2]) {  // db = sum over the batch
      std::vector<float> db(outputs_, 0.0f);
      // dy as the products read it: its fp32 copy, or as held (widened
      // in the sums' loop).
      if (g.dtype == Dtype::f32) {
        column_sums(static_cast<const float*>(g.data), batch_, outputs_,
                    db.data());
      } else {
        column_sums(static_cast<const T*>(g.data), batch_, outputs_, db.data());
      }
      store_grad<T>(db.data(), in[2], accum[2]);
    }
  }
};

}  // namespace

void register_affine(FunctionRegistry& r) {
  register_float_types<AffineCpu>(r, decl::Affine, "cpu");
}

}  // namespace mg::cpu
