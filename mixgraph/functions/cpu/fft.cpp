// FFT and IFFT on the CPU: x converted to fp32 once, each signal
// transformed by KissFFT (float) and scaled, rounded to the storage type
// once. Backward is the adjoint: the other direction's transform with the
// same scale.
#include <mixgraph/functions/fft.hpp>

#include <cmath>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/kissfft_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class FFTCpu : public FFTBase {
 public:
  FFTCpu(const FFTOptions& opts, bool inverse) : FFTBase(opts, inverse) {}

 protected:
  // The signal axes' sizes, their product and the scale: 1 / sqrt(P) when
  // normalized, else 1 for FFT and 1 / P for IFFT.
  struct Plan {
    std::vector<int> dims;
    int64_t points;
    float scale;
  };

  Plan plan(const Shape& s) const {
    Plan p;
    const int nd = static_cast<int>(s.size());
    const int d = static_cast<int>(opts_.signal_ndim);
    p.points = 1;
    for (int a = nd - 1 - d; a < nd - 1; ++a) {
      p.dims.push_back(static_cast<int>(s[a]));
      p.points *= s[a];
    }
    const double n = static_cast<double>(p.points);
    p.scale = static_cast<float>(opts_.normalized ? 1.0 / std::sqrt(n)
                                 : inverse_       ? 1.0 / n
                                                  : 1.0);
    return p;
  }

  // dst = scale * (the transform in direction `inverse` of each signal).
  static void transform(const Plan& p, bool inverse, const float* src,
                        float* dst, int64_t size) {
    const int64_t len = 2 * p.points, signals = size / len;
    // A plan per thread: a KissFFT plan holds scratch space.
#pragma omp parallel if (size >= kParallelMinCompute && signals > 1)
    {
      const KissPlan kiss(p.dims, inverse);
#pragma omp for schedule(static)
      for (int64_t b = 0; b < signals; ++b) {
        kiss.run(src + b * len, dst + b * len);
        if (p.scale != 1.0f) {
          for (int64_t i = b * len; i < (b + 1) * len; ++i) dst[i] *= p.scale;
        }
      }
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Plan p = plan(in[0]->shape());
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(x.size());
    transform(p, inverse_, x.data(), y.data(), in[0]->size());
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Plan p = plan(in[0]->shape());
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(dy.size());
    transform(p, !inverse_, dy.data(), dx.data(), in[0]->size());
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class ForwardFFTCpu : public FFTCpu<T> {
 public:
  explicit ForwardFFTCpu(const FFTOptions& opts) : FFTCpu<T>(opts, false) {}
};

template <class T>
class InverseFFTCpu : public FFTCpu<T> {
 public:
  explicit InverseFFTCpu(const FFTOptions& opts) : FFTCpu<T>(opts, true) {}
};

}  // namespace

void register_fft(FunctionRegistry& r) {
  register_float_types<ForwardFFTCpu>(r, decl::FFT, "cpu");
  register_float_types<InverseFFTCpu>(r, decl::IFFT, "cpu");
}

}  // namespace mg::cpu
