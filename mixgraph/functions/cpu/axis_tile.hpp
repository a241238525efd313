// Tiles of an (outer, size, inner) array for the functions that reduce along
// one axis (Softmax, LogSoftmax, SoftmaxCrossEntropy, TopNError): each tile
// is the whole axis times w columns of inner, in fp32.
#pragma once

#include <vector>

#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/softmax.hpp>

namespace mg::cpu {

/// Columns per tile: all of inner while a tile stays within 64 KiB of
/// floats, so a contiguous slab converts in one call; fewer beyond that.
inline int64_t tile_width(const AxisSplit& s) {
  constexpr int64_t kTileFloats = 16 * kBlock;
  if (s.size * s.inner <= kTileFloats) return s.inner;
  return std::max<int64_t>(1, std::min(s.inner, kTileFloats / s.size));
}

/// Reads tile (o, columns [j0, j0 + w)) of x as floats: element (a, j) at
/// [a * ld + j]. For float it points into x (ld = inner); else it fills buf
/// (size * w floats, ld = w).
template <class T>
const float* read_tile(const T* x, const AxisSplit& s, int64_t o, int64_t j0,
                       int64_t w, float* buf, int64_t* ld) {
  const T* base = x + o * s.size * s.inner + j0;
  if constexpr (std::is_same_v<T, float>) {
    (void)buf, (void)w;
    *ld = s.inner;
    return base;
  } else {
    *ld = w;
    if (w == s.inner) return load(base, buf, s.size * w);
    for (int64_t a = 0; a < s.size; ++a) {
      load(base + a * s.inner, buf + a * w, w);
    }
    return buf;
  }
}

/// Writes a tile computed in buf (ld = w) to y, adding with accum.
template <class T>
void write_tile(const float* buf, T* y, const AxisSplit& s, int64_t o,
                int64_t j0, int64_t w, bool accum = false) {
  T* base = y + o * s.size * s.inner + j0;
  if (w == s.inner) return store(buf, base, s.size * w, accum);
  for (int64_t a = 0; a < s.size; ++a) {
    store(buf + a * w, base + a * s.inner, w, accum);
  }
}

/// Calls fn(o, j0, w, scratch) for every tile, in parallel for arrays of
/// `parallel_from` elements or more (parallel_min_exp() for tiles that take
/// an exp or a log an element); scratch holds `scratch_floats` floats per
/// thread. Each tile is one thread's: the same bits on any team.
template <class Fn>
void for_each_tile(const AxisSplit& s, int64_t scratch_floats, Fn&& fn,
                   int64_t parallel_from = parallel_min()) {
  if (s.outer == 0 || s.inner == 0) return;
  const int64_t w = tile_width(s);
  const int64_t chunks = (s.inner + w - 1) / w;
  const int64_t tiles = s.outer * chunks;
  const bool parallel = s.outer * s.size * s.inner >= parallel_from;
#pragma omp parallel if (parallel)
  {
    std::vector<float> scratch(scratch_floats);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t o = t / chunks;
      const int64_t j0 = (t % chunks) * w;
      fn(o, j0, std::min(w, s.inner - j0), scratch.data());
    }
  }
}

/// The max of x[i * stride] for i in [0, n) (-inf for none; a NaN never
/// wins, as with std::max), at the widest vector the CPU has (stride 1).
float max_of(const float* x, int64_t stride, int64_t n);

/// y[i] = exp(x[i * stride] - shift) for i in [0, n), at the widest vector
/// the CPU has (stride 1) or one at a time; returns the sum of y, taken in
/// 16 lanes and a fixed tree (the same bits at every vector width).
float exp_sum_of_difference(const float* x, int64_t stride, float shift,
                            float* y, int64_t n);

/// exp_and_sum below for a tile of w > 1 columns: the columns side by side
/// at the widest vector the CPU has (the same bits at every width).
void exp_and_sum_columns(const float* x, int64_t ld, int64_t size, int64_t w,
                         float* e, float* mx, float* sum);

/// Per column j of a tile x (ld apart): mx[j] = the max along the axis and
/// sum[j] = the sum of exp(x - mx), with e (ld = w) receiving exp(x - mx).
/// Subtracting the max keeps exp from overflowing, even in fp16 inputs.
inline void exp_and_sum(const float* x, int64_t ld, int64_t size, int64_t w,
                        float* e, float* mx, float* sum) {
  if (w == 1) {
    // The last axis (attention's scores, a vocabulary's logits): one
    // contiguous run, at the widest vector the CPU has.
    mx[0] = max_of(x, ld, size);
    sum[0] = exp_sum_of_difference(x, ld, mx[0], e, size);
    return;
  }
  exp_and_sum_columns(x, ld, size, w, e, mx, sum);
}

}  // namespace mg::cpu
