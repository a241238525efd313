// Reshape and Transpose on the device: the strided gather of
// cuda/index_kernels.hpp. Data that a layout function must move exactly
// (integers, or fp32 that takes no grad under half: labels) runs on the
// CPU stand-in, as the CPU's dispatch_layout keeps it.
#include <mixgraph/functions/shape_ops.hpp>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

// Whether v's data moves as T on the device (see the file's comment).
template <class T>
bool moves_as(Variable* v) {
  const SyncedArray& a = v->data()->array();
  if (!a.has_head()) return true;
  const Dtype d = a.dtype();
  if (!is_floating(d)) return false;
  return std::is_same_v<T, float> || d != Dtype::f32 || v->need_grad();
}

// A layout function on the device, or, for data that must stay exact or
// more than kMaxDims axes, on the CPU stand-in (decided in forward, where
// the data's type is known).
template <class T, class Base, class Options>
class LayoutCuda : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    use_stand_in_ = !moves_as<T>(in[0]) ||
                    in[0]->shape().size() > static_cast<size_t>(kMaxDims) ||
                    out[0]->shape().size() > static_cast<size_t>(kMaxDims);
    if (use_stand_in_) {
      if (!stand_in_) {
        stand_in_ = cpu_stand_in(this->decl(), dtype_of<T>, typeid(Options),
                                 &this->options());
        stand_in_->setup(in, out);
      }
      return stand_in_->forward(in, out);
    }
    const Launch l(*this);
    launch(out[0]->size(),
           GatherBody<T>{input<T>(*this, in[0]), output<T>(*this, out[0]),
                         forward_view(in, out), false},
           l.stream);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (use_stand_in_) {
      return stand_in_->backward(in, out, propagate_down, accum);
    }
    if (!propagate_down[0]) return;
    const Launch l(*this);
    launch(in[0]->size(),
           GatherBody<T>{output_grad<T>(*this, out[0]),
                         input_grad<T>(*this, in[0], accum[0]),
                         backward_view(in, out), accum[0]},
           l.stream);
  }

  /// y[i] = x[view.offset(i)] over y, and dx[i] = dy[view.offset(i)].
  virtual StridedIndex forward_view(const Variables& in,
                                    const Variables& out) const = 0;
  virtual StridedIndex backward_view(const Variables& in,
                                     const Variables& out) const = 0;

 private:
  bool use_stand_in_ = false;
  std::shared_ptr<Function> stand_in_;
};

template <class T>
class ReshapeCuda : public LayoutCuda<T, Reshape, ReshapeOptions> {
 public:
  using LayoutCuda<T, Reshape, ReshapeOptions>::LayoutCuda;

 protected:
  StridedIndex forward_view(const Variables& in,
                            const Variables&) const override {
    return contiguous_view(in[0]->size());
  }
  StridedIndex backward_view(const Variables& in,
                             const Variables&) const override {
    return contiguous_view(in[0]->size());
  }
};

template <class T>
class TransposeCuda : public LayoutCuda<T, Transpose, TransposeOptions> {
 public:
  using LayoutCuda<T, Transpose, TransposeOptions>::LayoutCuda;

 protected:
  StridedIndex forward_view(const Variables& in,
                            const Variables&) const override {
    return transpose_view(in[0]->shape(), this->perm_);
  }
  StridedIndex backward_view(const Variables& in,
                             const Variables&) const override {
    return transpose_grad_view(in[0]->shape(), this->perm_);
  }
};

}  // namespace

void register_shape_ops(FunctionRegistry& r) {
  register_float_types<ReshapeCuda>(r, decl::Reshape, "cuda");
  register_float_types<TransposeCuda>(r, decl::Transpose, "cuda");
}

}  // namespace mg::cuda
