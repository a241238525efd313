// Min, ArgMax and ArgMin on the CPU, through the reduction driver
// (reduce.hpp) with a min op beside its max.
#include <cmath>
#include <limits>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/reduce.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

/// Min with the flat index of the first minimum; a nan wins (as in Max).
struct MinOp {
  using Acc = reduce_ops::Max::Acc;
  static Acc init() { return {std::numeric_limits<float>::infinity(), -1}; }
  static void merge(Acc& a, const Acc& b) {
    if (b.index < 0) return;
    if (a.index < 0 || b.value < a.value ||
        (std::isnan(b.value) && !std::isnan(a.value))) {
      a = b;
    }
  }
  static void merge_value(Acc& a, float x, int64_t i) { merge(a, Acc{x, i}); }
  static void merge_run(Acc& a, const float* f, int64_t n, int64_t pos) {
    for (int64_t i = 0; i < n; ++i) merge(a, Acc{f[i], pos + i});
  }
};

template <class T>
class MinCpu : public Min {
 public:
  using Min::Min;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const auto acc = reduce<MinOp>(input<T>(in[0]), in[0]->shape(), axes_);
    const int64_t n = static_cast<int64_t>(acc.size());
    argmin_.resize(n);
    std::vector<float> y(n);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = acc[i].value;
      argmin_[i] = acc[i].index;
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
    for (int64_t o = 0; o < n; ++o) {  // each x element feeds one output
      T& d = dx[argmin_[o]];
      d = T(static_cast<float>(d) + g[o]);
    }
  }
};

template <class T, class Op, class Base>
class ArgCpu : public Base {
 public:
  using Base::Base;

 protected:
  // The flat index into x becomes the row-major position within the
  // reduced axes.
  void forward_impl(const Variables& in, const Variables& out) override {
    const Shape& s = in[0]->shape();
    const auto acc = reduce<Op>(input<T>(in[0]), s, this->axes_);
    const auto stride = shape_strides(s);
    float* y = out[0]->data()->template cast<float>(/*write_only=*/true);
    for (size_t o = 0; o < acc.size(); ++o) {
      int64_t pos = 0;
      for (int a : this->axes_)
        pos = pos * s[a] + (acc[o].index / stride[a]) % s[a];
      y[o] = static_cast<float>(pos);
    }
  }

  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0] && !accum[0]) {
      std::fill_n(input_grad<T>(in[0], false), in[0]->size(), T(0.0f));
    }
  }
};

template <class T>
using ArgMaxCpu = ArgCpu<T, reduce_ops::Max, ArgMax>;
template <class T>
using ArgMinCpu = ArgCpu<T, MinOp, ArgMin>;

}  // namespace

void register_min_argmax(FunctionRegistry& r) {
  register_float_types<MinCpu, ReduceOptions>(r, "Min", "cpu");
  register_float_types<ArgMaxCpu, ReduceOptions>(r, "ArgMax", "cpu");
  register_float_types<ArgMinCpu, ReduceOptions>(r, "ArgMin", "cpu");
}

}  // namespace mg::cpu
