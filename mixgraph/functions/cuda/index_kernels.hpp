// The bodies of the CUDA kernels that are not elementwise (Reshape,
// Transpose, Concatenate, the AxisGathers Pad/Tile/Shift/Unpooling,
// Interpolate, the softmax cross entropy, layer normalization, Embed,
// FusedBatchNormalization's forward and ReLU grad and the recurrent
// driver's bias rows; the recurrent cells' bodies are in
// functions/ops/recurrent_cells.hpp),
// each a function of one index (or, for the softmax cross entropy's and
// layer normalization's rows, of a row and a lane: row bodies, whose lanes
// share a row through a join, OneLane below), with the host code that
// builds their tables: the CUDA functions launch them through a
// grid-stride loop or a warp a row (cuda/launch.cuh), and
// tests/functions/test_cuda_kernel_bodies.cpp runs the very same bodies on
// the CPU over every index (the lanes of a row as threads), against the CPU
// functions, so that their math and indexing are checked on machines
// without a GPU. No CUDA header here: everything is MG_HD and plain C++.
//
// T is the storage type (float, Half, BFloat16); every body computes and
// accumulates in fp32 and rounds to T once, at the store. A body that sums
// over a row does so in a fixed order for its launch (a warp's butterfly
// for row bodies): the results do not depend on timing.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/functions/ops/interpolate_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/graph/shape.hpp>

namespace mg::cuda {

/// The most axes a strided gather takes (more: the CPU stand-in runs).
constexpr int kMaxDims = 8;

/// Element i of a row-major walk over `size` read at the sum of its
/// coordinates times `stride`: a transpose of a row-major array.
struct StridedIndex {
  int nd = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};

  MG_HD int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t c = i % size[d];
      i /= size[d];
      off += c * stride[d];
    }
    return off;
  }
};

/// Transpose's forward view (y[i] = x[offset(i)]): y's axis i walks x's
/// axis perm[i]. perm.size() <= kMaxDims.
inline StridedIndex transpose_view(const Shape& x,
                                   const std::vector<int>& perm) {
  const std::vector<int64_t> xs = shape_strides(x);
  StridedIndex v;
  v.nd = static_cast<int>(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    v.size[i] = x[perm[i]];
    v.stride[i] = xs[perm[i]];
  }
  return v;
}

/// Its backward view (dx[i] = dy[offset(i)]): dx's axis perm[i] walks dy's
/// axis i.
inline StridedIndex transpose_grad_view(const Shape& x,
                                        const std::vector<int>& perm) {
  Shape y(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) y[i] = x[perm[i]];
  const std::vector<int64_t> ys = shape_strides(y);
  StridedIndex v;
  v.nd = static_cast<int>(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    v.size[perm[i]] = x[perm[i]];
    v.stride[perm[i]] = ys[i];
  }
  return v;
}

/// The identity view of n elements (Reshape).
inline StridedIndex contiguous_view(int64_t n) {
  StridedIndex v;
  v.nd = 1;
  v.size[0] = n;
  v.stride[0] = 1;
  return v;
}

/// dst[i] = src[view.offset(i)], or dst[i] + that with accum (in fp32).
/// Transpose (both ways) and Reshape (the identity view) are this.
template <class T>
struct GatherBody {
  const T* src;
  T* dst;
  StridedIndex view;
  bool accum;

  MG_HD void operator()(int64_t i) const {
    const T v = src[view.offset(i)];
    dst[i] = accum ? T(static_cast<float>(dst[i]) + static_cast<float>(v)) : v;
  }
};

/// dst[view.offset(i)] = src[i]: a slice of dst written from a contiguous
/// src (Concatenate's inputs into y).
template <class T>
struct ScatterBody {
  const T* src;
  T* dst;
  StridedIndex view;

  MG_HD void operator()(int64_t i) const { dst[view.offset(i)] = src[i]; }
};

/// The view of one input of Concatenate in y, or of y in its grad: `outer`
/// rows of `chunk` elements, `row` apart.
inline StridedIndex rows_view(int64_t outer, int64_t chunk, int64_t row) {
  StridedIndex v;
  v.nd = 2;
  v.size[0] = outer;
  v.size[1] = chunk;
  v.stride[0] = row;
  v.stride[1] = 1;
  return v;
}

/// The tables of an AxisGather (Pad, Tile, Shift, Unpooling: y[j] = x at
/// source_d[j_d] along each axis d, or the fill value where one is -1) as
/// the device reads them, all in one int64 array `table`:
/// - table[src_at[d] + j]: the index along x's axis d that y's index j
///   along axis d reads, or -1;
/// - for backward, per axis a CSR of the inverse: the y indices along axis
///   d that read x's index a are table[inv_at[d] + k] for k in
///   [table[ptr_at[d] + a], table[ptr_at[d] + a + 1]), ascending.
struct AxisGatherTables {
  int nd = 0;
  int64_t y_size[kMaxDims] = {}, x_size[kMaxDims] = {};
  int64_t src_at[kMaxDims] = {}, ptr_at[kMaxDims] = {}, inv_at[kMaxDims] = {};
  const int64_t* table = nullptr;
};

/// Fills t's sizes and offsets for x (as the sources index it, y's rank <=
/// kMaxDims), y and the per-axis sources, and returns the table's values;
/// the caller puts them where the bodies read them and sets t->table.
inline std::vector<int64_t> axis_gather_tables(
    const Shape& x, const Shape& y,
    const std::vector<std::vector<int64_t>>& source, AxisGatherTables* t) {
  std::vector<int64_t> table;
  t->nd = static_cast<int>(y.size());
  for (size_t d = 0; d < y.size(); ++d) {
    t->y_size[d] = y[d];
    t->x_size[d] = x[d];
    t->src_at[d] = static_cast<int64_t>(table.size());
    table.insert(table.end(), source[d].begin(), source[d].end());
  }
  for (size_t d = 0; d < y.size(); ++d) {
    std::vector<int64_t> count(x[d] + 1, 0);
    for (int64_t s : source[d]) {
      if (s >= 0) ++count[s + 1];
    }
    for (int64_t a = 0; a < x[d]; ++a) count[a + 1] += count[a];
    t->ptr_at[d] = static_cast<int64_t>(table.size());
    table.insert(table.end(), count.begin(), count.end());
    std::vector<int64_t> inv(count.back()), next(count.begin(), count.end());
    for (int64_t j = 0; j < y[d]; ++j) {
      const int64_t s = source[d][j];
      if (s >= 0) inv[next[s]++] = j;
    }
    t->inv_at[d] = static_cast<int64_t>(table.size());
    table.insert(table.end(), inv.begin(), inv.end());
  }
  return table;
}

/// y[k] = x at the sources of k's coordinates, or `fill` where one is -1.
template <class T>
struct AxisGatherBody {
  const T* x;
  T* y;
  AxisGatherTables t;
  float fill;

  MG_HD void operator()(int64_t k) const {
    int64_t r = k, off = 0, stride = 1;
    bool filled = false;
    for (int d = t.nd - 1; d >= 0; --d) {
      const int64_t j = r % t.y_size[d];
      r /= t.y_size[d];
      const int64_t s = t.table[t.src_at[d] + j];
      if (s < 0) filled = true;
      off += s * stride;
      stride *= t.x_size[d];
    }
    y[k] = filled ? T(fill) : x[off];
  }
};

/// Its grad, one body per element i of x: the sum in fp32 of dy over the y
/// elements that read i, in ascending order of y (the CPU's order), then
/// stored (added with accum).
template <class T>
struct AxisGatherGradBody {
  const T* dy;
  T* dx;
  AxisGatherTables t;
  bool accum;

  MG_HD void operator()(int64_t i) const {
    int64_t begin[kMaxDims], end[kMaxDims], pos[kMaxDims];
    bool empty = false;
    int64_t r = i;
    for (int d = t.nd - 1; d >= 0; --d) {
      const int64_t a = r % t.x_size[d];
      r /= t.x_size[d];
      begin[d] = pos[d] = t.table[t.ptr_at[d] + a];
      end[d] = t.table[t.ptr_at[d] + a + 1];
      if (begin[d] == end[d]) empty = true;
    }
    float sum = 0.0f;
    while (!empty) {
      int64_t off = 0;
      for (int d = 0; d < t.nd; ++d) {
        off = off * t.y_size[d] + t.table[t.inv_at[d] + pos[d]];
      }
      sum += static_cast<float>(dy[off]);
      int d = t.nd - 1;
      while (d >= 0 && ++pos[d] == end[d]) {
        pos[d] = begin[d];
        --d;
      }
      if (d < 0) break;
    }
    dx[i] = T(accum ? static_cast<float>(dx[i]) + sum : sum);
  }
};

/// One resized axis of Interpolate (a ResizedAxis) as the device reads it,
/// over src (outer, in, inner) and dst (outer, out, inner): output j is
/// ops::resize_tap(w[j], src[i0[j]], src[i1[j]]). For the
/// grad, the (output, weight) pairs that read source a are pair_j[p],
/// pair_w[p] for p in [ptr[a], ptr[a + 1]) (ResizedAxis's, summed in its
/// order as the CPU sums them).
struct ResizeAxisTables {
  int64_t outer = 0, in = 0, out = 0, inner = 0;
  const int64_t* i0 = nullptr;
  const int64_t* i1 = nullptr;
  const float* w = nullptr;
  const int64_t* ptr = nullptr;
  const int64_t* pair_j = nullptr;
  const float* pair_w = nullptr;
};

/// One axis of Interpolate's forward, one body per dst element, in fp32,
/// rounded to D once (S and D: T or float, the passes between axes fp32).
template <class S, class D>
struct ResizeBody {
  const S* src;
  D* dst;
  ResizeAxisTables t;

  MG_HD void operator()(int64_t k) const {
    const int64_t kk = k % t.inner, r = k / t.inner;
    const int64_t j = r % t.out, o = r / t.out;
    const float a =
        static_cast<float>(src[(o * t.in + t.i0[j]) * t.inner + kk]);
    const float b =
        static_cast<float>(src[(o * t.in + t.i1[j]) * t.inner + kk]);
    dst[k] = D(ops::resize_tap(t.w[j], a, b));
  }
};

/// Its transpose, one body per element of the source: the sum of the
/// weighted grads of the outputs that read it, in the CPU's order, stored
/// to D (added with accum).
template <class S, class D>
struct ResizeGradBody {
  const S* g;
  D* dsrc;
  ResizeAxisTables t;
  bool accum;

  MG_HD void operator()(int64_t k) const {
    const int64_t kk = k % t.inner, r = k / t.inner;
    const int64_t a = r % t.in, o = r / t.in;
    float sum = 0.0f;
    for (int64_t p = t.ptr[a]; p < t.ptr[a + 1]; ++p) {
      sum += t.pair_w[p] *
             static_cast<float>(g[(o * t.out + t.pair_j[p]) * t.inner + kk]);
    }
    dsrc[k] = D(accum ? static_cast<float>(dsrc[k]) + sum : sum);
  }
};

/// A row body's lanes: `lanes` workers share a row, lane l taking its
/// elements l, l + lanes, ...; join.sum(a), join.sum(a, b) and join.max(a)
/// turn each lane's partials into the row's, in every lane (on the device a
/// warp's shuffles, cuda/launch.cuh's WarpJoin). With one lane a lane's
/// partial is the row's.
struct OneLane {
  MG_HD void sum(float&) const {}
  MG_HD void sum(float&, float&) const {}
  MG_HD void max(float&) const {}
};

/// The max of the `size` values of a row `stride` apart, and the sum of
/// exp(x - max) over them, in fp32: a softmax never takes exp of a large
/// value. As lane `lane` of `lanes`, joined by `join` (OneLane: the whole
/// row).
template <class T, class Join>
MG_HD void softmax_stats(const T* x, int64_t size, int64_t stride, int lane,
                         int lanes, const Join& join, float* mx, float* sum) {
  float m = -INFINITY;
  for (int64_t c = lane; c < size; c += lanes) {
    m = fmaxf(m, static_cast<float>(x[c * stride]));
  }
  join.max(m);
  float s = 0.0f;
  for (int64_t c = lane; c < size; c += lanes) {
    s += expf(static_cast<float>(x[c * stride]) - m);
  }
  join.sum(s);
  *mx = m;
  *sum = s;
}

/// The softmax cross entropy over x seen as (outer, size, inner), one row
/// r = (o, j) of outer x inner to a group of lanes: y[r] =
/// log(sum(exp(x - max))) + max - x[t[r]]. A label outside [0, size)
/// gives NaN (the host checks labels that are on the host before the
/// launch, with a message). With inner 1 (the classes last: a language
/// model's logits) a warp shares a row; with inner > 1 a row's classes are
/// `inner` apart and one lane a row keeps neighbouring threads on
/// neighbouring values.
template <class T>
struct SoftmaxCrossEntropyForwardBody {
  const T* x;
  const int32_t* t;
  T* y;
  int64_t size, inner;

  /// Row r as lane `lane` of `lanes`.
  template <class Join>
  MG_HD void operator()(int64_t r, int lane, int lanes,
                        const Join& join) const {
    const int64_t o = r / inner, j = r - o * inner;
    const T* xr = x + o * size * inner + j;
    float mx, sum;
    softmax_stats(xr, size, inner, lane, lanes, join, &mx, &sum);
    if (lane != 0) return;
    const int32_t label = t[r];
    y[r] = label < 0 || label >= size
               ? T(NAN)
               : T(mx + logf(sum) - static_cast<float>(xr[label * inner]));
  }
  /// Row r by one lane.
  MG_HD void operator()(int64_t r) const { (*this)(r, 0, 1, OneLane{}); }
};

/// Its backward, a row to a group of lanes as forward's: dx = dy
/// (softmax(x) - onehot(t)), the softmax recomputed from x (no
/// activation-sized buffer between passes).
template <class T>
struct SoftmaxCrossEntropyBackwardBody {
  const T* x;
  const int32_t* t;
  const T* dy;
  T* dx;
  int64_t size, inner;
  bool accum;

  /// Row r as lane `lane` of `lanes`.
  template <class Join>
  MG_HD void operator()(int64_t r, int lane, int lanes,
                        const Join& join) const {
    const int64_t o = r / inner, j = r - o * inner;
    const int64_t base = o * size * inner + j;
    float mx, sum;
    softmax_stats(x + base, size, inner, lane, lanes, join, &mx, &sum);
    const float g = static_cast<float>(dy[r]) / sum;
    const int32_t label = t[r];
    for (int64_t c = lane; c < size; c += lanes) {
      const int64_t k = base + c * inner;
      float v = g * expf(static_cast<float>(x[k]) - mx);
      if (c == label) v -= static_cast<float>(dy[r]);
      dx[k] = T(accum ? static_cast<float>(dx[k]) + v : v);
    }
  }
  /// Row r by one lane.
  MG_HD void operator()(int64_t r) const { (*this)(r, 0, 1, OneLane{}); }
};

/// Layer normalization of contiguous rows of `len` (the statistics axes
/// last), gamma and beta (fp32, may be null) one value per row element,
/// one row to a group of lanes: the mean, then the variance of x - mean
/// (two passes, nothing lost to cancellation), y = (x - mean) rstd gamma +
/// beta; the row's mean and rstd are kept for backward.
template <class T>
struct LayerNormForwardBody {
  const T* x;
  const float* gamma;
  const float* beta;
  T* y;
  float* mean;
  float* rstd;
  int64_t len;
  float eps;

  /// Row r as lane `lane` of `lanes`.
  template <class Join>
  MG_HD void operator()(int64_t r, int lane, int lanes,
                        const Join& join) const {
    const T* xr = x + r * len;
    float s = 0.0f;
    for (int64_t j = lane; j < len; j += lanes) s += static_cast<float>(xr[j]);
    join.sum(s);
    const float m = s / static_cast<float>(len);
    float v = 0.0f;
    for (int64_t j = lane; j < len; j += lanes) {
      const float d = static_cast<float>(xr[j]) - m;
      v += d * d;
    }
    join.sum(v);
    const float rs = 1.0f / sqrtf(v / static_cast<float>(len) + eps);
    T* yr = y + r * len;
    for (int64_t j = lane; j < len; j += lanes) {
      float o = (static_cast<float>(xr[j]) - m) * rs;
      if (gamma) o *= gamma[j];
      if (beta) o += beta[j];
      yr[j] = T(o);
    }
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
  /// Row r by one lane.
  MG_HD void operator()(int64_t r) const { (*this)(r, 0, 1, OneLane{}); }
};

/// Its input grad, one row to a group of lanes, with forward's statistics:
/// with xhat = (x - mean) rstd and g = dy gamma, dx = rstd (g - mean(g) -
/// xhat mean(g xhat)).
template <class T>
struct LayerNormBackwardBody {
  const T* x;
  const T* dy;
  const float* gamma;
  const float* mean;
  const float* rstd;
  T* dx;
  int64_t len;
  bool accum;

  /// Row r as lane `lane` of `lanes`.
  template <class Join>
  MG_HD void operator()(int64_t r, int lane, int lanes,
                        const Join& join) const {
    const T* xr = x + r * len;
    const T* dyr = dy + r * len;
    const float m = mean[r], rs = rstd[r];
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t j = lane; j < len; j += lanes) {
      const float g = static_cast<float>(dyr[j]) * (gamma ? gamma[j] : 1.0f);
      s1 += g;
      s2 += g * (static_cast<float>(xr[j]) - m) * rs;
    }
    join.sum(s1, s2);
    const float inv = 1.0f / static_cast<float>(len);
    s1 *= inv;
    s2 *= inv;
    T* dxr = dx + r * len;
    for (int64_t j = lane; j < len; j += lanes) {
      const float g = static_cast<float>(dyr[j]) * (gamma ? gamma[j] : 1.0f);
      const float xhat = (static_cast<float>(xr[j]) - m) * rs;
      const float v = rs * (g - s1 - xhat * s2);
      dxr[j] = T(accum ? static_cast<float>(dxr[j]) + v : v);
    }
  }
  /// Row r by one lane.
  MG_HD void operator()(int64_t r) const { (*this)(r, 0, 1, OneLane{}); }
};

/// The rows a chunk of LayerNormParamGradBody sums: about the square root
/// of the rows (at least 32), so that neither pass is long.
inline int64_t layer_norm_chunk_rows(int64_t rows) {
  int64_t c = 32;
  while (c * c < rows) c *= 2;
  return c;
}

/// Its parameter grads, first pass: one body per (chunk, row element j),
/// summing the chunk's rows in order: dgamma[chunk len + j] = sum of dy
/// xhat, dbeta[...] = sum of dy (fp32; either may be null). With one chunk
/// these are the grads; else ColumnSumBody adds the chunks up, in order.
template <class T>
struct LayerNormParamGradBody {
  const T* x;
  const T* dy;
  const float* mean;
  const float* rstd;
  float* dgamma;
  float* dbeta;
  int64_t rows, len, chunk_rows;

  MG_HD void operator()(int64_t k) const {
    const int64_t c = k / len, j = k - c * len;
    const int64_t begin = c * chunk_rows;
    const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
    float g = 0.0f, b = 0.0f;
    for (int64_t r = begin; r < end; ++r) {
      const float d = static_cast<float>(dy[r * len + j]);
      g += d * (static_cast<float>(x[r * len + j]) - mean[r]) * rstd[r];
      b += d;
    }
    if (dgamma) dgamma[k] = g;
    if (dbeta) dbeta[k] = b;
  }
};

/// out[j] = the sum of in[c len + j] over c in [0, count), in order, one
/// body per j.
struct ColumnSumBody {
  const float* in;
  float* out;
  int64_t count, len;

  MG_HD void operator()(int64_t j) const {
    float s = 0.0f;
    for (int64_t c = 0; c < count; ++c) s += in[c * len + j];
    out[j] = s;
  }
};

/// Embed: y[i, e] = W[ids[i], e], one body per element of y (rows of
/// `width`); an id outside [0, rows) gives NaN (the host checks ids that
/// are on the host before the launch, with a message).
template <class T>
struct EmbedForwardBody {
  const int32_t* ids;
  const T* w;
  T* y;
  int64_t rows, width;

  MG_HD void operator()(int64_t k) const {
    const int64_t i = k / width, e = k - i * width;
    const int32_t id = ids[i];
    y[k] = id < 0 || id >= rows ? T(NAN) : w[id * width + e];
  }
};

/// Its weight grad, one body per element (v, e) of W: the sum of dy[i, e]
/// over the ids i equal to v, in the order of i (deterministic, no
/// atomics), in fp32.
template <class T>
struct EmbedWeightGradBody {
  const int32_t* ids;
  const T* dy;
  float* dw;
  int64_t n, width;

  MG_HD void operator()(int64_t k) const {
    const int64_t v = k / width, e = k - v * width;
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] == v) s += static_cast<float>(dy[i * width + e]);
    }
    dw[k] = s;
  }
};

/// c[i] = bias[i % n] (c[i] + bias[i % n] with accum): the rows of an (m,
/// n) product's output start from the bias, and the product then adds to
/// them (the recurrent driver's products with a bias; cuBLAS has none).
struct BiasRowsBody {
  const float* bias;
  float* c;
  int64_t n;
  bool accum;

  MG_HD void operator()(int64_t i) const {
    c[i] = accum ? c[i] + bias[i % n] : bias[i % n];
  }
};

/// dst[i] += src[i] (fp32).
struct AddToBody {
  const float* src;
  float* dst;

  MG_HD void operator()(int64_t i) const { dst[i] += src[i]; }
};

/// FusedBatchNormalization's forward, as the CPU computes it: y =
/// relu((x - mean[c]) (gamma[c] inv_std[c]) + beta[c] + z) (z null: no
/// sum) in fp32, rounded to T once, over an (outer, C, inner) array. cuDNN
/// gives the statistics; its own y, rounded before z is added, is not
/// used. NaN gives 0, as on the CPU.
template <class T>
struct FusedBnForwardBody {
  const T* x;
  const T* z;
  const float *mean, *inv_std, *gamma, *beta;
  T* y;
  int64_t C, inner;

  MG_HD void operator()(int64_t i) const {
    const int64_t c = (i / inner) % C;
    const float scale = gamma[c] * inv_std[c];
    float v = (static_cast<float>(x[i]) - mean[c]) * scale + beta[c];
    if (z) v += static_cast<float>(z[i]);
    y[i] = T(ops::ReLU{}(v));
  }
};

/// inv_std[c] = 1 / sqrt(var[c] + eps): the running statistics' (the
/// fused layer's inference), as the CPU's.
struct InvStdBody {
  const float* var;
  float eps;
  float* inv_std;

  MG_HD void operator()(int64_t c) const {
    inv_std[c] = 1.0f / sqrtf(var[c] + eps);
  }
};

/// FusedBatchNormalization's ReLU grad: dm = dy where y > 0, else 0 (exact
/// in T), and z's grad dz = dm (dz + dm in fp32, rounded once, with
/// accum_z) where dz is given.
template <class T>
struct ReluMaskBody {
  const T* y;
  const T* dy;
  T* dm;
  T* dz;
  bool accum_z;

  MG_HD void operator()(int64_t i) const {
    const T g = static_cast<float>(y[i]) > 0.0f ? dy[i] : T(0.0f);
    dm[i] = g;
    if (dz) {
      dz[i] =
          accum_z ? T(static_cast<float>(dz[i]) + static_cast<float>(g)) : g;
    }
  }
};

/// Runs body(i) for every i in [0, n) on the host, in order: how the tests
/// run the bodies the device runs.
template <class Body>
void run_on_host(int64_t n, const Body& body) {
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace mg::cuda
