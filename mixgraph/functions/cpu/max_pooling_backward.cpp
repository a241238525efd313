// MaxPoolingBackward on the CPU: per map, x converted to fp32 once, each
// window's first maximum found as MaxPooling's backward finds it, the
// scatter (forward) and gather (backward) in fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/pooling_windows.hpp>
#include <mixgraph/functions/max_pooling_backward.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>
#include <vector>

namespace mg::cpu {

namespace {

// The index in its map of each output's window maximum (-1: a window
// wholly in the padding), by MaxPooling's rule (pooling_windows.hpp).
std::vector<int64_t> window_argmax(const float* x, const PoolingGeometry& g) {
  const pooling::Dims3 d = pooling::dims3(g);
  std::vector<int64_t> best(static_cast<size_t>(d.out_size), -1);
  pooling::for_each_window(
      d, [&](int64_t o, const pooling::Range& r0, const pooling::Range& r1,
             const pooling::Range& r2) {
        best[o] = pooling::argmax(x, d, r0, r1, r2);
      });
  return best;
}

template <class T>
class MaxPoolingBackwardCpu : public MaxPoolingBackward {
 public:
  using MaxPoolingBackward::MaxPoolingBackward;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> dy = floats_of<T>(in[0]);
    const std::vector<float> x = floats_of<T>(in[1]);
    const int64_t in_size = in[1]->size() / std::max<int64_t>(geom_.maps, 1);
    const int64_t out_size = in[0]->size() / std::max<int64_t>(geom_.maps, 1);
    std::vector<float> dx(x.size(), 0.0f);
#pragma omp parallel for if (geom_.maps * in_size >= parallel_min())
    for (int64_t m = 0; m < geom_.maps; ++m) {
      const std::vector<int64_t> am =
          window_argmax(x.data() + m * in_size, geom_);
      for (int64_t o = 0; o < out_size; ++o) {
        if (am[o] >= 0) dx[m * in_size + am[o]] += dy[m * out_size + o];
      }
    }
    store(dx.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    const std::vector<float> gdx = grad_floats_of<T>(out[0]);
    const std::vector<float> x = floats_of<T>(in[1]);
    const int64_t in_size = in[1]->size() / std::max<int64_t>(geom_.maps, 1);
    const int64_t out_size = in[0]->size() / std::max<int64_t>(geom_.maps, 1);
    std::vector<float> gdy(in[0]->size(), 0.0f);
#pragma omp parallel for if (geom_.maps * in_size >= parallel_min())
    for (int64_t m = 0; m < geom_.maps; ++m) {
      const std::vector<int64_t> am =
          window_argmax(x.data() + m * in_size, geom_);
      for (int64_t o = 0; o < out_size; ++o) {
        if (am[o] >= 0) gdy[m * out_size + o] = gdx[m * in_size + am[o]];
      }
    }
    store(gdy.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_max_pooling_backward(FunctionRegistry& r) {
  register_float_types<MaxPoolingBackwardCpu>(r, decl::MaxPoolingBackward,
                                              "cpu");
}

}  // namespace mg::cpu
