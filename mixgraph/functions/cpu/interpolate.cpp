// Interpolate on the CPU: x resized one axis at a time in fp32 (linear
// interpolation of several axes is the product of their 1-D weights),
// rounded to the storage type once. Backward runs the transposed passes in
// reverse order, adding in fp32.
//
// The resized axes are x's last ones (before the last with channel_last),
// so x is a run of independent slices (an image's plane per channel, or
// an image with channel_last): each slice is read once, passes through
// every axis in a thread's two small buffers and is written once, and the
// team splits the slices. A pass an axis over the whole array, with its
// fp32 copies of x and y, took 1.8 ms forward and 1.5 ms backward for the
// U-Net's (32, 64, 7, 7) -> (14, 14) on one thread of a Xeon (2026-12-05).
#include <mixgraph/functions/interpolate.hpp>
#include <mixgraph/functions/ops/interpolate_ops.hpp>

#include <algorithm>
#include <vector>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// dst (outer, r.out, inner) from src (outer, r.in, inner), each output by
// ops::resize_tap().
void resize(const float* src, int64_t outer, int64_t inner,
            const ResizedAxis& r, float* __restrict dst) {
  if (inner == 1) {  // the last axis: one element an output
    const int64_t* i0 = r.i0.data();
    const int64_t* i1 = r.i1.data();
    const float* weight = r.w.data();
    for (int64_t o = 0; o < outer; ++o) {
      const float* s = src + o * r.in;
      float* d = dst + o * r.out;
      for (int64_t j = 0; j < r.out; ++j) {
        d[j] = ops::resize_tap(weight[j], s[i0[j]], s[i1[j]]);
      }
    }
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = src + o * r.in * inner;
    for (int64_t j = 0; j < r.out; ++j) {
      const float* a = s + r.i0[j] * inner;
      const float* b = s + r.i1[j] * inner;
      float* d = dst + (o * r.out + j) * inner;
      const float w = r.w[j];
      for (int64_t k = 0; k < inner; ++k) d[k] = ops::resize_tap(w, a[k], b[k]);
    }
  }
}

// Source a's n (<= kLanes) elements from k of the grad's outputs g (rows
// of `inner`): its pairs' shares summed in order, in registers.
constexpr int64_t kLanes = 16;

template <int64_t kN>
void sum_pairs(const float* g, int64_t inner, const ResizedAxis& r, int64_t a,
               int64_t k, int64_t n, float* __restrict d) {
  float acc[kLanes] = {};
  const int64_t len = kN > 0 ? kN : n;
  for (int64_t p = r.ptr[a]; p < r.ptr[a + 1]; ++p) {
    const float* gj = g + r.pair_j[p] * inner + k;
    const float w = r.pair_w[p];
    for (int64_t e = 0; e < len; ++e) acc[e] += w * gj[e];
  }
  for (int64_t e = 0; e < len; ++e) d[e] = acc[e];
}

// The transpose of resize: dsrc (outer, r.in, inner), each source the sum
// of its pairs' shares of g (ResizedAxis's order: the bits of adding each
// output's two shares to its sources in turn). Summing from the sources'
// side writes each once: adding from the outputs' side made a chain of
// loads and stores through the sources.
void resize_grad(const float* g, int64_t outer, int64_t inner,
                 const ResizedAxis& r, float* __restrict dsrc) {
  for (int64_t o = 0; o < outer; ++o) {
    const float* go = g + o * r.out * inner;
    float* d = dsrc + o * r.in * inner;
    if (inner == 1) {
      const int64_t* ptr = r.ptr.data();
      const int64_t* pair_j = r.pair_j.data();
      const float* pair_w = r.pair_w.data();
      for (int64_t a = 0; a < r.in; ++a) {
        float sum = 0.0f;
        for (int64_t p = ptr[a]; p < ptr[a + 1]; ++p) {
          sum += pair_w[p] * go[pair_j[p]];
        }
        d[a] = sum;
      }
      continue;
    }
    for (int64_t a = 0; a < r.in; ++a) {
      float* da = d + a * inner;
      int64_t k = 0;
      for (; k + kLanes <= inner; k += kLanes) {
        sum_pairs<kLanes>(go, inner, r, a, k, kLanes, da + k);
      }
      if (k < inner) sum_pairs<0>(go, inner, r, a, k, inner - k, da + k);
    }
  }
}

// x and y as the passes walk them: their shapes; or, where x (forward) or
// dy (backward) is held in blocks of channels, blocked_view() of them, the
// resized axes one to the left (shift 1: the channels' axis folded into
// the images'). A slice is then an image's block of channels and every tap
// moves a block of channels as one vector, where a plain slice's last axis
// took its taps an element at a time: the U-Net's (32, 64, 7, 7) ->
// (14, 14) ran 0.5 ms forward and 0.8 backward so, and its map came
// blocked from a convolution, to be converted first.
struct Walk {
  Shape x, y;
  int shift = 0;
  mg::Layout xl, yl;  // the layouts of x (and dx) and y (and dy)
};

Walk walk_of(const Shape& x, const Shape& y, const mg::Layout& held,
             const std::vector<ResizedAxis>& axes, bool channel_last) {
  const bool spatial = !channel_last && std::all_of(axes.begin(), axes.end(),
                                                    [](const ResizedAxis& r) {
                                                      return r.axis >= 2;
                                                    });
  if (held.plain() || !spatial) return {x, y, 0, {}, {}};
  return {blocked_view(x, held.block), blocked_view(y, held.block), 1,
          same_blocks(held, x), same_blocks(held, y)};
}

// x as slices: `count` of them, `in` elements each in x and `out` in y,
// the resized axes (and any after them) within a slice; `most` the largest
// slice any pass makes.
struct Slices {
  int first;  // the first resized axis
  int64_t count, in, out, most;
};

Slices slices_of(const Walk& w, const std::vector<ResizedAxis>& axes) {
  const int nd = static_cast<int>(w.x.size());
  Slices s{axes.front().axis - w.shift, 0, 0, 0, 0};
  s.count = shape_size(w.x, 0, s.first);
  s.in = shape_size(w.x, s.first, nd), s.out = shape_size(w.y, s.first, nd);
  Shape t = w.x;
  s.most = s.in;
  for (const ResizedAxis& r : axes) {
    t[r.axis - w.shift] = r.out;
    s.most = std::max(s.most, shape_size(t, s.first, nd));
  }
  return s;
}

// Calls run(slice, a, b) for every slice, a and b a thread's buffers of
// `most` floats; the team splits the slices where y is big enough.
template <class Run>
void for_each_slice(const Slices& s, Run&& run) {
  const bool team =
      s.count > 1 && s.count * std::max(s.in, s.out) >= parallel_min();
#pragma omp parallel if (team)
  {
    std::vector<float, CpuScratchAllocator<float>> a(s.most), b(s.most);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < s.count; ++n) run(n, a.data(), b.data());
  }
}

template <class T>
class InterpolateCpu : public Interpolate {
 public:
  using Interpolate::Interpolate;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Walk w = walk_of(in[0]->shape(), out[0]->shape(),
                           spatial_blocks(in[0]->data().get(), in[0]->shape()),
                           axes_, opts_.channel_last);
    const int nd = static_cast<int>(w.x.size());
    const Slices s = slices_of(w, axes_);
    // An fp32 master read as it is.
    const Operand x = operand<T>(in[0], w.xl);
    T* y = out[0]->data()->template cast<T>(true, w.yl);
    for_each_slice(s, [&](int64_t n, float* a, float* b) {
      const float* src;
      if (x.dtype == Dtype::f32) {
        src = static_cast<const float*>(x.data) + n * s.in;
      } else {
        convert(static_cast<const T*>(x.data) + n * s.in, x.dtype, a,
                Dtype::f32, static_cast<size_t>(s.in));
        src = a;
      }
      Shape t = w.x;
      float* dst = nullptr;
      for (size_t i = 0; i < axes_.size(); ++i) {
        const ResizedAxis& r = axes_[i];
        const int axis = r.axis - w.shift;
        dst = src == a ? b : a;
        if (i + 1 == axes_.size()) dst = store_buffer(y + n * s.out, dst);
        resize(src, shape_size(t, s.first, axis), shape_size(t, axis + 1, nd),
               r, dst);
        t[axis] = r.out;
        src = dst;
      }
      store(dst, y + n * s.out, s.out);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Walk w = walk_of(
        in[0]->shape(), out[0]->shape(),
        same_blocks(spatial_blocks(out[0]->grad().get(), out[0]->shape()),
                    in[0]->shape()),
        axes_, opts_.channel_last);
    const int nd = static_cast<int>(w.y.size());
    const Slices s = slices_of(w, axes_);
    const T* dy = out[0]->grad()->template get<const T>(w.yl);
    T* dx = in[0]->grad()->template cast<T>(!accum[0], w.xl);
    for_each_slice(s, [&](int64_t n, float* a, float* b) {
      const float* g = load(dy + n * s.out, a, s.out);
      Shape t = w.y;
      float* dst = nullptr;
      for (auto r = axes_.rbegin(); r != axes_.rend(); ++r) {
        const int axis = r->axis - w.shift;
        dst = g == a ? b : a;
        if (r + 1 == axes_.rend() && !accum[0]) {
          dst = store_buffer(dx + n * s.in, dst);
        }
        resize_grad(g, shape_size(t, s.first, axis),
                    shape_size(t, axis + 1, nd), *r, dst);
        t[axis] = r->in;
        g = dst;
      }
      store(dst, dx + n * s.in, s.in, accum[0]);
    });
  }
};

}  // namespace

void register_interpolate(FunctionRegistry& r) {
  register_float_types<InterpolateCpu>(r, decl::Interpolate, "cpu");
}

}  // namespace mg::cpu
