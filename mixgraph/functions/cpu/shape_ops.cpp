// Reshape, Transpose, Concatenate and Slice on the CPU. They move elements
// without arithmetic, so forward copies T to T; only backward with accum adds
// (in fp32).
#include <mixgraph/functions/shape_ops.hpp>

#include <algorithm>
#include <cstring>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// dst = src, or dst += src with accum, for n elements. src and dst are
// one buffer where Reshape runs in place (then nothing is copied).
template <class T>
void copy_add(const T* src, T* dst, int64_t n, bool accum) {
  if (!accum) {
    if (n > 0 && src != dst) std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  for_each_block(n, [&](int64_t begin, int64_t len) {
    float buf[kBlock];
    store(load(src + begin, buf, len), dst + begin, len, true);
  });
}

// Element i (a multi-index over shape) of the view is base[offset + sum of
// i[d] * stride[d]]: a transpose or a slice of a row-major array.
struct StridedView {
  Shape shape;
  std::vector<int64_t> stride;
  int64_t offset = 0;
};

// Drops size-1 axes and merges neighbours that are contiguous in the base,
// so the inner loop runs as long as possible.
StridedView simplify(const StridedView& v) {
  StridedView s;
  s.offset = v.offset;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] == 1) continue;
    if (!s.shape.empty() && s.stride.back() == v.stride[d] * v.shape[d]) {
      s.shape.back() *= v.shape[d];
      s.stride.back() = v.stride[d];
    } else {
      s.shape.push_back(v.shape[d]);
      s.stride.push_back(v.stride[d]);
    }
  }
  if (s.shape.empty()) s.shape = {1}, s.stride = {1};
  return s;
}

// Calls fn(row, base_offset) for each row (all axes but the last) of the
// view, in parallel when the view is large.
template <class Fn>
void for_each_view_row(const StridedView& v, Fn&& fn) {
  const int nd = static_cast<int>(v.shape.size());
  const int64_t n = shape_size(v.shape);
  if (n == 0) return;
  const int64_t rows = n / v.shape[nd - 1];
#pragma omp parallel for schedule(static) if (n >= parallel_min())
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = v.offset;
    for (int d = nd - 2; d >= 0; --d) {
      off += (rem % v.shape[d]) * v.stride[d];
      rem /= v.shape[d];
    }
    fn(r, off);
  }
}

// d = s, or d += s (in fp32) with add.
template <class T>
inline void put(T& d, const T& s, bool add) {
  d = add ? T(static_cast<float>(d) + static_cast<float>(s)) : s;
}

// gather when the view's last axis is strided but axis k reads
// contiguously (a transpose that moves the last axis): 32 x 32 tiles keep
// the strided reads in cache while the writes stay contiguous.
template <class T>
void gather_tiled(const T* base, const StridedView& v, int k, T* y, bool add) {
  constexpr int64_t kTile = 32;
  const int nd = static_cast<int>(v.shape.size());
  const auto ys = shape_strides(v.shape);
  const int64_t n = shape_size(v.shape);
  const int64_t nk = v.shape[k], nl = v.shape[nd - 1], sl = v.stride[nd - 1];
  const int64_t tiles = (nk + kTile - 1) / kTile;
  const int64_t outer = n / (nk * nl);
#pragma omp parallel for schedule(static) if (n >= parallel_min())
  for (int64_t t = 0; t < outer * tiles; ++t) {
    int64_t rem = t / tiles, src = v.offset, dst = 0;
    for (int d = nd - 2; d >= 0; --d) {
      if (d == k) continue;
      const int64_t i = rem % v.shape[d];
      rem /= v.shape[d];
      src += i * v.stride[d];
      dst += i * ys[d];
    }
    const int64_t a0 = (t % tiles) * kTile, a1 = std::min(nk, a0 + kTile);
    for (int64_t b0 = 0; b0 < nl; b0 += kTile) {
      const int64_t b1 = std::min(nl, b0 + kTile);
      for (int64_t a = a0; a < a1; ++a) {
        const T* sa = base + src + a;  // v.stride[k] == 1
        T* ya = y + dst + a * ys[k];
        for (int64_t b = b0; b < b1; ++b) put(ya[b], sa[b * sl], add);
      }
    }
  }
}

// y[i] = base[view(i)], or y[i] += base[view(i)] with add.
template <class T>
void gather(const T* base, const StridedView& view, T* y, bool add = false) {
  const StridedView v = simplify(view);
  const int nd = static_cast<int>(v.shape.size());
  const int64_t len = v.shape.back(), step = v.stride.back();
  if (step != 1) {
    for (int k = 0; k < nd - 1; ++k) {
      if (v.stride[k] == 1) return gather_tiled(base, v, k, y, add);
    }
  }
  for_each_view_row(v, [&](int64_t r, int64_t off) {
    T* row = y + r * len;
    if (!add && step == 1) {
      std::memcpy(row, base + off, len * sizeof(T));
    } else {
      for (int64_t j = 0; j < len; ++j) put(row[j], base[off + j * step], add);
    }
  });
}

// base[view(i)] = dy[i], or += with add. The view must not alias itself
// (a transpose or a slice never does), so rows can run in parallel.
template <class T>
void scatter(const T* dy, const StridedView& view, T* base, bool add) {
  const StridedView v = simplify(view);
  const int64_t len = v.shape.back(), step = v.stride.back();
  for_each_view_row(v, [&](int64_t r, int64_t off) {
    const T* row = dy + r * len;
    if (!add && step == 1) {
      std::memcpy(base + off, row, len * sizeof(T));
    } else {
      for (int64_t j = 0; j < len; ++j) put(base[off + j * step], row[j], add);
    }
  });
}

template <class T>
class ReshapeCpu : public Reshape {
 public:
  using Reshape::Reshape;

 protected:
  // In place (under clearing y takes x's buffer, dx dy's), x is read
  // before y is made the head: x may be held in another layout (blocked),
  // and y's write-only cast would drop that copy unread. Read first, the
  // plain copy is made and then becomes y, with nothing left to copy.
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const U* x = input<U>(in[0]);
      copy_add(x, output<U>(out[0]), in[0]->size(), false);
    });
  }
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const T* dy = output_grad<T>(out[0]);
    copy_add(dy, input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class TransposeCpu : public Transpose {
 public:
  using Transpose::Transpose;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // y's axis i walks x's axis perm_[i].
    const auto xs = in[0]->data()->strides();
    StridedView v{out[0]->shape(), std::vector<int64_t>(perm_.size()), 0};
    for (size_t i = 0; i < perm_.size(); ++i) v.stride[i] = xs[perm_[i]];
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      gather(input<U>(in[0]), v, output<U>(out[0]));
    });
  }
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    // dx is dy transposed back: x's axis perm_[i] walks dy's axis i. A
    // gather writes dx contiguously and covers all of it.
    const auto ys = out[0]->data()->strides();
    StridedView v{in[0]->shape(), std::vector<int64_t>(perm_.size()), 0};
    for (size_t i = 0; i < perm_.size(); ++i) v.stride[perm_[i]] = ys[i];
    gather(output_grad<T>(out[0]), v, input_grad<T>(in[0], accum[0]), accum[0]);
  }
};

template <class T>
class ConcatenateCpu : public Concatenate {
 public:
  using Concatenate::Concatenate;

 protected:
  // Input k fills y[o, offset(k) : offset(k) + chunk(k)] for each outer o.
  // In a channel-blocked layout (joined()) an image's channels of one
  // input are still one run, [c / block][s][c % block], so the same chunks
  // are copied; channels-last, each position's channels are one: the rows
  // are the positions.
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<NdArray*> heads;
    for (Variable* x : in) heads.push_back(x->data().get());
    const Join join = joined(heads, in);
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const int64_t rows = join.rows(outer_, inner_);
      const int64_t row = out[0]->size() / std::max<int64_t>(rows, 1);
      U* y = out[0]->data()->template cast<U>(true, layout(join, out[0]));
      int64_t offset = 0;
      for (Variable* x : in) {
        const int64_t chunk = rows ? x->size() / rows : 0;
        const U* src = x->data()->template get<const U>(layout(join, x));
#pragma omp parallel for schedule(static) if (x->size() >= parallel_min())
        for (int64_t o = 0; o < rows; ++o) {
          copy_add(src + o * chunk, y + o * row + offset, chunk, false);
        }
        offset += chunk;
      }
    });
  }
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const Join join = joined({out[0]->grad().get()}, in);
    const int64_t rows = join.rows(outer_, inner_);
    const int64_t row = out[0]->size() / std::max<int64_t>(rows, 1);
    const T* dy = out[0]->grad()->template get<const T>(layout(join, out[0]));
    // Every pointer taken before the threaded loops: with accum, a grad
    // held in the other layout is converted by its cast.
    std::vector<T*> dxs(in.size(), nullptr);
    for (size_t k = 0; k < in.size(); ++k) {
      if (propagate_down[k]) {
        dxs[k] =
            in[k]->grad()->template cast<T>(!accum[k], layout(join, in[k]));
      }
    }
    int64_t offset = 0;
    // In order: the same variable given twice is overwritten, then added to.
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t chunk = rows ? in[k]->size() / rows : 0;
      if (T* dx = dxs[k]) {
#pragma omp parallel for schedule(static) if (in[k]->size() >= parallel_min())
        for (int64_t o = 0; o < rows; ++o) {
          copy_add(dy + o * row + offset, dx + o * chunk, chunk, accum[k]);
        }
      }
      offset += chunk;
    }
  }

 private:
  // How the arrays are joined: plain (block 0), in blocks of `block`
  // channels, or channels-last (`last`: each array in a block of all its
  // own channels, which layout() works out; block is then the first
  // head's, nonzero).
  struct Join {
    int64_t block = 0;
    bool last = false;
    // The runs copied whole: images, or (channels-last) positions.
    int64_t rows(int64_t outer, int64_t inner) const {
      return last ? outer * inner : outer;
    }
  };
  // That of the first channel-blocked head among `heads` whose images are
  // the outer rows and whose spatial size is the size after the axis (so
  // the axis is its channel axis): channels-last where its block holds more
  // than 16 channels, all of them (bfloat16's activations on AMX); else its
  // block, where every input's count along the axis is a multiple of it.
  // Activations held blocked between convolutions (a U-Net's skip
  // connections) are then joined with no pass to unblock them, and the
  // convolution that reads y takes it as it is; a plain input is blocked
  // by its get, the pass its convolution would otherwise make. (The
  // U-Net's bfloat16 step on AMX spent 1.6 ms in Concatenate converting
  // its channels-last inputs to plain and back.)
  Join joined(const std::vector<NdArray*>& heads, const Variables& in) const {
    if (outer_ * inner_ == 0) return {};
    for (NdArray* a : heads) {
      const Layout l = a->array().layout();
      if (l.plain() || l.batch != outer_ || l.spatial != inner_) continue;
      if (l.block == l.channels && l.block > 16) return {l.block, true};
      for (Variable* x : in) {
        if ((x->size() / (outer_ * inner_)) % l.block != 0) return {};
      }
      return {l.block, false};
    }
    return {};
  }
  // The layout of v (the output or one input) in the join.
  Layout layout(const Join& join, const Variable* v) const {
    if (join.block == 0) return {};
    const int64_t channels = v->size() / (outer_ * inner_);
    return {join.last ? channels : join.block, outer_, channels, inner_};
  }
};

template <class T>
class SliceCpu : public Slice {
 public:
  using Slice::Slice;

 protected:
  StridedView view(const Variables& in, const Variables& out) const {
    const auto xs = in[0]->data()->strides();
    StridedView v{out[0]->shape(), std::vector<int64_t>(xs.size()), 0};
    for (size_t a = 0; a < xs.size(); ++a) {
      v.stride[a] = xs[a] * step_[a];
      v.offset += xs[a] * start_[a];
    }
    return v;
  }
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      gather(input<U>(in[0]), view(in, out), output<U>(out[0]));
    });
  }
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    T* dx = input_grad<T>(in[0], accum[0]);
    // Elements outside the slice get no grad.
    if (!accum[0]) std::fill_n(dx, in[0]->size(), T(0.0f));
    scatter(output_grad<T>(out[0]), view(in, out), dx, accum[0]);
  }
};

}  // namespace

void register_shape_ops(FunctionRegistry& r) {
  register_float_types<ReshapeCpu>(r, decl::Reshape, "cpu");
  register_float_types<TransposeCpu>(r, decl::Transpose, "cpu");
  register_float_types<ConcatenateCpu>(r, decl::Concatenate, "cpu");
  register_float_types<SliceCpu>(r, decl::Slice, "cpu");
}

}  // namespace mg::cpu
