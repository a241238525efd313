// Affine on CUDA: the products through cuBLAS (cublasGemmEx, fp16/bf16 on
// the tensor cores, fp32 compute). With a bias, a 16-bit product stays fp32
// until the bias is added, so y is rounded once, as on the CPU.
#include <mixgraph/functions/affine.hpp>

#include <type_traits>

#include <mixgraph/contexts/cuda/cublas_utils.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>

namespace mg::cuda {

namespace {

template <class T>
class AffineCuda : public Affine {
 public:
  using Affine::Affine;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    constexpr Dtype t = dtype_of<T>;
    const T* x = input<T>(*this, in[0]);
    const T* w = input<T>(*this, in[1]);
    T* y = output<T>(*this, out[0]);
    if (in.size() < 3) {
      gemm(l.index, false, false, batch_, outputs_, features_, 1.0f, x, t, w, t,
           0.0f, y, t);
      return;
    }
    // The bias stays fp32: it is added to the fp32 product.
    const float* b = input<float>(*this, in[2]);
    std::unique_ptr<Memory> acc;
    float* c = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      c = y;
    } else {
      acc = l.scratch(batch_ * outputs_ * sizeof(float));
      c = static_cast<float*>(acc->ptr());
    }
    gemm(l.index, false, false, batch_, outputs_, features_, 1.0f, x, t, w, t,
         0.0f, c, Dtype::f32);
    add_channel_bias<T, float>(c, b, y, batch_, outputs_, 1, l.stream);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const Launch l(*this);
    constexpr Dtype t = dtype_of<T>;
    const T* dy = output_grad<T>(*this, out[0]);
    if (propagate_down[0]) {  // dx = dy W^T
      gemm(l.index, false, true, batch_, features_, outputs_, 1.0f, dy, t,
           input<T>(*this, in[1]), t, accum[0] ? 1.0f : 0.0f,
           input_grad<T>(*this, in[0], accum[0]), t);
    }
    if (propagate_down[1]) {  // dW = x^T dy, fp32 for an fp32 master
      const bool f32 = grad_in_float<T>(*this, in[1]);
      void* dw =
          f32 ? static_cast<void*>(input_grad<float>(*this, in[1], accum[1]))
              : static_cast<void*>(input_grad<T>(*this, in[1], accum[1]));
      gemm(l.index, true, false, features_, outputs_, batch_, 1.0f,
           input<T>(*this, in[0]), t, dy, t, accum[1] ? 1.0f : 0.0f, dw,
           f32 ? Dtype::f32 : t);
    }
    if (in.size() == 3 && propagate_down[2]) {  // db = sum over the batch
      auto sums = l.scratch(outputs_ * sizeof(float));
      float* s = static_cast<float*>(sums->ptr());
      channel_sums<T>(dy, nullptr, nullptr, batch_, outputs_, 1, s, nullptr,
                      l.stream);
      store_param_grad<T>(*this, s, in[2], accum[2], l.stream);
    }
  }
};

}  // namespace

void register_affine(FunctionRegistry& r) {
  register_float_types<AffineCuda>(r, decl::Affine, "cuda");
}

}  // namespace mg::cuda
