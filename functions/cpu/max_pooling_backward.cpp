// MaxPoolingBackward on the CPU: per map, x converted to fp32 once, each
// window's first maximum found as MaxPooling's backward finds it, the
// scatter (forward) and gather (backward) in fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/max_pooling_backward.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>
#include <vector>

namespace mg::cpu {

namespace {

// The index in its map of each output's window maximum (-1: a window
// wholly in the padding), by MaxPooling's rule: the first maximum, nan
// winning, padding never.
std::vector<int64_t> window_argmax(const float* x, const PoolingGeometry& g) {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1},
          s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  const int lead = 3 - static_cast<int>(g.kernel.size());
  for (size_t a = 0; a < g.kernel.size(); ++a) {
    in[lead + a] = g.in[a], out[lead + a] = g.out[a];
    k[lead + a] = g.kernel[a], s[lead + a] = g.stride[a],
             p[lead + a] = g.pad[a];
  }
  std::vector<int64_t> best(out[0] * out[1] * out[2], -1);
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < out[0]; ++o0)
    for (int64_t o1 = 0; o1 < out[1]; ++o1)
      for (int64_t o2 = 0; o2 < out[2]; ++o2, ++o) {
        const int64_t b[3] = {o0 * s[0] - p[0], o1 * s[1] - p[1],
                              o2 * s[2] - p[2]};
        float m = 0.0f;
        for (int64_t i = std::max<int64_t>(b[0], 0);
             i < std::min(b[0] + k[0], in[0]); ++i)
          for (int64_t j = std::max<int64_t>(b[1], 0);
               j < std::min(b[1] + k[1], in[1]); ++j)
            for (int64_t l = std::max<int64_t>(b[2], 0);
                 l < std::min(b[2] + k[2], in[2]); ++l) {
              const int64_t idx = (i * in[1] + j) * in[2] + l;
              const float v = x[idx];
              if (best[o] < 0 || v > m || (v != v && m == m))
                best[o] = idx, m = v;
            }
      }
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
#pragma omp parallel for if (geom_.maps * in_size >= kParallelMin)
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
#pragma omp parallel for if (geom_.maps * in_size >= kParallelMin)
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
