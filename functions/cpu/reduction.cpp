// Sum, Mean and Max on the CPU, through the reduction driver (reduce.hpp).
#include <mixgraph/functions/reduction.hpp>

#include <algorithm>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/reduce.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Sum (Mean = false) and Mean: y = sum * scale, dx = dy * scale.
template <class T, class Base, bool Mean>
class SumMeanCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y =
        reduce<reduce_ops::Sum>(input<T>(in[0]), in[0]->shape(), this->axes_);
    if (Mean) {
      // Divide rather than multiply by 1/count: the mean of equal values is
      // then exact.
      const float count = static_cast<float>(this->count_);
      for (float& v : y) v /= count;
    }
    store(y.data(), output<T>(out[0]), static_cast<int64_t>(y.size()));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const float scale = Mean ? 1.0f / static_cast<float>(this->count_) : 1.0f;
    broadcast_back(output_grad<T>(out[0]), in[0]->shape(), this->axes_, scale,
                   input_grad<T>(in[0], accum[0]), accum[0]);
  }
};

template <class T>
using SumCpu = SumMeanCpu<T, Sum, false>;
template <class T>
using MeanCpu = SumMeanCpu<T, Mean, true>;

template <class T>
class MaxCpu : public Max {
 public:
  using Max::Max;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const auto acc =
        reduce<reduce_ops::Max>(input<T>(in[0]), in[0]->shape(), axes_);
    const int64_t n = static_cast<int64_t>(acc.size());
    argmax_.resize(n);
    std::vector<float> y(n);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = acc[i].value;
      argmax_[i] = acc[i].index;
    }
    store(y.data(), output<T>(out[0]), n);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const int64_t n = out[0]->size();
    std::vector<float> dy(n);
    const float* g = load(output_grad<T>(out[0]), dy.data(), n);
    T* dx = input_grad<T>(in[0], accum[0]);
    if (!accum[0]) std::fill_n(dx, in[0]->size(), T(0.0f));
      // Each input element is the argmax of at most one output: no races.
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t o = 0; o < n; ++o) {
      T& d = dx[argmax_[o]];
      d = T(static_cast<float>(d) + g[o]);
    }
  }
};

}  // namespace

void register_reduction(FunctionRegistry& r) {
  register_float_types<SumCpu, ReduceOptions>(r, "Sum", "cpu");
  register_float_types<MeanCpu, ReduceOptions>(r, "Mean", "cpu");
  register_float_types<MaxCpu, ReduceOptions>(r, "Max", "cpu");
}

}  // namespace mg::cpu
