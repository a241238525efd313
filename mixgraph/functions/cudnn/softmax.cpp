// Softmax and LogSoftmax through cuDNN (cudnnSoftmaxForward / Backward,
// CUDNN_SOFTMAX_ACCURATE and CUDNN_SOFTMAX_LOG, channel mode over x seen as
// (outer, axis, inner, 1)).
#include <mixgraph/functions/softmax.hpp>

#include <type_traits>

#include <mixgraph/contexts/cuda/cudnn_utils.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>

namespace mg::cuda {

namespace {

template <class T, bool Log>
class SoftmaxCudnn : public std::conditional_t<Log, LogSoftmax, Softmax> {
  using Base = std::conditional_t<Log, LogSoftmax, Softmax>;
  static constexpr cudnnSoftmaxAlgorithm_t kAlgo =
      Log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;

 public:
  using Base::Base;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    Base::setup_impl(in, out);
    const AxisSplit& s = this->split_;
    if (in[0]->size() == 0) return;
    set_tensor(x_, dtype_of<T>, {s.outer, s.size, s.inner, 1});
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    if (in[0]->size() == 0) return;
    const float one = 1.0f, zero = 0.0f;
    MG_CUDNN_CHECK(cudnnSoftmaxForward(cudnn_handle(l.index), kAlgo,
                                       CUDNN_SOFTMAX_MODE_CHANNEL, &one, x_, x,
                                       &zero, x_, y));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const T* y = input<T>(*this, out[0]);
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[0], accum[0]);
    if (in[0]->size() == 0) return;
    const float one = 1.0f, beta = accum[0] ? 1.0f : 0.0f;
    MG_CUDNN_CHECK(cudnnSoftmaxBackward(cudnn_handle(l.index), kAlgo,
                                        CUDNN_SOFTMAX_MODE_CHANNEL, &one, x_, y,
                                        x_, dy, &beta, x_, dx));
  }

 private:
  TensorDesc x_;
};

}  // namespace

// bf16 falls back to cudnn:float (converted on the device): the legacy API
// does not document bf16 softmax.
void register_softmax(FunctionRegistry& r) {
  register_one<SoftmaxCudnn<float, false>>(r, decl::Softmax,
                                           {"cudnn", Dtype::f32});
  register_one<SoftmaxCudnn<Half, false>>(r, decl::Softmax,
                                          {"cudnn", Dtype::f16});
  register_one<SoftmaxCudnn<float, true>>(r, decl::LogSoftmax,
                                          {"cudnn", Dtype::f32});
  register_one<SoftmaxCudnn<Half, true>>(r, decl::LogSoftmax,
                                         {"cudnn", Dtype::f16});
}

}  // namespace mg::cuda
