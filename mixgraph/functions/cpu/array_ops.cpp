// Split, Stack, Broadcast, Pad, Tile, Shift, Unpooling, Flip and Trilu on the
// CPU. Forward moves elements of T without arithmetic; backward adds in fp32
// where elements meet.
#include <omp.h>

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

// A row's index along all axes of s but the last, walked as an odometer:
// row r's (one division an axis, once), then each next row's (none).
std::vector<int64_t> row_index(const Shape& s, int64_t r) {
  const int nd = static_cast<int>(s.size());
  std::vector<int64_t> idx(std::max(nd - 1, 0), 0);
  for (int d = nd - 2; d >= 0; --d) idx[d] = r % s[d], r /= s[d];
  return idx;
}
void next_row(const Shape& s, std::vector<int64_t>& idx) {
  for (int d = static_cast<int>(s.size()) - 2; d >= 0 && ++idx[d] == s[d]; --d)
    idx[d] = 0;
}

// Calls fn(y_offset, x_offset_or_-1, last_axis_source) for each row (all
// axes but the last) of y in [r0, r1), in order, where y's element (..., j)
// reads x's element (..., source[last][j]) of row x_offset, or nothing
// when either is -1.
template <class Fn>
void for_each_source_row(const Shape& xs, const Shape& ys,
                         const std::vector<std::vector<int64_t>>& source,
                         int64_t r0, int64_t r1, Fn&& fn) {
  const int nd = static_cast<int>(ys.size());
  if (nd == 0) {
    if (r0 == 0 && r1 > 0) fn(0, 0, std::vector<int64_t>{0});
    return;
  }
  const int64_t row = ys[nd - 1];
  const auto xstride = shape_strides(xs);
  std::vector<int64_t> idx = row_index(ys, r0);
  for (int64_t r = r0; r < r1; ++r) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1 && off >= 0; ++d) {
      const int64_t s = source[d][idx[d]];
      off = s < 0 ? -1 : off + s * xstride[d];
    }
    fn(r * row, off, source[nd - 1]);
    next_row(ys, idx);
  }
}

// The rows of y (all axes but the last), 1 for a scalar, 0 when empty.
int64_t rows_of(const Shape& s) {
  if (s.empty()) return 1;
  return s.back() ? shape_size(s) / s.back() : 0;
}

// y[i] = x[source(i)], or `fill` where the source is -1. A row that reads
// the same x row as the row before it (Unpooling's and Tile's repeats)
// copies that row of y. The team splits the rows where y is big enough.
template <class T>
void gather_source(const T* x, const Shape& xs, T* y, const Shape& ys,
                   const std::vector<std::vector<int64_t>>& source,
                   float fill) {
  const T f(fill);
  const int64_t rows = rows_of(ys);
  const bool team = rows > 1 && shape_size(ys) >= parallel_min();
#pragma omp parallel if (team)
  {
    const auto [r0, r1] =
        team_share(rows, omp_get_thread_num(), omp_get_num_threads());
    int64_t prev_y = -1, prev_x = -1;
    for_each_source_row(
        xs, ys, source, r0, r1,
        [&](int64_t yo, int64_t xo, const std::vector<int64_t>& last) {
          const int64_t n = static_cast<int64_t>(last.size());
          if (xo >= 0 && xo == prev_x) {
            std::copy(y + prev_y, y + prev_y + n, y + yo);
          } else {
            for (int64_t j = 0; j < n; ++j) {
              y[yo + j] = (xo < 0 || last[j] < 0) ? f : x[xo + last[j]];
            }
          }
          prev_y = yo, prev_x = xo;
        });
  }
}

// For each axis, the indices along y that read each index along x, as
// lists: those of x index i are j[ptr[i]] .. j[ptr[i + 1] - 1], ascending.
struct Readers {
  std::vector<int64_t> ptr, j;
};

std::vector<Readers> readers_of(
    const Shape& xs, const std::vector<std::vector<int64_t>>& source) {
  std::vector<Readers> all(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    Readers& r = all[d];
    r.ptr.assign(xs[d] + 1, 0);
    for (const int64_t s : source[d]) {
      if (s >= 0) ++r.ptr[s + 1];
    }
    for (int64_t i = 0; i < xs[d]; ++i) r.ptr[i + 1] += r.ptr[i];
    r.j.resize(r.ptr[xs[d]]);
    std::vector<int64_t> at(r.ptr.begin(), r.ptr.end() - 1);
    for (size_t j = 0; j < source[d].size(); ++j) {
      if (source[d][j] >= 0) r.j[at[source[d][j]]++] = static_cast<int64_t>(j);
    }
  }
  return all;
}

// dx[i] = the sum of dy over the elements that read x's element i, in
// fp32, in y's order (the bits of adding each dy to its source in turn),
// then stored into dx. Each row of x gathers from the rows of y that read
// it (the product of the leading axes' reader lists, walked in order):
// dx is written once an element and the team splits x's rows. Adding from
// y's side, a row at a time on one thread, took 1.35 ms for the U-Net's
// Unpooling of (32, 32, 14, 14) by 2 x 2 (Xeon, 2026-12-05).
template <class T>
void scatter_source(const T* dy, const Shape& ys, T* dx, const Shape& xs,
                    const std::vector<std::vector<int64_t>>& source,
                    bool accum) {
  // dy as fp32 in one vector pass (for float, dy itself): converting a
  // 16-bit type an element at a time in the loops below made Unpooling's
  // backward half again as slow in half as in float.
  std::vector<float, CpuScratchAllocator<float>> dy_buffer(
      std::is_same_v<T, float> ? 0 : shape_size(ys));
  const float* dyf = load(dy, dy_buffer.data(), shape_size(ys));
  const int nd = static_cast<int>(xs.size());
  if (nd == 0) {
    store(dyf, dx, 1, accum);
    return;
  }
  const std::vector<Readers> readers = readers_of(xs, source);
  const int64_t row = xs[nd - 1], rows = rows_of(xs);
  const auto ystride = shape_strides(ys);
  // The sums go straight into dx in float (without accum); else into an
  // fp32 array of x's size, stored in one vector pass at the end (a
  // conversion a row cost Unpooling's half backward a quarter more time).
  const bool direct = std::is_same_v<T, float> && !accum;
  std::vector<float, CpuScratchAllocator<float>> sums(direct ? 0
                                                             : shape_size(xs));
  float* const sum_base = direct ? store_buffer(dx, sums.data()) : sums.data();
  // Where each element i of x's last axis is read by k elements, k i + m
  // for m < k (Unpooling's kernel, k = 1 a copy), or by one at a fixed
  // offset (Pad, Shift inside the border), a row adds as vectors: slot m
  // of every element after slot m - 1, each element's order unchanged.
  const Readers& last = readers[nd - 1];
  const int64_t k =
      row > 0 && last.ptr[row] % row == 0 ? last.ptr[row] / row : 0;
  bool strided = k > 0, shifted = k == 1;
  for (int64_t i = 0; i < row && (strided || shifted); ++i) {
    for (int64_t m = 0; m < k; ++m) {
      const int64_t p = i * k + m;
      strided = strided && last.ptr[i] == i * k && last.j[p] == p;
      shifted =
          shifted && last.ptr[i + 1] == i + 1 && last.j[p] == last.j[0] + i;
    }
  }
  const int64_t shift = shifted ? last.j[0] : 0;
  const bool team =
      rows > 1 && shape_size(ys) + shape_size(xs) >= parallel_min();
#pragma omp parallel if (team)
  {
    const auto [r0, r1] =
        team_share(rows, omp_get_thread_num(), omp_get_num_threads());
    std::vector<int64_t> xi = row_index(xs, r0);  // x's row
    std::vector<int64_t> at(nd, 0);  // the place in each axis' reader list
    for (int64_t r = r0; r < r1; ++r) {
      bool any = true;
      for (int d = 0; d < nd - 1; ++d) {
        at[d] = readers[d].ptr[xi[d]];
        any = any && at[d] < readers[d].ptr[xi[d] + 1];
      }
      float* sum = sum_base + r * row;
      std::fill_n(sum, row, 0.0f);
      while (any) {
        int64_t yo = 0;
        for (int d = 0; d < nd - 1; ++d) yo += readers[d].j[at[d]] * ystride[d];
        const float* g = dyf + yo;
        if (shifted) {
          for (int64_t i = 0; i < row; ++i) sum[i] += g[shift + i];
        } else if (strided && k == 2) {
          for (int64_t i = 0; i < row; ++i) sum[i] += g[2 * i];
          for (int64_t i = 0; i < row; ++i) sum[i] += g[2 * i + 1];
        } else if (strided) {
          for (int64_t m = 0; m < k; ++m) {
            for (int64_t i = 0; i < row; ++i) sum[i] += g[k * i + m];
          }
        } else {
          for (int64_t i = 0; i < row; ++i) {
            float s = sum[i];
            for (int64_t p = last.ptr[i]; p < last.ptr[i + 1]; ++p) {
              s += g[last.j[p]];
            }
            sum[i] = s;
          }
        }
        // The next row of y that reads this row of x, in y's order.
        int d = nd - 2;
        for (; d >= 0; --d) {
          if (++at[d] < readers[d].ptr[xi[d] + 1]) break;
          at[d] = readers[d].ptr[xi[d]];
        }
        any = d >= 0;
      }
      next_row(xs, xi);
    }
  }
  store(sum_base, dx, shape_size(xs), accum);
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

// Unpooling of an array held in blocks of channels, on its blocked_view()
// (images * channels / block, spatial..., block): a row is a run along the
// last spatial axis of `block` channels each, the rows before it are
// repeated whole (a memcpy of the row before) and each of a row's elements
// is a block copied `kw` times. The general gather walked the rows of a
// plain copy (converted from the blocks first) an element at a time: the
// U-Net's (32, 32, 14, 14) by 2 x 2 took 0.5 ms forward and 0.9 backward
// in bfloat16 so.
struct UnpoolRows {
  Shape x, y;    // the blocked views
  int rank = 0;  // the axes that index rows: all but the last two
  int64_t x_row = 0, y_row = 0, rows_x = 0, rows_y = 0, block = 0, kw = 1;

  UnpoolRows(const Shape& xs, const Shape& ys, int64_t b)
      : x(blocked_view(xs, b)), y(blocked_view(ys, b)), block(b) {
    const int nd = static_cast<int>(x.size());
    rank = nd - 2;
    x_row = x[nd - 2] * b, y_row = y[nd - 2] * b;
    kw = y[nd - 2] / x[nd - 2];
    rows_x = shape_size(x, 0, rank), rows_y = shape_size(y, 0, rank);
  }
  // The row of x that y's row r reads.
  int64_t source(int64_t r) const {
    int64_t xr = 0, scale = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t i = r % y[d];
      r /= y[d];
      xr += i / (y[d] / x[d]) * scale;
      scale *= x[d];
    }
    return xr;
  }
};

template <class T>
void unpool_blocked(const T* x, T* y, const UnpoolRows& u) {
  const bool team = u.rows_y > 1 && u.rows_y * u.y_row >= parallel_min();
#pragma omp parallel if (team)
  {
    const auto [r0, r1] =
        team_share(u.rows_y, omp_get_thread_num(), omp_get_num_threads());
    int64_t prev = -1, prev_source = -1;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t xr = u.source(r);
      T* yr = y + r * u.y_row;
      if (xr == prev_source) {
        std::memcpy(yr, y + prev * u.y_row, u.y_row * sizeof(T));
      } else {
        const T* xs = x + xr * u.x_row;
        for (int64_t e = 0; e < u.x_row; e += u.block) {
          for (int64_t m = 0; m < u.kw; ++m) {
            std::memcpy(yr + e * u.kw + m * u.block, xs + e,
                        u.block * sizeof(T));
          }
        }
      }
      prev = r, prev_source = xr;
    }
  }
}

// dx's row of x: the sum in fp32 over the y rows that read it (in y's
// order) and over each element's kw copies (in order), the order in which
// the general scatter adds them, so the bits are the same.
template <class T>
void unpool_blocked_grad(const T* dy, T* dx, const UnpoolRows& u, bool accum) {
  const bool team = u.rows_x > 1 && u.rows_y * u.y_row >= parallel_min();
#pragma omp parallel if (team)
  {
    std::vector<float, CpuScratchAllocator<float>> g(u.y_row), sum(u.x_row);
    std::vector<int64_t> first(u.rank), at(u.rank);
    const auto [r0, r1] =
        team_share(u.rows_x, omp_get_thread_num(), omp_get_num_threads());
    for (int64_t r = r0; r < r1; ++r) {
      // x's row index per axis, and the first y index that reads it.
      int64_t rem = r;
      for (int d = u.rank - 1; d >= 0; --d) {
        first[d] = rem % u.x[d] * (u.y[d] / u.x[d]);
        rem /= u.x[d];
      }
      at = first;
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (;;) {
        int64_t yr = 0;
        for (int d = 0; d < u.rank; ++d) yr = yr * u.y[d] + at[d];
        const float* gr = load(dy + yr * u.y_row, g.data(), u.y_row);
        for (int64_t e = 0; e < u.x_row; e += u.block) {
          float* s = sum.data() + e;
          for (int64_t m = 0; m < u.kw; ++m) {
            const float* ge = gr + e * u.kw + m * u.block;
            for (int64_t l = 0; l < u.block; ++l) s[l] += ge[l];
          }
        }
        int d = u.rank - 1;  // the next y row that reads it, in y's order
        for (; d >= 0; --d) {
          if (++at[d] < first[d] + u.y[d] / u.x[d]) break;
          at[d] = first[d];
        }
        if (d < 0) break;
      }
      store(sum.data(), dx + r * u.x_row, u.x_row, accum);
    }
  }
}

// Unpooling, on x's (dy's) blocks where it is held in blocks of channels
// and only spatial axes are pooled; else the general gather.
template <class T>
class UnpoolingCpu : public AxisGatherCpu<T, Unpooling> {
 public:
  using AxisGatherCpu<T, Unpooling>::AxisGatherCpu;

 protected:
  // The blocks to unpool in, for an array of `shape` held in `held`.
  mg::Layout blocks(NdArray* held, const Shape& shape) const {
    const int nd = static_cast<int>(shape.size());
    if (this->opts_.channel_last ||
        static_cast<int>(this->opts_.kernel.size()) > nd - 2 ||
        shape_size(shape) == 0) {
      return {};
    }
    return spatial_blocks(held, shape);
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const mg::Layout xl = blocks(in[0]->data().get(), in[0]->shape());
    if (xl.plain()) return AxisGatherCpu<T, Unpooling>::forward_impl(in, out);
    dispatch_layout<T>(in, this->tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const U* x = in[0]->data()->template get<const U>(xl);
      U* y = out[0]->data()->template cast<U>(true,
                                              same_blocks(xl, out[0]->shape()));
      unpool_blocked(x, y,
                     UnpoolRows(in[0]->shape(), out[0]->shape(), xl.block));
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const mg::Layout yl = blocks(out[0]->grad().get(), out[0]->shape());
    if (yl.plain()) {
      return AxisGatherCpu<T, Unpooling>::backward_impl(in, out, propagate_down,
                                                        accum);
    }
    const T* dy = out[0]->grad()->template get<const T>(yl);
    T* dx = in[0]->grad()->template cast<T>(!accum[0],
                                            same_blocks(yl, in[0]->shape()));
    unpool_blocked_grad(dy, dx,
                        UnpoolRows(in[0]->shape(), out[0]->shape(), yl.block),
                        accum[0]);
  }
};

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
