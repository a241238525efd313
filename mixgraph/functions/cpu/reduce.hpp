// The CPU reduction driver: reduces an array over a set of axes with an
// accumulating op (sum, max with its index), in fp32 whatever the storage
// type, and broadcasts a reduced grad back.
//
// The axes are merged into runs that are all reduced or all kept. One run of
// reduced axes is one pass over the array viewed as (outer, reduced, inner);
// several runs take one pass each, the later ones over the fp32 partial
// results of the earlier ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/shape.hpp>

namespace mg::cpu {

/// The shape with size-1 axes dropped and neighbours of the same kind
/// (reduced or kept) merged; `axes` sorted.
struct ReduceLayout {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
};

inline ReduceLayout reduce_layout(const Shape& shape,
                                  const std::vector<int>& axes) {
  ReduceLayout l;
  for (int a = 0; a < static_cast<int>(shape.size()); ++a) {
    if (shape[a] == 1) continue;  // reducing or keeping it is the same
    bool r = false;
    for (int b : axes) r = r || a == b;
    if (!l.dims.empty() && l.reduced.back() == r) {
      l.dims.back() *= shape[a];
    } else {
      l.dims.push_back(shape[a]);
      l.reduced.push_back(r);
    }
  }
  return l;
}

namespace reduce_ops {

/// Sum: the accumulator is a float.
struct Sum {
  using Acc = float;
  static Acc init() { return 0.0f; }
  static void merge(Acc& a, const Acc& b) { a += b; }
  static void merge_value(Acc& a, float x, int64_t) { a += x; }
  /// a += f[0..n), summed in lanes.hpp's 16 lanes (vectorized, and the
  /// rounding error grows more slowly than with one running sum).
  static void merge_run(Acc& a, const float* f, int64_t n, int64_t) {
    a += lanes_sum(n, [f](int64_t i) { return f[i]; });
  }
};

/// Max with the flat index of the first maximum; a nan wins (and stays).
struct Max {
  struct Acc {
    float value;
    int64_t index;
  };
  static Acc init() { return {-std::numeric_limits<float>::infinity(), -1}; }
  static void merge(Acc& a, const Acc& b) {
    // Strictly greater keeps the earlier index on ties; b always comes later.
    if (b.index < 0) return;
    if (a.index < 0 || b.value > a.value ||
        (std::isnan(b.value) && !std::isnan(a.value))) {
      a = b;
    }
  }
  static void merge_value(Acc& a, float x, int64_t i) { merge(a, Acc{x, i}); }
  static void merge_run(Acc& a, const float* f, int64_t n, int64_t pos) {
    for (int64_t i = 0; i < n; ++i) merge(a, Acc{f[i], pos + i});
  }
};

/// Min with the flat index of the first minimum; a nan wins (as in Max).
struct Min {
  using Acc = Max::Acc;
  static Acc init() { return {std::numeric_limits<float>::infinity(), -1}; }
  static void merge(Acc& a, const Acc& b) {
    if (b.index < 0) return;
    if (a.index < 0 || b.value < a.value ||
        (std::isnan(b.value) && !std::isnan(a.value))) {
      a = b;
    }
  }
  static void merge_value(Acc& a, float x, int64_t i) { merge(a, Acc{x, i}); }
  static void merge_run(Acc& a, const float* f, int64_t n, int64_t pos) {
    for (int64_t i = 0; i < n; ++i) merge(a, Acc{f[i], pos + i});
  }
};

}  // namespace reduce_ops

namespace detail {

// The first pass reads the input in T, converting blocks to float.
template <class Op, class T>
struct TypedSource {
  using Acc = typename Op::Acc;
  const T* x;
  // acc[j] <- src[pos + j] for j < n <= kBlock.
  void merge_each(Acc* acc, int64_t pos, int64_t n) const {
    float buf[kBlock];
    const float* f = load(x + pos, buf, n);
    for (int64_t j = 0; j < n; ++j) Op::merge_value(acc[j], f[j], pos + j);
  }
  // acc <- src[pos, pos + n) for n <= kBlock.
  void merge_run(Acc& acc, int64_t pos, int64_t n) const {
    float buf[kBlock];
    Op::merge_run(acc, load(x + pos, buf, n), n, pos);
  }
};

// Later passes read the previous pass's accumulators.
template <class Op>
struct AccSource {
  using Acc = typename Op::Acc;
  const Acc* x;
  void merge_each(Acc* acc, int64_t pos, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) Op::merge(acc[j], x[pos + j]);
  }
  void merge_run(Acc& acc, int64_t pos, int64_t n) const {
    for (int64_t j = 0; j < n; ++j) Op::merge(acc, x[pos + j]);
  }
};

// dst[o, i] = src[o, :, i] reduced, for the source viewed as (outer, r,
// inner). Work is split into fixed chunks merged in order, so the result does
// not depend on the number of threads.
template <class Op, class Src>
void reduce_pass(const Src& src, int64_t outer, int64_t r, int64_t inner,
                 typename Op::Acc* dst) {
  using Acc = typename Op::Acc;
  const bool parallel = outer * r * inner >= parallel_min();
  if (inner == 1) {
    // Each output is a contiguous run; a long run is split into kBlock
    // chunks so that even a single output (a loss) uses every thread.
    const int64_t chunks = std::max<int64_t>(1, (r + kBlock - 1) / kBlock);
    std::vector<Acc> part(chunks > 1 ? outer * chunks : 0);
    Acc* into = chunks > 1 ? part.data() : dst;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t t = 0; t < outer * chunks; ++t) {
      const int64_t o = t / chunks, c = (t % chunks) * kBlock;
      Acc acc = Op::init();
      src.merge_run(acc, o * r + c, std::min(kBlock, r - c));
      into[t] = acc;
    }
    if (chunks == 1) return;
#pragma omp parallel for schedule(static) if (parallel && outer > 1)
    for (int64_t o = 0; o < outer; ++o) {
      Acc acc = part[o * chunks];
      for (int64_t c = 1; c < chunks; ++c) Op::merge(acc, part[o * chunks + c]);
      dst[o] = acc;
    }
    return;
  }
  // Inner runs are contiguous: accumulate a block of kBlock outputs at once.
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    const int64_t o = t / blocks, begin = (t % blocks) * kBlock;
    const int64_t len = std::min(kBlock, inner - begin);
    Acc acc[kBlock];
    for (int64_t j = 0; j < len; ++j) acc[j] = Op::init();
    for (int64_t k = 0; k < r; ++k) {
      src.merge_each(acc, (o * r + k) * inner + begin, len);
    }
    std::copy(acc, acc + len, dst + o * inner + begin);
  }
}

}  // namespace detail

/// Reduces x (of `shape`) over the sorted `axes` with Op, returning one
/// accumulator per output element in row-major order of the kept axes.
template <class Op, class T>
std::vector<typename Op::Acc> reduce(const T* x, const Shape& shape,
                                     const std::vector<int>& axes) {
  using Acc = typename Op::Acc;
  ReduceLayout l = reduce_layout(shape, axes);
  std::vector<Acc> cur;
  bool first = true;
  for (;;) {
    int g = -1;  // the innermost reduced run
    for (int i = static_cast<int>(l.dims.size()) - 1; i >= 0 && g < 0; --i) {
      if (l.reduced[i]) g = i;
    }
    if (g < 0 && !first) break;
    // With nothing to reduce (size-1 axes only) the first pass still
    // converts each element to an accumulator: r = 1.
    int64_t outer = 1, r = 1, inner = 1;
    for (int i = 0; i < static_cast<int>(l.dims.size()); ++i) {
      if (g < 0 || i > g) {
        inner *= l.dims[i];
      } else if (i < g) {
        outer *= l.dims[i];
      } else {
        r = l.dims[i];
      }
    }
    std::vector<Acc> next(outer * inner);
    if (first) {
      detail::reduce_pass<Op>(detail::TypedSource<Op, T>{x}, outer, r, inner,
                              next.data());
    } else {
      detail::reduce_pass<Op>(detail::AccSource<Op>{cur.data()}, outer, r,
                              inner, next.data());
    }
    cur = std::move(next);
    first = false;
    if (g < 0) break;
    l.dims.erase(l.dims.begin() + g);
    l.reduced.erase(l.reduced.begin() + g);
  }
  return cur;
}

/// dx = dy * scale broadcast over the reduced axes (adding with accum): the
/// backward of sum and mean. dy has the kept axes of `shape`.
template <class T>
void broadcast_back(const T* dy, const Shape& shape,
                    const std::vector<int>& axes, float scale, T* dx,
                    bool accum) {
  const ReduceLayout l = reduce_layout(shape, axes);
  const int nd = static_cast<int>(l.dims.size());
  // dy's stride along each merged run; 0 along the reduced ones.
  std::vector<int64_t> dstride(nd, 0);
  int64_t n_out = 1;
  for (int i = nd - 1; i >= 0; --i) {
    if (l.reduced[i]) continue;
    dstride[i] = n_out;
    n_out *= l.dims[i];
  }
  std::vector<float> g(n_out);
  for (int64_t b = 0; b < n_out; b += kBlock) {
    const int64_t len = std::min(kBlock, n_out - b);
    const float* f = load(dy + b, g.data() + b, len);
    for (int64_t j = 0; j < len; ++j) g[b + j] = f[j] * scale;
  }
  for_each_block(shape_size(shape), [&](int64_t begin, int64_t len) {
    std::vector<int64_t> idx(nd);
    int64_t rem = begin, off = 0;
    for (int i = nd - 1; i >= 0; --i) {
      idx[i] = rem % l.dims[i];
      rem /= l.dims[i];
      off += idx[i] * dstride[i];
    }
    float buf[kBlock];
    for (int64_t j = 0; j < len; ++j) {
      buf[j] = g[off];
      // Step the multi-index, carrying into the outer runs.
      for (int i = nd - 1; i >= 0; --i) {
        off += dstride[i];
        if (++idx[i] < l.dims[i]) break;
        off -= dstride[i] * l.dims[i];
        idx[i] = 0;
      }
    }
    store(buf, dx + begin, len, accum);
  });
}

/// Max or Min over the function's axes (Op is `reduce_ops::Max` or `Min`):
/// the value of the first extremum, whose flat index routes the grad back.
template <class T, class Op, class Base>
class ExtremumCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Shape& s = in[0]->shape();
    const auto acc = reduce<Op>(input<T>(in[0]), s, this->axes_);
    const int64_t n = static_cast<int64_t>(acc.size());
    index_.resize(n);
    std::vector<float> y(n);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = acc[i].value;
      index_[i] = acc[i].index;
    }
    const auto& opts = this->options();
    if (opts.with_index || opts.only_index) {
      // NNabla's indices: the flat index into x becomes the row-major
      // position within the reduced axes.
      const auto stride = shape_strides(s);
      int32_t* idx =
          out[opts.only_index ? 0 : 1]->data()->template cast<int32_t>(
              /*write_only=*/true);
      for (int64_t o = 0; o < n; ++o) {
        int64_t pos = 0;
        for (int a : this->axes_)
          pos = pos * s[a] + (index_[o] / stride[a]) % s[a];
        idx[o] = static_cast<int32_t>(pos);
      }
    }
    if (!opts.only_index) store(y.data(), output<T>(out[0]), n);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    if (this->options().only_index) {  // integers: no grad reaches x
      if (!accum[0])
        std::fill_n(input_grad<T>(in[0], false), in[0]->size(), T(0.0f));
      return;
    }
    const int64_t n = out[0]->size();
    std::vector<float> dy(n);
    const float* g = load(output_grad<T>(out[0]), dy.data(), n);
    T* dx = input_grad<T>(in[0], accum[0]);
    if (!accum[0]) std::fill_n(dx, in[0]->size(), T(0.0f));
      // Each input element is the extremum of at most one output: no races.
#pragma omp parallel for schedule(static) if (n >= parallel_min())
    for (int64_t o = 0; o < n; ++o) {
      T& d = dx[index_[o]];
      d = T(static_cast<float>(d) + g[o]);
    }
  }

 private:
  std::vector<int64_t> index_;  // flat index into x of each output's extremum
};

}  // namespace mg::cpu
