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
using MaxCpu = ExtremumCpu<T, reduce_ops::Max, Max>;

}  // namespace

void register_reduction(FunctionRegistry& r) {
  register_float_types<SumCpu>(r, decl::Sum, "cpu");
  register_float_types<MeanCpu>(r, decl::Mean, "cpu");
  register_float_types<MaxCpu>(r, decl::Max, "cpu");
}

}  // namespace mg::cpu
