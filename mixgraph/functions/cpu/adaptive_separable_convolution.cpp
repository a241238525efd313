// AdaptiveSeparableConvolution on the CPU: inputs converted to fp32 once,
// every sum in fp32.
#include <mixgraph/functions/adaptive_separable_convolution.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

#include <vector>

namespace mg::cpu {

namespace {

template <class T>
class AdaptiveSeparableConvolutionCpu : public AdaptiveSeparableConvolution {
 public:
  using AdaptiveSeparableConvolution::AdaptiveSeparableConvolution;

 protected:
  // Calls fn(y index, x index, kv index, kh index) for every term.
  template <class Fn>
  void each_term(const Variables& in, const Variables& out, Fn&& fn) {
    const Shape& x = in[0]->shape();
    const Shape& kv = in[1]->shape();
    const Shape& kh = in[2]->shape();
    const Shape& y = out[0]->shape();
    for (int64_t b = 0; b < y[0]; ++b)
      for (int64_t c = 0; c < y[1]; ++c)
        for (int64_t h = 0; h < y[2]; ++h)
          for (int64_t w = 0; w < y[3]; ++w) {
            const int64_t yi = ((b * y[1] + c) * y[2] + h) * y[3] + w;
            for (int64_t j = 0; j < kv[1]; ++j) {
              const int64_t vi = ((b * kv[1] + j) * kv[2] + h) * kv[3] + w;
              for (int64_t i = 0; i < kh[1]; ++i) {
                const int64_t hi = ((b * kh[1] + i) * kh[2] + h) * kh[3] + w;
                fn(yi, ((b * x[1] + c) * x[2] + h + j) * x[3] + w + i, vi, hi);
              }
            }
          }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> kv = floats_of<T>(in[1]);
    const std::vector<float> kh = floats_of<T>(in[2]);
    std::vector<float> y(out[0]->size(), 0.0f);
    each_term(in, out, [&](int64_t yi, int64_t xi, int64_t vi, int64_t hi) {
      y[yi] += kv[vi] * kh[hi] * x[xi];
    });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1] && !propagate_down[2]) return;
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> kv = floats_of<T>(in[1]);
    const std::vector<float> kh = floats_of<T>(in[2]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(x.size(), 0.0f), dkv(kv.size(), 0.0f),
        dkh(kh.size(), 0.0f);
    each_term(in, out, [&](int64_t yi, int64_t xi, int64_t vi, int64_t hi) {
      const float g = dy[yi];
      dx[xi] += g * kv[vi] * kh[hi];
      dkv[vi] += g * kh[hi] * x[xi];
      dkh[hi] += g * kv[vi] * x[xi];
    });
    const std::vector<float>* grads[3] = {&dx, &dkv, &dkh};
    for (int i = 0; i < 3; ++i) {
      if (!propagate_down[i]) continue;
      store(grads[i]->data(), input_grad<T>(in[i], accum[i]), in[i]->size(),
            accum[i]);
    }
  }
};

}  // namespace

void register_adaptive_separable_convolution(FunctionRegistry& r) {
  register_float_types<AdaptiveSeparableConvolutionCpu>(
      r, decl::AdaptiveSeparableConvolution, "cpu");
}

}  // namespace mg::cpu
