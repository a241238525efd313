// Shape and Sink on the CPU: Shape writes the sizes setup read as int32;
// Sink writes its dummy 0 and, backward, the ones NNabla gives its inputs.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/shape_sink.hpp>

#include <algorithm>

namespace mg::cpu {

namespace {

template <class T>
class ShapeCpu : public ShapeOf {
 public:
  using ShapeOf::ShapeOf;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    int32_t* y = output<int32_t>(out[0]);  // int32 even when empty
    for (int64_t a = begin_; a < end_; ++a) {
      y[a - begin_] = static_cast<int32_t>(in[0]->shape()[a]);
    }
  }
  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    // No grad: the shape does not depend on x's values.
    if (propagate_down[0] && !accum[0]) {
      std::fill_n(input_grad<T>(in[0], false), in[0]->size(), T(0.0f));
    }
  }
};

template <class T>
class SinkCpu : public Sink {
 public:
  using Sink::Sink;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    output<T>(out[0])[0] = T(0.0f);
  }
  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!opts_.one_input_grad) return;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!propagate_down[i]) continue;
      const std::vector<float> ones(static_cast<size_t>(in[i]->size()), 1.0f);
      store_grad<T>(ones.data(), in[i], accum[i]);
    }
  }
};

}  // namespace

void register_shape_sink(FunctionRegistry& r) {
  register_float_types<ShapeCpu>(r, decl::Shape, "cpu");
  register_float_types<SinkCpu>(r, decl::Sink, "cpu");
}

}  // namespace mg::cpu
