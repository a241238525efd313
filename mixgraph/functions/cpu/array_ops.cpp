// Split, Stack, Broadcast, Pad, Tile, Shift, Unpooling, Flip and Trilu on the
// CPU. Forward moves elements of T without arithmetic; backward adds in fp32
// where elements meet.
#include <cstring>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/elementwise.hpp>
#include <mixgraph/functions/cpu/reduce.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// dst = src, or dst += src (in fp32) with accum.
template <class T>
void copy_run(const T* src, T* dst, int64_t n, bool accum) {
  if (!accum) {
    if (n > 0) std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  for (int64_t b = 0; b < n; b += kBlock) {
    float buf[kBlock];
    const int64_t len = std::min(kBlock, n - b);
    store(load(src + b, buf, len), dst + b, len, true);
  }
}

// Moves runs of `inner` elements between a (outer, parts, inner) array and
// `parts` arrays of (outer, inner): to_parts picks the direction.
template <class T>
void move_parts(T* whole, const std::vector<T*>& parts, int64_t outer,
                int64_t inner, bool to_parts, bool accum) {
  const int64_t np = static_cast<int64_t>(parts.size());
#pragma omp parallel for schedule(static) if (outer * np * inner >= \
                                              parallel_min())
  for (int64_t t = 0; t < outer * np; ++t) {
    const int64_t o = t / np, k = t % np;
    T* w = whole + (o * np + k) * inner;
    T* p = parts[k] + o * inner;
    if (to_parts) {
      copy_run(w, p, inner, accum);
    } else {
      copy_run(p, w, inner, accum);
    }
  }
}

template <class T>
class SplitCpu : public Split {
 public:
  using Split::Split;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      std::vector<U*> ys;
      for (Variable* v : out) ys.push_back(output<U>(v));
      move_parts(const_cast<U*>(input<U>(in[0])), ys, outer_, inner_, true,
                 false);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<T*> dys;
    for (Variable* v : out) dys.push_back(const_cast<T*>(output_grad<T>(v)));
    move_parts(input_grad<T>(in[0], accum[0]), dys, outer_, inner_, false,
               accum[0]);
  }
};

template <class T>
class StackCpu : public Stack {
 public:
  using Stack::Stack;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      std::vector<U*> xs;
      for (Variable* v : in) xs.push_back(const_cast<U*>(input<U>(v)));
      move_parts(output<U>(out[0]), xs, outer_, inner_, false, false);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const T* dy = output_grad<T>(out[0]);
    const int64_t np = static_cast<int64_t>(in.size());
    for (int64_t k = 0; k < np; ++k) {
      if (!propagate_down[k]) continue;
      T* dx = input_grad<T>(in[k], accum[k]);
      for (int64_t o = 0; o < outer_; ++o) {
        copy_run(dy + (o * np + k) * inner_, dx + o * inner_, inner_, accum[k]);
      }
    }
  }
};

template <class T>
class BroadcastCpu : public Broadcast {
 public:
  using Broadcast::Broadcast;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const BroadcastPlan p =
        broadcast_plan(in[0]->shape(), out[0]->shape(), tag());
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const U* x = input<U>(in[0]);
      U* y = output<U>(out[0]);
      for_each_broadcast_row(p, [&](int64_t o, int64_t o0, int64_t s0, int64_t,
                                    int64_t, int64_t len) {
        for (int64_t j = 0; j < len; ++j) y[o + j] = x[o0 + j * s0];
      });
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const auto dx =
        reduce<reduce_ops::Sum>(output_grad<T>(out[0]), out[0]->shape(), axes_);
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

// Calls fn(y_offset, x_offset_or_-1, last_axis_source) for each row (all
// axes but the last) of y, where y's element (..., j) reads x's element
// (..., source[last][j]) of row x_offset, or nothing when either is -1.
template <class Fn>
void for_each_source_row(const Shape& xs, const Shape& ys,
                         const std::vector<std::vector<int64_t>>& source,
                         Fn&& fn) {
  const int nd = static_cast<int>(ys.size());
  if (nd == 0) return fn(0, 0, std::vector<int64_t>{0});
  const int64_t row = ys[nd - 1];
  const int64_t rows = row ? shape_size(ys) / row : 0;
  const auto xstride = shape_strides(xs);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = 0;
    for (int d = nd - 2; d >= 0 && off >= 0; --d) {
      const int64_t s = source[d][rem % ys[d]];
      rem /= ys[d];
      off = s < 0 ? -1 : off + s * xstride[d];
    }
    fn(r * row, off, source[nd - 1]);
  }
}

// y[i] = x[source(i)], or `fill` where the source is -1.
template <class T>
void gather_source(const T* x, const Shape& xs, T* y, const Shape& ys,
                   const std::vector<std::vector<int64_t>>& source,
                   float fill) {
  const T f(fill);
  for_each_source_row(
      xs, ys, source,
      [&](int64_t yo, int64_t xo, const std::vector<int64_t>& last) {
        const int64_t n = static_cast<int64_t>(last.size());
        for (int64_t j = 0; j < n; ++j) {
          y[yo + j] = (xo < 0 || last[j] < 0) ? f : x[xo + last[j]];
        }
      });
}

// dx[source(i)] += dy[i] in fp32 (several i may share a source), then
// stored into dx.
template <class T>
void scatter_source(const T* dy, const Shape& ys, T* dx, const Shape& xs,
                    const std::vector<std::vector<int64_t>>& source,
                    bool accum) {
  std::vector<float> sum(shape_size(xs), 0.0f);
  // dy as fp32 in one vector pass (for float, dy itself): converting a
  // 16-bit type an element at a time in the serial loop below made
  // Unpooling's backward half again as slow in half as in float.
  std::vector<float, CpuScratchAllocator<float>> dy_buffer(
      std::is_same_v<T, float> ? 0 : shape_size(ys));
  const float* dyf = load(dy, dy_buffer.data(), shape_size(ys));
  for_each_source_row(
      xs, ys, source,
      [&](int64_t yo, int64_t xo, const std::vector<int64_t>& last) {
        if (xo < 0) return;
        const int64_t n = static_cast<int64_t>(last.size());
        for (int64_t j = 0; j < n; ++j) {
          if (last[j] >= 0) sum[xo + last[j]] += dyf[yo + j];
        }
      });
  store(sum.data(), dx, static_cast<int64_t>(sum.size()), accum);
}

// Pad, Tile, Shift and Unpooling: y gathers x through the function's sources;
// the grad scatters dy back, adding in fp32 where sources repeat.
template <class T, class Base>
class AxisGatherCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, this->tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      gather_source(input<U>(in[0]), this->x_view(), output<U>(out[0]),
                    out[0]->shape(), this->source(), this->fill_value());
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    scatter_source(output_grad<T>(out[0]), out[0]->shape(),
                   input_grad<T>(in[0], accum[0]), this->x_view(),
                   this->source(), accum[0]);
  }
};

template <class T>
using PadCpu = AxisGatherCpu<T, Pad>;
template <class T>
using TileCpu = AxisGatherCpu<T, Tile>;
template <class T>
using ShiftCpu = AxisGatherCpu<T, Shift>;
template <class T>
using UnpoolingCpu = AxisGatherCpu<T, Unpooling>;

// y = x on the kept triangle of the last two axes, 0 elsewhere; dx = dy
// there.
template <class T>
class TriluCpu : public Trilu {
 public:
  using Trilu::Trilu;

 protected:
  // dst = src on the kept triangle, 0 elsewhere (adding with accum).
  void mask(const T* src, T* dst, const Shape& s, bool accum) const {
    const int nd = static_cast<int>(s.size());
    const int64_t rows = s[nd - 2], cols = s[nd - 1];
    const int64_t n = shape_size(s);
    for_each_block(n, [&](int64_t begin, int64_t len) {
      float buf[kBlock], out[kBlock];
      const float* f = load(src + begin, buf, len);
      for (int64_t k = 0; k < len; ++k) {
        const int64_t e = begin + k;
        const int64_t j = e % cols, i = (e / cols) % rows;
        out[k] = keeps(i, j) ? f[k] : 0.0f;
      }
      store(out, dst + begin, len, accum);
    });
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    mask(input<T>(in[0]), output<T>(out[0]), in[0]->shape(), false);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    mask(output_grad<T>(out[0]), input_grad<T>(in[0], accum[0]), in[0]->shape(),
         accum[0]);
  }
};

template <class T>
class FlipCpu : public Flip {
 public:
  using Flip::Flip;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      gather_source(input<U>(in[0]), in[0]->shape(), output<U>(out[0]),
                    out[0]->shape(), source(in[0]->shape()), 0.0f);
    });
  }

  // A flip is its own inverse, and no two elements share a source.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Shape& s = in[0]->shape();
    T* dx = input_grad<T>(in[0], accum[0]);
    if (!accum[0]) {
      gather_source(output_grad<T>(out[0]), s, dx, s, source(s), 0.0f);
      return;
    }
    std::vector<T> flipped(in[0]->size());
    gather_source(output_grad<T>(out[0]), s, flipped.data(), s, source(s),
                  0.0f);
    copy_run(flipped.data(), dx, in[0]->size(), true);
  }

 private:
  std::vector<std::vector<int64_t>> source(const Shape& s) const {
    std::vector<std::vector<int64_t>> src(s.size());
    for (size_t a = 0; a < s.size(); ++a) {
      for (int64_t j = 0; j < s[a]; ++j) {
        src[a].push_back(flipped_[a] ? s[a] - 1 - j : j);
      }
    }
    return src;
  }
};

}  // namespace

void register_array_ops(FunctionRegistry& r) {
  register_float_types<SplitCpu>(r, decl::Split, "cpu");
  register_float_types<StackCpu>(r, decl::Stack, "cpu");
  register_float_types<BroadcastCpu>(r, decl::Broadcast, "cpu");
  register_float_types<PadCpu>(r, decl::Pad, "cpu");
  register_float_types<FlipCpu>(r, decl::Flip, "cpu");
  register_float_types<TileCpu>(r, decl::Tile, "cpu");
  register_float_types<ShiftCpu>(r, decl::Shift, "cpu");
  register_float_types<UnpoolingCpu>(r, decl::Unpooling, "cpu");
  register_float_types<TriluCpu>(r, decl::Trilu, "cpu");
}

}  // namespace mg::cpu
