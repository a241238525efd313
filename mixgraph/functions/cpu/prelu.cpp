// PReLU on the CPU. The slope's grad sums dy x over the negative x of its
// channel in fp32, and is written in fp32 for an fp32 master slope.
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/prelu.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class PReLUCpu : public PReLU {
 public:
  using PReLU::PReLU;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> w = floats_of<T>(in[1]);
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const int64_t C = channels_, inner = inner_;
    for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], yb[kBlock];
      const float* xf = load(x + begin, xb, len);
      for (int64_t i = 0; i < len; ++i) {
        const float a = xf[i];
        yb[i] = a > 0.0f ? a : w[((begin + i) / inner) % C] * a;
      }
      store(yb, y + begin, len);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    const int64_t C = channels_, inner = inner_, outer = outer_;
    if (propagate_down[0]) {
      const std::vector<float> w = floats_of<T>(in[1]);
      T* dx = input_grad<T>(in[0], accum[0]);
      for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
        float xb[kBlock], dyb[kBlock], dxb[kBlock];
        const float* xf = load(x + begin, xb, len);
        const float* dyf = load(dy + begin, dyb, len);
        for (int64_t i = 0; i < len; ++i) {
          dxb[i] =
              xf[i] > 0.0f ? dyf[i] : w[((begin + i) / inner) % C] * dyf[i];
        }
        store(dxb, dx + begin, len, accum[0]);
      });
    }
    if (propagate_down[1]) {
      std::vector<float> dw(static_cast<size_t>(C));
#pragma omp parallel for schedule(static) if (in[0]->size() >= parallel_min())
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0.0;  // over outer * inner terms: fp32 could lose them
        for (int64_t o = 0; o < outer; ++o) {
          const int64_t row = (o * C + c) * inner;
          for (int64_t b = 0; b < inner; b += kBlock) {
            const int64_t len = std::min(kBlock, inner - b);
            float xb[kBlock], dyb[kBlock];
            const float* xf = load(x + row + b, xb, len);
            const float* dyf = load(dy + row + b, dyb, len);
            for (int64_t i = 0; i < len; ++i) {
              if (xf[i] <= 0.0f) sum += static_cast<double>(xf[i]) * dyf[i];
            }
          }
        }
        dw[c] = static_cast<float>(sum);
      }
      store_grad<T>(dw.data(), in[1], accum[1]);
    }
  }
};

}  // namespace

void register_prelu(FunctionRegistry& r) {
  register_float_types<PReLUCpu>(r, decl::PReLU, "cpu");
}

}  // namespace mg::cpu
