// BatchNormalization through cuDNN (CUDNN_BATCHNORM_SPATIAL over x seen as
// (batch axes, channels, rest, 1)): training forward and backward, and
// inference forward; beta, gamma and the running statistics are fp32 for
// every storage type (cuDNN's derived parameter descriptor). cuDNN updates
// the running variance with the unbiased batch variance, as NNabla does.
// Backward with the running statistics (batch_stat false) is not cuDNN's
// training backward: it runs as small kernels (functions/cuda/kernels.hpp).
// FusedBatchNormalization is the same kernel, its y computed again from x
// with cuDNN's batch statistics, z and the ReLU (FusedBnForwardBody: one
// rounding, as on the CPU; in inference from the running statistics alone),
// and its backward masks dy (ReluMaskBody, which also writes z's grad)
// before cuDNN's backward reads it.
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>

#include <type_traits>

#include <mixgraph/contexts/cuda/cudnn_utils.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>

namespace mg::cuda {

namespace {

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

// Fn: BatchNormalization or FusedBatchNormalization.
template <class T, class Fn>
class BatchNormalizationCudnn : public Fn {
 public:
  using Fn::Fn;

 protected:
  using Fn::opts_;
  using Fn::size0_;
  using Fn::size1_;
  using Fn::size2_;
  static constexpr bool kFused = std::is_same_v<Fn, FusedBatchNormalization>;

  void setup_full(const Variables& in, const Variables& out) override {
    Fn::setup_full(in, out);
    if (in[0]->size() == 0) return;  // nothing to run
    set_tensor(x_, dtype_of<T>, {size0_, size1_, size2_, 1});
    MG_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(bn_, x_, kMode));
  }

  void forward_full(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const T* x = input<T>(*this, in[0]);
    const float* beta = input<float>(*this, in[1]);
    const float* gamma = input<float>(*this, in[2]);
    const T* z = kFused && in.size() == 6 ? input<T>(*this, in[5]) : nullptr;
    T* y = output<T>(*this, out[0]);
    if (in[0]->size() == 0) return;
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = cudnn_handle(l.index);
    if (kFused && !opts_.batch_stat) {
      // The running statistics as they are: no cuDNN call needed.
      auto inv_std = l.scratch(size1_ * sizeof(float));
      float* is = static_cast<float*>(inv_std->ptr());
      inv_std_of(input<float>(*this, in[4]), opts_.eps, is, size1_, l.stream);
      fused_bn_forward<T>(x, z, input<float>(*this, in[3]), is, gamma, beta, y,
                          size0_, size1_, size2_, l.stream);
      return;
    }
    if (opts_.batch_stat) {
      // The running statistics are fp32 whatever T is.
      float* rm = in[3]->data()->template cast<float>(false, this->device());
      float* rv = in[4]->data()->template cast<float>(false, this->device());
      save_mean_ = l.scratch(size1_ * sizeof(float));
      save_inv_std_ = l.scratch(size1_ * sizeof(float));
      MG_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
          h, kMode, &one, &zero, x_, x, x_, y, bn_, gamma, beta,
          1.0 - opts_.decay_rate, rm, rv, opts_.eps, save_mean_->ptr(),
          save_inv_std_->ptr()));
    } else {
      MG_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          h, kMode, &one, &zero, x_, x, x_, y, bn_, gamma, beta,
          input<float>(*this, in[3]), input<float>(*this, in[4]), opts_.eps));
    }
    if constexpr (kFused) {
      // y again from x with cuDNN's batch statistics, z and the ReLU, one
      // rounding (cuDNN's y would round before z is added).
      fused_bn_forward<T>(x, z, static_cast<const float*>(save_mean_->ptr()),
                          static_cast<const float*>(save_inv_std_->ptr()),
                          gamma, beta, y, size0_, size1_, size2_, l.stream);
    }
  }

  void backward_full(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if constexpr (!kFused) {
      backward_bn(in, out, propagate_down, accum, nullptr);
    } else {
      const bool to_z = in.size() == 6 && propagate_down[5];
      const bool to_bn =
          propagate_down[0] || propagate_down[1] || propagate_down[2];
      if (!to_z && !to_bn) return;
      const Launch l(*this);
      const int64_t n = out[0]->size();
      // z may be x itself (one grad array): the masked grad is then added
      // to dx last, as the CPU's fused layer does.
      const bool z_is_x =
          to_z && &in[5]->grad()->array() == &in[0]->grad()->array();
      const T* y = input<T>(*this, out[0]);
      const T* dy = output_grad<T>(*this, out[0]);
      T* dz = to_z && !z_is_x ? input_grad<T>(*this, in[5], accum[5]) : nullptr;
      auto masked = l.scratch(n * sizeof(T));
      T* dm = static_cast<T*>(masked->ptr());
      relu_mask<T>(y, dy, dm, dz, to_z && accum[5], n, l.stream);
      if (to_bn) backward_bn(in, out, propagate_down, accum, dm);
      if (z_is_x) {
        relu_mask<T>(y, dy, dm, input_grad<T>(*this, in[0], true), true, n,
                     l.stream);
      }
    }
  }

  // BatchNormalization's backward, from dy_masked where given (the fused
  // layer's ReLU grad) instead of y's grad.
  void backward_bn(const Variables& in, const Variables& out,
                   const std::vector<bool>& propagate_down,
                   const std::vector<bool>& accum, const T* dy_masked) {
    if (!propagate_down[0] && !propagate_down[1] && !propagate_down[2]) return;
    const Launch l(*this);
    const int64_t C = size1_;
    const T* x = input<T>(*this, in[0]);
    const T* dy = dy_masked ? dy_masked : output_grad<T>(*this, out[0]);
    const float* gamma = input<float>(*this, in[2]);
    T* dx = propagate_down[0] ? input_grad<T>(*this, in[0], accum[0]) : nullptr;
    if (in[0]->size() == 0) return;
    if (!opts_.batch_stat) {
      // mu and 1 / sqrt(var + eps) are constants: dx = gamma inv_std dy.
      const float* rm = input<float>(*this, in[3]);
      const float* rv = input<float>(*this, in[4]);
      // Channel sums, a = gamma inv_std, then dbeta and dgamma in fp32,
      // stored as the batch-statistics path stores them (fp32 for the fp32
      // master beta and gamma, as on the CPU).
      auto buf = l.scratch(5 * C * sizeof(float));
      float* sums = static_cast<float*>(buf->ptr());
      float* dbeta32 = sums + 3 * C;
      float* dgamma32 = sums + 4 * C;
      channel_sums<T>(dy, x, rm, size0_, C, size2_, sums, sums + C, l.stream);
      bn_inference_grads<float>(
          sums, sums + C, gamma, rv, opts_.eps, C, sums + 2 * C,
          propagate_down[1] ? dbeta32 : nullptr, false,
          propagate_down[2] ? dgamma32 : nullptr, false, l.stream);
      if (propagate_down[1]) {
        store_param_grad<T>(*this, dbeta32, in[1], accum[1], l.stream);
      }
      if (propagate_down[2]) {
        store_param_grad<T>(*this, dgamma32, in[2], accum[2], l.stream);
      }
      if (dx) {
        channel_scale<T>(dy, sums + 2 * C, dx, size0_, C, size2_, accum[0],
                         l.stream);
      }
      return;
    }
    // cuDNN always writes dx and both parameter grads (fp32): unwanted ones
    // go to scratch.
    std::unique_ptr<Memory> dx_scratch;
    if (!dx) {
      dx_scratch = l.scratch(in[0]->size() * sizeof(T));
      dx = static_cast<T*>(dx_scratch->ptr());
    }
    auto params = l.scratch(2 * C * sizeof(float));
    float* dgamma32 = static_cast<float*>(params->ptr());
    float* dbeta32 = dgamma32 + C;
    const float one = 1.0f, zero = 0.0f;
    const float beta_dx = propagate_down[0] && accum[0] ? 1.0f : 0.0f;
    MG_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        cudnn_handle(l.index), kMode, &one, &beta_dx, &one, &zero, x_, x, x_,
        dy, x_, dx, bn_, gamma, dgamma32, dbeta32, opts_.eps, save_mean_->ptr(),
        save_inv_std_->ptr()));
    // fp32 grads for the fp32 master beta and gamma, as on the CPU.
    if (propagate_down[1]) {
      store_param_grad<T>(*this, dbeta32, in[1], accum[1], l.stream);
    }
    if (propagate_down[2]) {
      store_param_grad<T>(*this, dgamma32, in[2], accum[2], l.stream);
    }
  }

 private:
  TensorDesc x_, bn_;
  // The batch statistics of the last training forward, for backward.
  std::unique_ptr<Memory> save_mean_, save_inv_std_;
};

}  // namespace

// bf16 falls back to cudnn:float (converted on the device): the legacy API
// does not document bf16 batch normalization. The fused layer likewise.
void register_batch_normalization(FunctionRegistry& r) {
  using BN = BatchNormalization;
  using Fused = FusedBatchNormalization;
  register_one<BatchNormalizationCudnn<float, BN>>(r, decl::BatchNormalization,
                                                   {"cudnn", Dtype::f32});
  register_one<BatchNormalizationCudnn<Half, BN>>(r, decl::BatchNormalization,
                                                  {"cudnn", Dtype::f16});
  register_one<BatchNormalizationCudnn<float, Fused>>(
      r, decl::FusedBatchNormalization, {"cudnn", Dtype::f32});
  register_one<BatchNormalizationCudnn<Half, Fused>>(
      r, decl::FusedBatchNormalization, {"cudnn", Dtype::f16});
}

}  // namespace mg::cuda
