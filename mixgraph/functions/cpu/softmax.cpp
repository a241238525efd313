// Softmax and LogSoftmax on the CPU: max-subtracted, in fp32 tiles.
#include <cmath>

#include <mixgraph/functions/cpu/axis_tile.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/softmax.hpp>

namespace mg::cpu {

namespace {

template <class T, bool Log>
class SoftmaxCpu : public std::conditional_t<Log, LogSoftmax, Softmax> {
  using Base = std::conditional_t<Log, LogSoftmax, Softmax>;

 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const AxisSplit& s = this->split_;
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const int64_t tile = s.size * tile_width(s);
    auto tile_fn = [&](int64_t o, int64_t j0, int64_t w, float* scratch) {
      float* yb = scratch + tile;
      float* mx = yb + tile;
      float* sum = mx + w;
      int64_t ld;
      const float* xf = read_tile(x, s, o, j0, w, scratch, &ld);
      exp_and_sum(xf, ld, s.size, w, yb, mx, sum);
      if (w == 1) {  // the last axis (attention's): one vectorized run
        const float shift = Log ? mx[0] + std::log(sum[0]) : 0.0f;
        const float scale = 1.0f / sum[0];
        for (int64_t a = 0; a < s.size; ++a) {
          yb[a] = Log ? xf[a * ld] - shift : yb[a] * scale;
        }
        write_tile(yb, y, s, o, j0, w);
        return;
      }
      for (int64_t j = 0; j < w; ++j) {
        sum[j] = Log ? mx[j] + std::log(sum[j]) : 1.0f / sum[j];
      }
      for (int64_t a = 0; a < s.size; ++a) {
        for (int64_t j = 0; j < w; ++j) {
          yb[a * w + j] =
              Log ? xf[a * ld + j] - sum[j] : yb[a * w + j] * sum[j];
        }
      }
      write_tile(yb, y, s, o, j0, w);
    };
    for_each_tile(s, 2 * tile + 2 * tile_width(s), tile_fn, parallel_min_exp());
  }

  // Softmax: dx = y (dy - sum(dy y)); LogSoftmax: dx = dy - exp(y) sum(dy).
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const AxisSplit& s = this->split_;
    const T* y = input<T>(out[0]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const int64_t tile = s.size * tile_width(s);
    auto tile_fn = [&](int64_t o, int64_t j0, int64_t w, float* scratch) {
      float* dxb = scratch + 2 * tile;
      float* sum = dxb + tile;
      int64_t ld, ldd;
      const float* yf = read_tile(y, s, o, j0, w, scratch, &ld);
      const float* dyf = read_tile(dy, s, o, j0, w, scratch + tile, &ldd);
      if (w == 1 && ld == 1 && ldd == 1) {  // the last axis: vectorized runs
        const float t =
            Log ? sum_floats(dyf, s.size) : sum_floats(dyf, s.size, yf);
        for (int64_t a = 0; a < s.size; ++a) {
          dxb[a] = Log ? dyf[a] - vmath::exp(yf[a]) * t : yf[a] * (dyf[a] - t);
        }
        write_tile(dxb, dx, s, o, j0, w, accum[0]);
        return;
      }
      std::fill(sum, sum + w, 0.0f);
      for (int64_t a = 0; a < s.size; ++a) {
        for (int64_t j = 0; j < w; ++j) {
          sum[j] += Log ? dyf[a * ldd + j] : dyf[a * ldd + j] * yf[a * ld + j];
        }
      }
      for (int64_t a = 0; a < s.size; ++a) {
        for (int64_t j = 0; j < w; ++j) {
          const float yv = yf[a * ld + j], dyv = dyf[a * ldd + j];
          dxb[a * w + j] =
              Log ? dyv - vmath::exp(yv) * sum[j] : yv * (dyv - sum[j]);
        }
      }
      write_tile(dxb, dx, s, o, j0, w, accum[0]);
    };
    // LogSoftmax's takes an exp an element, Softmax's a multiply-add.
    for_each_tile(s, 3 * tile + tile_width(s), tile_fn,
                  Log ? parallel_min_exp() : parallel_min());
  }
};

template <class T>
using SoftmaxImpl = SoftmaxCpu<T, false>;
template <class T>
using LogSoftmaxImpl = SoftmaxCpu<T, true>;

}  // namespace

void register_softmax(FunctionRegistry& r) {
  register_float_types<SoftmaxImpl>(r, decl::Softmax, "cpu");
  register_float_types<LogSoftmaxImpl>(r, decl::LogSoftmax, "cpu");
}

}  // namespace mg::cpu
