// The base of the layout functions on CUDA (Reshape, Transpose,
// Concatenate, Pad, Tile, Shift, Unpooling): they move elements without
// arithmetic. Data a layout function must move exactly (integers, or fp32
// that takes no grad under half: labels written as float) runs on the CPU
// stand-in, as the CPU's dispatch_layout keeps it; so does x with more
// than kMaxDims axes.
#pragma once

#include <algorithm>
#include <memory>
#include <type_traits>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/index_kernels.hpp>

namespace mg::cuda {

/// Whether v's data moves as T on the device (see the file's comment).
template <class T>
bool moves_as(Variable* v) {
  const SyncedArray& a = v->data()->array();
  if (!a.has_head()) return true;
  const Dtype d = a.dtype();
  if (!is_floating(d)) return false;
  return std::is_same_v<T, float> || d != Dtype::f32 || v->need_grad();
}

/// Decides per forward, where the data's type is known, between the device
/// (forward_on_device / backward_on_device) and the CPU stand-in.
template <class T, class Base, class Options>
class LayoutCuda : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) final {
    const auto too_many_axes = [](Variable* v) {
      return v->shape().size() > static_cast<size_t>(kMaxDims);
    };
    use_stand_in_ = !std::all_of(in.begin(), in.end(), moves_as<T>) ||
                    std::any_of(in.begin(), in.end(), too_many_axes) ||
                    std::any_of(out.begin(), out.end(), too_many_axes);
    if (!use_stand_in_) return forward_on_device(in, out);
    if (!stand_in_) {
      stand_in_ = cpu_stand_in(this->decl(), dtype_of<T>, typeid(Options),
                               &this->options());
      stand_in_->setup(in, out);
    }
    stand_in_->forward(in, out);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) final {
    if (use_stand_in_) {
      return stand_in_->backward(in, out, propagate_down, accum);
    }
    backward_on_device(in, out, propagate_down, accum);
  }

  virtual void forward_on_device(const Variables& in, const Variables& out) = 0;
  virtual void backward_on_device(const Variables& in, const Variables& out,
                                  const std::vector<bool>& propagate_down,
                                  const std::vector<bool>& accum) = 0;

 private:
  bool use_stand_in_ = false;
  std::shared_ptr<Function> stand_in_;
};

}  // namespace mg::cuda
