// Pooling on the CPU: plain loops, OpenMP over the maps (N * C), each map
// converted to fp32 once and every sum accumulated in fp32.
#include <mixgraph/functions/pooling.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// The geometry with 1 to 3 pooled axes as 3, leading axes of size 1.
struct Dims3 {
  int64_t in[3], out[3], k[3], s[3], p[3];
  int64_t in_size, out_size;
};

Dims3 dims3(const PoolingGeometry& g) {
  Dims3 d;
  const int lead = 3 - static_cast<int>(g.kernel.size());
  for (int a = 0; a < 3; ++a) {
    const bool pooled = a >= lead;
    d.in[a] = pooled ? g.in[a - lead] : 1;
    d.out[a] = pooled ? g.out[a - lead] : 1;
    d.k[a] = pooled ? g.kernel[a - lead] : 1;
    d.s[a] = pooled ? g.stride[a - lead] : 1;
    d.p[a] = pooled ? g.pad[a - lead] : 0;
  }
  d.in_size = d.in[0] * d.in[1] * d.in[2];
  d.out_size = d.out[0] * d.out[1] * d.out[2];
  return d;
}

// One axis of a window: [begin, end) inside the input, and its length
// inside the padded input (NNabla's including_pad count: a window running
// past the padded end, with ignore_border false, is cut there).
struct Range {
  int64_t begin, end, padded;
};

Range window(const Dims3& d, int a, int64_t o) {
  const int64_t b = o * d.s[a] - d.p[a];
  const int64_t e = std::min(b + d.k[a], d.in[a] + d.p[a]);
  return {std::max<int64_t>(b, 0), std::min(e, d.in[a]), e - b};
}

// Calls fn(output index, window) for every output of a map.
template <class Fn>
void for_each_window(const Dims3& d, Fn&& fn) {
  int64_t o = 0;
  for (int64_t i = 0; i < d.out[0]; ++i) {
    const Range r0 = window(d, 0, i);
    for (int64_t j = 0; j < d.out[1]; ++j) {
      const Range r1 = window(d, 1, j);
      for (int64_t l = 0; l < d.out[2]; ++l) fn(o++, r0, r1, window(d, 2, l));
    }
  }
}

// Calls fn(input index) for every input element of a window.
template <class Fn>
void for_each_in(const Dims3& d, const Range& r0, const Range& r1,
                 const Range& r2, Fn&& fn) {
  for (int64_t i = r0.begin; i < r0.end; ++i) {
    for (int64_t j = r1.begin; j < r1.end; ++j) {
      const int64_t row = (i * d.in[1] + j) * d.in[2];
      for (int64_t l = r2.begin; l < r2.end; ++l) fn(row + l);
    }
  }
}

// The index of the window's first maximum, nan winning (so it propagates
// to the loss scaler's check); -1 for a window wholly in the padding.
int64_t argmax(const float* x, const Dims3& d, const Range& r0, const Range& r1,
               const Range& r2) {
  int64_t best = -1;
  float m = 0.0f;
  for_each_in(d, r0, r1, r2, [&](int64_t i) {
    const float v = x[i];
    if (best < 0 || v > m || (v != v && m == m)) best = i, m = v;
  });
  return best;
}

float window_count(const Range& r0, const Range& r1, const Range& r2,
                   bool including_pad) {
  if (including_pad)
    return static_cast<float>(r0.padded * r1.padded * r2.padded);
  return static_cast<float>((r0.end - r0.begin) * (r1.end - r1.begin) *
                            (r2.end - r2.begin));
}

// Copies n elements of T into buf as float (load may alias instead).
template <class T>
void copy_float(const T* src, float* buf, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(buf, src, n * sizeof(float));
  } else {
    convert(src, dtype_of<T>, buf, Dtype::f32, n);
  }
}

// Runs fn(map, in_buf, in_buf2, out_buf) for every map, in parallel when
// the work is large; the buffers are per thread, in_size and out_size
// floats.
template <class Fn>
void for_each_map(const PoolingGeometry& g, const Dims3& d, Fn&& fn) {
  const int64_t maps = g.maps;
#pragma omp parallel if (maps * (d.in_size + d.out_size) >= kParallelMin)
  {
    std::vector<float> a(d.in_size), b(d.in_size), c(d.out_size);
#pragma omp for schedule(static)
    for (int64_t m = 0; m < maps; ++m) fn(m, a.data(), b.data(), c.data());
  }
}

template <class T>
class MaxPoolingCpu : public MaxPooling {
 public:
  using MaxPooling::MaxPooling;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const Dims3 d = dims3(geom_);
    for_each_map(geom_, d, [&](int64_t m, float* xb, float*, float* yb) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      for_each_window(
          d, [&](int64_t o, const Range& r0, const Range& r1, const Range& r2) {
            const int64_t i = argmax(xf, d, r0, r1, r2);
            yb[o] = i < 0 ? 0.0f : xf[i];
          });
      store(yb, y + m * d.out_size, d.out_size);
    });
  }

  // The argmax is recomputed from x rather than kept from forward: no
  // index buffer to hold between the passes, and it costs one more read.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const Dims3 d = dims3(geom_);
    for_each_map(geom_, d, [&](int64_t m, float* xb, float* gb, float* dyb) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      const float* dyf = load(dy + m * d.out_size, dyb, d.out_size);
      T* dxm = dx + m * d.in_size;
      if (accum[0]) {
        copy_float(dxm, gb, d.in_size);
      } else {
        std::fill(gb, gb + d.in_size, 0.0f);
      }
      for_each_window(
          d, [&](int64_t o, const Range& r0, const Range& r1, const Range& r2) {
            const int64_t i = argmax(xf, d, r0, r1, r2);
            if (i >= 0) gb[i] += dyf[o];
          });
      store(gb, dxm, d.in_size);
    });
  }
};

template <class T>
class AveragePoolingCpu : public AveragePooling {
 public:
  using AveragePooling::AveragePooling;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const Dims3 d = dims3(geom_);
    const bool including_pad = args_.options.including_pad;
    for_each_map(geom_, d, [&](int64_t m, float* xb, float*, float* yb) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      for_each_window(
          d, [&](int64_t o, const Range& r0, const Range& r1, const Range& r2) {
            float s = 0.0f;
            for_each_in(d, r0, r1, r2, [&](int64_t i) { s += xf[i]; });
            const float n = window_count(r0, r1, r2, including_pad);
            yb[o] = n > 0 ? s / n : 0.0f;
          });
      store(yb, y + m * d.out_size, d.out_size);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const Dims3 d = dims3(geom_);
    const bool including_pad = args_.options.including_pad;
    for_each_map(geom_, d, [&](int64_t m, float* gb, float*, float* dyb) {
      const float* dyf = load(dy + m * d.out_size, dyb, d.out_size);
      T* dxm = dx + m * d.in_size;
      if (accum[0]) {
        copy_float(dxm, gb, d.in_size);
      } else {
        std::fill(gb, gb + d.in_size, 0.0f);
      }
      for_each_window(
          d, [&](int64_t o, const Range& r0, const Range& r1, const Range& r2) {
            const float n = window_count(r0, r1, r2, including_pad);
            if (n <= 0) return;
            const float g = dyf[o] / n;
            for_each_in(d, r0, r1, r2, [&](int64_t i) { gb[i] += g; });
          });
      store(gb, dxm, d.in_size);
    });
  }
};

template <class T>
class GlobalAveragePoolingCpu : public GlobalAveragePooling {
 public:
  using GlobalAveragePooling::GlobalAveragePooling;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    std::vector<float> means(rows_);
    const int64_t size = size_;
#pragma omp parallel for schedule(static) if (rows_ * size_ >= kParallelMin)
    for (int64_t r = 0; r < rows_; ++r) {
      float buf[kBlock];
      float s = 0.0f;
      for (int64_t i = 0; i < size; i += kBlock) {
        const int64_t len = std::min(kBlock, size - i);
        const float* f = load(x + r * size + i, buf, len);
        for (int64_t j = 0; j < len; ++j) s += f[j];
      }
      means[r] = s / static_cast<float>(size);
    }
    store(means.data(), output<T>(out[0]), rows_);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> dy(rows_);
    const float* dyf = load(output_grad<T>(out[0]), dy.data(), rows_);
    T* dx = input_grad<T>(in[0], accum[0]);
    const int64_t size = size_;
    const bool add = accum[0];
#pragma omp parallel for schedule(static) if (rows_ * size_ >= kParallelMin)
    for (int64_t r = 0; r < rows_; ++r) {
      float buf[kBlock];
      std::fill(buf, buf + std::min(kBlock, size),
                dyf[r] / static_cast<float>(size));
      for (int64_t i = 0; i < size; i += kBlock) {
        store(buf, dx + r * size + i, std::min(kBlock, size - i), add);
      }
    }
  }
};

}  // namespace

void register_pooling(FunctionRegistry& r) {
  register_float_types<MaxPoolingCpu, PoolingArgs>(r, "MaxPooling", "cpu");
  register_float_types<AveragePoolingCpu, PoolingArgs>(r, "AveragePooling",
                                                       "cpu");
  register_float_types<GlobalAveragePoolingCpu, GlobalAveragePoolingOptions>(
      r, "GlobalAveragePooling", "cpu");
}

}  // namespace mg::cpu
