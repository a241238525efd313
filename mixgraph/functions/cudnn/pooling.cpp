// MaxPooling and AveragePooling through cuDNN (cudnnPoolingForward /
// Backward, nan propagated). cuDNN's windows are NNabla's when
// ignore_border is true and the padding is smaller than the kernel (no
// window lies in the padding alone); other configurations, and empty
// arrays, run on the CPU. Backward recomputes y rather than keeping it,
// since the graph may have freed it.
#include <mixgraph/functions/pooling.hpp>

#include <vector>

#include <mixgraph/contexts/cuda/cudnn_utils.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>

namespace mg::cuda {

namespace {

template <class T, class Base, bool Max>
class PoolingCudnn : public Base {
 public:
  using Base::Base;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    Base::setup_impl(in, out);
    stand_in_.reset();
    if (!fits_cudnn()) {
      stand_in_ = cpu_stand_in(this->decl(), dtype_of<T>, typeid(PoolingArgs),
                               &this->args_);
      stand_in_->setup(in, out);
      return;
    }
    const PoolingGeometry& g = this->geom_;
    // (maps, 1, pooled...); one pooled axis runs as two, the first of size 1.
    std::vector<int64_t> in_dims(g.in), out_dims(g.out);
    std::vector<int> window(g.kernel.begin(), g.kernel.end()),
        pad(g.pad.begin(), g.pad.end()),
        stride(g.stride.begin(), g.stride.end());
    if (g.in.size() == 1) {
      in_dims.insert(in_dims.begin(), 1);
      out_dims.insert(out_dims.begin(), 1);
      window.insert(window.begin(), 1);
      pad.insert(pad.begin(), 0);
      stride.insert(stride.begin(), 1);
    }
    in_dims.insert(in_dims.begin(), {g.maps, 1});
    out_dims.insert(out_dims.begin(), {g.maps, 1});
    set_tensor(x_, dtype_of<T>, in_dims);
    set_tensor(y_, dtype_of<T>, out_dims);
    const cudnnPoolingMode_t mode =
        Max ? CUDNN_POOLING_MAX_DETERMINISTIC
        : this->args_.options.including_pad
            ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
            : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    MG_CUDNN_CHECK(cudnnSetPoolingNdDescriptor(
        pool_, mode, CUDNN_PROPAGATE_NAN, static_cast<int>(window.size()),
        window.data(), pad.data(), stride.data()));
    std::vector<int> got(out_dims.size());
    MG_CUDNN_CHECK(cudnnGetPoolingNdForwardOutputDim(
        pool_, x_, static_cast<int>(got.size()), got.data()));
    if (std::vector<int64_t>(got.begin(), got.end()) != out_dims) {
      throw std::runtime_error(msg(this->tag(),
                                   "cuDNN's output shape differs from the "
                                   "function's"));
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    if (stand_in_) return stand_in_->forward(in, out);
    const Launch l(*this);
    run_forward(l, input<T>(*this, in[0]), output<T>(*this, out[0]));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (stand_in_) return stand_in_->backward(in, out, propagate_down, accum);
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const T* x = input<T>(*this, in[0]);
    auto y = l.scratch(out[0]->size() * sizeof(T));
    run_forward(l, x, static_cast<T*>(y->ptr()));
    const float one = 1.0f, beta = accum[0] ? 1.0f : 0.0f;
    MG_CUDNN_CHECK(
        cudnnPoolingBackward(cudnn_handle(l.index), pool_, &one, y_, y->ptr(),
                             y_, output_grad<T>(*this, out[0]), x_, x, &beta,
                             x_, input_grad<T>(*this, in[0], accum[0])));
  }

 private:
  bool fits_cudnn() const {
    const PoolingGeometry& g = this->geom_;
    if (!this->args_.options.ignore_border || g.maps == 0) return false;
    for (size_t i = 0; i < g.kernel.size(); ++i) {
      if (g.pad[i] >= g.kernel[i] || g.in[i] == 0 || g.out[i] <= 0)
        return false;
    }
    return true;
  }

  void run_forward(const Launch& l, const T* x, T* y) {
    const float one = 1.0f, zero = 0.0f;
    MG_CUDNN_CHECK(cudnnPoolingForward(cudnn_handle(l.index), pool_, &one, x_,
                                       x, &zero, y_, y));
  }

  TensorDesc x_, y_;
  PoolingDesc pool_;
  std::shared_ptr<Function> stand_in_;
};

template <class T>
using MaxPoolingCudnn = PoolingCudnn<T, MaxPooling, true>;
template <class T>
using AveragePoolingCudnn = PoolingCudnn<T, AveragePooling, false>;

}  // namespace

// bf16 pooling falls back to cudnn:float (converted on the device): the
// legacy API does not document bf16 pooling.
void register_pooling(FunctionRegistry& r) {
  register_one<MaxPoolingCudnn<float>>(r, decl::MaxPooling,
                                       {"cudnn", Dtype::f32});
  register_one<MaxPoolingCudnn<Half>>(r, decl::MaxPooling,
                                      {"cudnn", Dtype::f16});
  register_one<AveragePoolingCudnn<float>>(r, decl::AveragePooling,
                                           {"cudnn", Dtype::f32});
  register_one<AveragePoolingCudnn<Half>>(r, decl::AveragePooling,
                                          {"cudnn", Dtype::f16});
}

}  // namespace mg::cuda
