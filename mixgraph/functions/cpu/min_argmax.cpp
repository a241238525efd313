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

template <class T>
using MinCpu = ExtremumCpu<T, reduce_ops::Min, Min>;

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
using ArgMinCpu = ArgCpu<T, reduce_ops::Min, ArgMin>;

}  // namespace

void register_min_argmax(FunctionRegistry& r) {
  register_float_types<MinCpu>(r, decl::Min, "cpu");
  register_float_types<ArgMaxCpu>(r, decl::ArgMax, "cpu");
  register_float_types<ArgMinCpu>(r, decl::ArgMin, "cpu");
}

}  // namespace mg::cpu
