// Pooling on the CPU: plain loops, OpenMP over the maps (N * C), each map
// converted to fp32 once and every sum accumulated in fp32; max pooling's
// fast paths per ISA are in max_pooling_kernels.cpp.
#include <mixgraph/functions/pooling.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <mixgraph/contexts/cpu/cpu_features.hpp>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/max_pooling_kernels.hpp>
#include <mixgraph/functions/cpu/pooling_windows.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

using namespace pooling;  // the windows (pooling_windows.hpp)

// True when no window reaches into the padding or past the end: the fast
// paths below then need no range checks.
bool windows_inside(const Dims3& d) {
  for (int a = 0; a < 3; ++a) {
    if (d.p[a] != 0 || (d.out[a] - 1) * d.s[a] + d.k[a] > d.in[a]) return false;
  }
  return d.out[0] * d.out[1] * d.out[2] > 0;
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
void for_each_map(int64_t maps, int64_t in_size, int64_t out_size, Fn&& fn) {
#pragma omp parallel if (maps * (in_size + out_size) >= parallel_min())
  {
    std::vector<float> a(in_size), b(in_size), c(out_size);
#pragma omp for schedule(static)
    for (int64_t m = 0; m < maps; ++m) fn(m, a.data(), b.data(), c.data());
  }
}
template <class Fn>
void for_each_map(const PoolingGeometry& g, const Dims3& d, Fn&& fn) {
  for_each_map(g.maps, d.in_size, d.out_size, fn);
}

// Runs fn(map) for every one of `maps` maps (`size` elements of x and y
// each), in parallel when the work is large.
template <class Fn>
void parallel_maps(int64_t maps, int64_t size, Fn&& fn) {
#pragma omp parallel for schedule(static) if (maps * size >= parallel_min())
  for (int64_t m = 0; m < maps; ++m) fn(m);
}
template <class Fn>
void parallel_maps(const PoolingGeometry& g, const Dims3& d, Fn&& fn) {
  parallel_maps(g.maps, d.in_size + d.out_size, fn);
}

template <class T>
class MaxPoolingCpu : public MaxPooling {
 public:
  using MaxPooling::MaxPooling;

 protected:
  // Whether the 2x2 windows run on half's or bfloat16's bits.
  static bool on_bits(bool k2s2) {
    return !std::is_same_v<T, float> && k2s2 &&
           (cpu_features().avx512bw || cpu_features().avx2);
  }

  // The blocks of channels to pool in where `held` (x, or dy) is held so
  // and every axis after the channels is pooled, else plain. A group of
  // maps is then `block` of them, interleaved: each window's elements are
  // vectors of channels, where the plain maps of a convolution's blocked
  // output would first be converted (the U-Net's 2 x 2 poolings). Blocks
  // of a multiple of 8 channels: 16 (or 8) as convolutions hand them over
  // in fp32 and half, all the channels (channels-last) in bfloat16 on AMX,
  // whose kernels read and write that (LeNet's bfloat16 pooling took 2.4 ms
  // a step converting them to plain maps and back).
  mg::Layout blocks(NdArray* held, const Shape& shape) const {
    const int nd = static_cast<int>(shape.size());
    if (args_.options.channel_last ||
        static_cast<int>(geom_.kernel.size()) != nd - 2) {
      return {};
    }
    // The windows' loops index a group in int32 (one vector of indices).
    const mg::Layout l = spatial_blocks(held, shape);
    const bool fits =
        l.block % 8 == 0 &&
        dims3(geom_).in_size * l.block <= std::numeric_limits<int32_t>::max();
    return fits ? l : mg::Layout{};
  }

  // Groups of `block` interleaved maps, pooled as they are: float's, and
  // half's and bfloat16's where this CPU has the loops (blocks_16_loop());
  // else each converted to fp32 whole.
  static bool in_place(int64_t block) {
    return std::is_same_v<T, float> || blocks_16_loop(block);
  }

  void forward_blocked(const T* x, T* y, const Dims3& d, int64_t block) {
    const int64_t in = d.in_size * block, out = d.out_size * block;
    const int64_t groups = geom_.maps / block;
    if (in_place(block)) {
      return parallel_maps(groups, in + out, [&](int64_t m) {
        max_forward_blocked(x + m * in, y + m * out, d, block);
      });
    }
    for_each_map(groups, in, out, [&](int64_t m, float* xb, float*, float* yb) {
      max_forward_blocked(load(x + m * in, xb, in), yb, d, block);
      store(yb, y + m * out, out);
    });
  }

  void backward_blocked(const T* x, const T* dy, T* dx, const Dims3& d,
                        int64_t block, bool accum) {
    const int64_t in = d.in_size * block, out = d.out_size * block;
    const int64_t groups = geom_.maps / block;
    const bool write = !accum && tiles(d);
    // 16-bit grads in place need windows that tile (one sum an element).
    if (in_place(block) && (std::is_same_v<T, float> || tiles(d))) {
      return parallel_maps(groups, in + out, [&](int64_t m) {
        T* dxm = dx + m * in;
        if (!accum && !write) std::fill(dxm, dxm + in, T(0.0f));
        max_backward_blocked(x + m * in, dy + m * out, dxm, d, block, write);
      });
    }
    for_each_map(groups, in, out,
                 [&](int64_t m, float* xb, float* gb, float* dyb) {
                   T* dxm = dx + m * in;
                   if (accum) {
                     copy_float(dxm, gb, in);
                   } else if (!write) {
                     std::fill(gb, gb + in, 0.0f);
                   }
                   max_backward_blocked(load(x + m * in, xb, in),
                                        load(dy + m * out, dyb, out), gb, d,
                                        block, write);
                   store(gb, dxm, in);
                 });
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Dims3 d = dims3(geom_);
    const mg::Layout xl = blocks(in[0]->data().get(), in[0]->shape());
    if (!xl.plain()) {
      const T* x = in[0]->data()->template get<const T>(xl);
      T* y = out[0]->data()->template cast<T>(true,
                                              same_blocks(xl, out[0]->shape()));
      return forward_blocked(x, y, d, xl.block);
    }
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const bool inside = windows_inside(d);
    const bool k2s2 = inside && is_2x2_stride_2(d);
    if (on_bits(k2s2)) {
      parallel_maps(geom_, d, [&](int64_t m) {
        max_2x2_bits(bits16(x + m * d.in_size), nullptr,
                     bits16(y + m * d.out_size), nullptr, d, inf_bits_of<T>);
      });
      return;
    }
    for_each_map(geom_, d, [&](int64_t m, float* xb, float*, float* ybuf) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      float* yb = store_buffer(y + m * d.out_size, ybuf);
      if (k2s2) {
        max_forward_2x2(xf, yb, d);
      } else if (inside) {
        max_forward_inside(xf, yb, d);
      } else {
        for_each_window(d, [&](int64_t o, const Range& r0, const Range& r1,
                               const Range& r2) {
          const int64_t i = argmax(xf, d, r0, r1, r2);
          yb[o] = i < 0 ? 0.0f : xf[i];
        });
      }
      store(yb, y + m * d.out_size, d.out_size);
    });
  }

  // The argmax is recomputed from x rather than kept from forward: no
  // index buffer to hold between the passes, and it costs one more read.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Dims3 d = dims3(geom_);
    // In dy's blocks, or x's: a plain dy (from a function that writes
    // plain grads) is the smaller array to block.
    mg::Layout yl = blocks(out[0]->grad().get(), out[0]->shape());
    if (yl.plain()) {
      yl = same_blocks(blocks(in[0]->data().get(), in[0]->shape()),
                       out[0]->shape());
    }
    if (!yl.plain()) {
      const mg::Layout xl = same_blocks(yl, in[0]->shape());
      const T* x = in[0]->data()->template get<const T>(xl);
      const T* dy = out[0]->grad()->template get<const T>(yl);
      T* dx = in[0]->grad()->template cast<T>(!accum[0], xl);
      return backward_blocked(x, dy, dx, d, yl.block, accum[0]);
    }
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const bool inside = windows_inside(d);
    const bool k2s2 = inside && is_2x2_stride_2(d);
    // 2x2 windows that cover the map write every element of dx: no zeros
    // first (else those in no window need them).
    const bool covers =
        k2s2 && d.in[1] == 2 * d.out[1] && d.in[2] == 2 * d.out[2];
    if (!accum[0] && on_bits(k2s2)) {
      parallel_maps(geom_, d, [&](int64_t m) {
        Bits16* dxm = bits16(dx + m * d.in_size);
        if (!covers) std::fill(dxm, dxm + d.in_size, uint16_t{0});
        max_2x2_bits(bits16(x + m * d.in_size), bits16(dy + m * d.out_size),
                     nullptr, dxm, d, inf_bits_of<T>);
      });
      return;
    }
    for_each_map(geom_, d, [&](int64_t m, float* xb, float* gbuf, float* dyb) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      const float* dyf = load(dy + m * d.out_size, dyb, d.out_size);
      T* dxm = dx + m * d.in_size;
      // The grads go into gb: float's dx itself, else a buffer.
      float* gb = store_buffer(dxm, gbuf);
      if (!accum[0]) {
        if (!covers) std::fill(gb, gb + d.in_size, 0.0f);
      } else if (gb != static_cast<void*>(dxm)) {
        copy_float(dxm, gb, d.in_size);
      }
      if (k2s2) {
        max_backward_2x2(xf, dyf, gb, d, accum[0]);
      } else if (inside) {
        max_backward_inside(xf, dyf, gb, d);
      } else {
        for_each_window(d, [&](int64_t o, const Range& r0, const Range& r1,
                               const Range& r2) {
          const int64_t i = argmax(xf, d, r0, r1, r2);
          if (i >= 0) gb[i] += dyf[o];
        });
      }
      store(gb, dxm, d.in_size);
    });
  }
};

// AveragePooling (kMean) and SumPooling: each window's sum in fp32, divided
// by its count for the mean; backward spreads dy (over the count) back.
template <class T, class Base, bool kMean>
class WindowSumCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const Dims3 d = dims3(this->geom_);
    const bool including_pad = this->args_.options.including_pad;
    for_each_map(this->geom_, d, [&](int64_t m, float* xb, float*, float* yb) {
      const float* xf = load(x + m * d.in_size, xb, d.in_size);
      for_each_window(d, [&](int64_t o, const Range& r0, const Range& r1,
                             const Range& r2) {
        float s = 0.0f;
        for_each_in(d, r0, r1, r2, [&](int64_t i) { s += xf[i]; });
        const float n = kMean ? window_count(r0, r1, r2, including_pad) : 1.0f;
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
    const Dims3 d = dims3(this->geom_);
    const bool including_pad = this->args_.options.including_pad;
    for_each_map(this->geom_, d, [&](int64_t m, float* gb, float*, float* dyb) {
      const float* dyf = load(dy + m * d.out_size, dyb, d.out_size);
      T* dxm = dx + m * d.in_size;
      if (accum[0]) {
        copy_float(dxm, gb, d.in_size);
      } else {
        std::fill(gb, gb + d.in_size, 0.0f);
      }
      for_each_window(d, [&](int64_t o, const Range& r0, const Range& r1,
                             const Range& r2) {
        const float n = kMean ? window_count(r0, r1, r2, including_pad) : 1.0f;
        if (n <= 0) return;
        const float g = dyf[o] / n;
        for_each_in(d, r0, r1, r2, [&](int64_t i) { gb[i] += g; });
      });
      store(gb, dxm, d.in_size);
    });
  }
};

template <class T>
using AveragePoolingCpu = WindowSumCpu<T, AveragePooling, true>;
template <class T>
using SumPoolingCpu = WindowSumCpu<T, SumPooling, false>;

template <class T>
class GlobalAveragePoolingCpu : public GlobalAveragePooling {
 public:
  using GlobalAveragePooling::GlobalAveragePooling;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    std::vector<float> means(rows_);
    const int64_t size = size_;
#pragma omp parallel for schedule(static) if (rows_ * size_ >= parallel_min())
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
#pragma omp parallel for schedule(static) if (rows_ * size_ >= parallel_min())
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
  register_float_types<MaxPoolingCpu>(r, decl::MaxPooling, "cpu");
  register_float_types<AveragePoolingCpu>(r, decl::AveragePooling, "cpu");
  register_float_types<SumPoolingCpu>(r, decl::SumPooling, "cpu");
  register_float_types<GlobalAveragePoolingCpu>(r, decl::GlobalAveragePooling,
                                                "cpu");
}

}  // namespace mg::cpu
