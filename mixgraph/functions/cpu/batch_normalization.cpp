// BatchNormalization and SyncBatchNormalization on the CPU: one kernel, whose
// steps are separated where SyncBatchNormalization all-reduces the channel
// sums (sum_over_ranks, nothing for BatchNormalization). x is seen as
// size0 * size1 rows of size2 values, row r in channel r % size1, and read
// row by row in pieces of at most kBlock values (half and bfloat16 through
// an fp32 buffer on the stack, which stays in L1). A channel's sum is the
// pairwise sum of its rows' sums in row order, so it does not depend on the
// threads.
// The loops over a piece are compiled per vector ISA (isa_loops.hpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <mixgraph/contexts/cpu/channel_blocks.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// The loops over one piece: `rows` rows of `len` values each (whole rows,
// or part of one), the first in channel c0 of C; x, and dy for the grads,
// of X: fp32, or bf16 as its bits (uint16_t), widened exactly by value() as
// the loop reads it. With a conversion into an fp32 buffer before each
// loop instead, ResNet-18's bfloat16 normalizations took 9.5-11.4 ms a
// step backward and 6.9-7.5 forward, against 7.3-8.1 and 6.6-6.9 (2
// threads of an AMD EPYC Zen 4, 2026-12-06); half still converts (no
// exact widening as cheap as a shift). A row's sum is lanes_sum's (the
// same bits at every width).
namespace bn_loops {
__attribute__((always_inline)) inline float value(float v) { return v; }
__attribute__((always_inline)) inline float value(uint16_t bf16) {
  return mg::detail::bf16_bits_to_float(bf16);
}
// clang-format off
#define MG_BN_LOOPS(NS, TARGET)                                               \
  namespace NS {                                                              \
  template <class X>                                                          \
  TARGET float row_sum(const X* x, int64_t len) {                             \
    return len == 1 ? value(x[0])                                             \
                    : lanes_sum(len, [x](int64_t j) { return value(x[j]); }); \
  }                                                                           \
  /* sum[i] = the sum of row i, m2[i] = the sum of its squared deviations */ \
  /* from its own mean sum[i] / len: the second sum reads the row again */   \
  /* where the first left it, in L1 (a piece is at most kBlock values) */    \
  template <class X>                                                          \
  TARGET void row_stats(const X* x, int64_t rows, int64_t len, float* sum,    \
                        float* m2) {                                          \
    for (int64_t i = 0; i < rows; ++i) {                                      \
      const X* r = x + i * len;                                               \
      const float s = row_sum(r, len), m = s / static_cast<float>(len);      \
      sum[i] = s;                                                             \
      m2[i] = lanes_sum(len, [r, m](int64_t j) {                              \
        return (value(r[j]) - m) * (value(r[j]) - m);                         \
      });                                                                     \
    }                                                                         \
  }                                                                           \
  /* y = (x - mu) scale + beta; subtracting mu first keeps the precision */   \
  /* when |mu| is much larger than the spread. */                             \
  template <class X>                                                          \
  TARGET void normalise(const X* x, float* y, int64_t rows, int64_t len,      \
                        int64_t c0, int64_t C, const float* mu,               \
                        const float* scale, const float* beta) {              \
    for (int64_t i = 0, c = c0; i < rows; ++i, c = c + 1 == C ? 0 : c + 1) {  \
      const float m = mu[c], sc = scale[c], b = beta[c];                      \
      const X* r = x + i * len;                                               \
      float* o = y + i * len;                                                 \
      for (int64_t j = 0; j < len; ++j) o[j] = (value(r[j]) - m) * sc + b;    \
    }                                                                         \
  }                                                                           \
  /* sum_d[i] += the sum of row i's dy, sum_dx[i] of its dy (x - mu) */       \
  template <class X>                                                          \
  TARGET void grad_sums(const X* x, const X* d, int64_t rows, int64_t len,    \
                        int64_t c0, int64_t C, const float* mu,               \
                        float* sum_d, float* sum_dx) {                        \
    for (int64_t i = 0, c = c0; i < rows; ++i, c = c + 1 == C ? 0 : c + 1) {  \
      const X* r = x + i * len;                                               \
      const X* g = d + i * len;                                               \
      const float m = mu[c];                                                  \
      sum_d[i] += row_sum(g, len);                                            \
      sum_dx[i] += lanes_sum(len, [r, g, m](int64_t j) {                      \
        return value(g[j]) * (value(r[j]) - m);                               \
      });                                                                     \
    }                                                                         \
  }                                                                           \
  /* dx (+)= a dy + b (x - mu) + k */                                         \
  template <class X>                                                          \
  TARGET void grad_x(const X* x, const X* d, float* dx, int64_t rows,         \
                     int64_t len, int64_t c0, int64_t C, const float* mu,     \
                     const float* a, const float* b, const float* k,          \
                     bool accum) {                                            \
    for (int64_t i = 0, c = c0; i < rows; ++i, c = c + 1 == C ? 0 : c + 1) {  \
      const float m = mu[c], ac = a[c], bc = b[c], kc = k[c];                 \
      const X* r = x + i * len;                                               \
      const X* g = d + i * len;                                               \
      float* o = dx + i * len;                                                \
      if (accum) {                                                            \
        for (int64_t j = 0; j < len; ++j) {                                   \
          o[j] += ac * value(g[j]) + bc * (value(r[j]) - m) + kc;             \
        }                                                                     \
      } else {                                                                \
        for (int64_t j = 0; j < len; ++j) {                                   \
          o[j] = ac * value(g[j]) + bc * (value(r[j]) - m) + kc;              \
        }                                                                     \
      }                                                                       \
    }                                                                         \
  }                                                                           \
  }
MG_FOR_EACH_VECTOR_ISA(MG_BN_LOOPS)
#undef MG_BN_LOOPS
// clang-format on

// A piece of x: rows [r, r + rows) of C channels, `len` values each from
// the row's value s0 (s0 > 0 only where a row is cut into pieces).
struct Piece {
  int64_t r, rows, s0, len, c0, C;
  int64_t size() const { return rows * len; }
};

template <class X>
void row_stats(const X* x, const Piece& p, float* sum, float* m2) {
  MG_CALL_VECTOR_ISA(row_stats(x, p.rows, p.len, sum, m2));
}
template <class X>
void normalise(const X* x, float* y, const Piece& p, const float* mu,
               const float* scale, const float* beta) {
  MG_CALL_VECTOR_ISA(
      normalise(x, y, p.rows, p.len, p.c0, p.C, mu, scale, beta));
}
template <class X>
void grad_sums(const X* x, const X* d, const Piece& p, const float* mu,
               float* sum_d, float* sum_dx) {
  MG_CALL_VECTOR_ISA(
      grad_sums(x, d, p.rows, p.len, p.c0, p.C, mu, sum_d, sum_dx));
}
template <class X>
void grad_x(const X* x, const X* d, float* dx, const Piece& p, const float* mu,
            const float* a, const float* b, const float* k, bool accum) {
  MG_CALL_VECTOR_ISA(
      grad_x(x, d, dx, p.rows, p.len, p.c0, p.C, mu, a, b, k, accum));
}

// n values of T from p as the loops read them: fp32 and bf16 where they
// are (bf16 as its bits), half converted into buf first.
template <class T>
auto loop_input(const T* p, float* buf, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    (void)buf, (void)n;
    static_assert(sizeof(BFloat16) == sizeof(uint16_t));
    return reinterpret_cast<const uint16_t*>(p);
  } else {
    return load(p, buf, n);
  }
}
}  // namespace bn_loops

// The rows of x: R = size0 * C rows of S values. Rows shorter than kBlock
// go in pieces of whole rows, about kBlock values each; a longer row is cut
// into pieces of kBlock, which stay on one thread, in order.
struct Rows {
  int64_t R, C, S;
  int64_t per_piece() const { return std::max<int64_t>(1, kBlock / S); }
  bool parallel() const { return R * S >= parallel_min(); }
};

// fn(piece) for every piece of x, in parallel over the rows; the piece's
// values are x[p.r * S + p.s0 ...] (p.size() of them, contiguous).
template <class Fn>
void for_each_piece(const Rows& x, Fn&& fn) {
  if (x.R == 0 || x.S == 0) return;
  if (x.S <= kBlock) {
    const int64_t per = x.per_piece(), count = (x.R + per - 1) / per;
#pragma omp parallel for schedule(static) if (x.parallel())
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = i * per;
      fn(bn_loops::Piece{r, std::min(per, x.R - r), 0, x.S, r % x.C, x.C});
    }
    return;
  }
#pragma omp parallel for schedule(static) if (x.parallel())
  for (int64_t r = 0; r < x.R; ++r) {
    for (int64_t s0 = 0; s0 < x.S; s0 += kBlock) {
      fn(bn_loops::Piece{r, 1, s0, std::min(kBlock, x.S - s0), r % x.C, x.C});
    }
  }
}

// The sum of p[0], p[stride], ... (n of them), pairwise over halves down
// to 64-value runs summed in lanes: a channel's total over its rows, whose
// error grows with log n (a channel of a (65536, 2) batch has 65536 rows).
float pairwise_sum(const float* p, int64_t n, int64_t stride) {
  if (n <= 64)
    return lanes_sum(n, [p, stride](int64_t j) { return p[j * stride]; });
  const int64_t h = n / 2;
  return pairwise_sum(p, h, stride) +
         pairwise_sum(p + h * stride, n - h, stride);
}

// Per channel, the sum of per_row over its rows (R values, C channels).
std::vector<float> channel_totals(const std::vector<float>& per_row,
                                  int64_t C) {
  const int64_t R = static_cast<int64_t>(per_row.size());
  std::vector<float> total(C);
  for (int64_t c = 0; c < C; ++c) {
    total[c] = pairwise_sum(per_row.data() + c, R / C, C);
  }
  return total;
}

// ---- x held channel-blocked (SyncedArray's Layout) ----
//
// Between convolutions an activation may be held in oneDNN's layout,
// [n][c / block][s][c % block] (block 16, or all the channels for channels
// last); the loops below read it so, sixteen channels a vector, and write
// y and dx in the same layout, sparing the convolutions a pass over every
// activation at each end. Their sums per (image, channel) are the rows'
// sums of the plain loops (the order within a row differs: four partial
// sums a lane), so channel_totals() finishes both alike.
namespace bn_blocked {

// The tiles of x: N images x C / block channel blocks, S x block values.
struct Tiles {
  int64_t N, C, S, block;
  int64_t count() const { return N * (C / block); }
  bool parallel() const { return N * C * S >= parallel_min(); }
};

// fn(offset of a tile's first value, its first channel, its row of the
// per-row sums n * C + c0) for every tile, in parallel. fn is a plain
// lambda that calls the tile functions below (compiled for AVX-512 each,
// taking pointers): vector values never cross between functions built
// for different targets.
template <class Fn>
void for_each_tile(const Tiles& t, Fn&& fn) {
  const int64_t count = t.count(), per_image = t.C / t.block;
#pragma omp parallel for schedule(static) if (t.parallel())
  for (int64_t i = 0; i < count; ++i) {
    const int64_t c0 = i % per_image * t.block;
    fn(i * t.S * t.block, c0, i / per_image * t.C + c0);
  }
}

// One value's term of a sum: v, or its squared deviation from m.
template <bool kDeviations>
MG_TARGET_AVX512 inline __m512 term(__m512 v, __m512 m) {
  if (!kDeviations) return v;
  const __m512 d = _mm512_sub_ps(v, m);
  return _mm512_mul_ps(d, d);
}

// The sum over s of a tile's values x[s][g .. g + 15] (with kDeviations,
// of their squared deviations from m), in four partial sums a lane.
template <bool kDeviations, class T>
MG_TARGET_AVX512 inline __m512 tile_lane_sums(const T* p, int64_t S,
                                              int64_t block, __m512 m) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t s = 0;
  for (; s + 4 <= S; s += 4) {
    a0 = _mm512_add_ps(a0, term<kDeviations>(avx512::load16(p + s * block), m));
    a1 = _mm512_add_ps(
        a1, term<kDeviations>(avx512::load16(p + (s + 1) * block), m));
    a2 = _mm512_add_ps(
        a2, term<kDeviations>(avx512::load16(p + (s + 2) * block), m));
    a3 = _mm512_add_ps(
        a3, term<kDeviations>(avx512::load16(p + (s + 3) * block), m));
  }
  for (; s < S; ++s) {
    a0 = _mm512_add_ps(a0, term<kDeviations>(avx512::load16(p + s * block), m));
  }
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

// sum[g .. g + 15] = the sums over s of a tile's values x[s][g .. g + 15],
// and m2[g ...] those of their squared deviations from their own mean
// (sum / S), for every group g of 16 of the tile's channels: the second
// sum reads the group again where the first left it, in L1 or L2 (a tile
// of 16 channels of 32 x 32 maps is 64 KB in fp32).
template <class T>
MG_TARGET_AVX512 void tile_stats(const T* x, int64_t S, int64_t block,
                                 float* sum, float* m2) {
  const __m512 count = _mm512_set1_ps(static_cast<float>(S));
  for (int64_t g = 0; g < block; g += 16) {
    const __m512 total =
        tile_lane_sums<false>(x + g, S, block, _mm512_setzero_ps());
    const __m512 mean = _mm512_div_ps(total, count);
    _mm512_storeu_ps(sum + g, total);
    _mm512_storeu_ps(m2 + g, tile_lane_sums<true>(x + g, S, block, mean));
  }
}

// per_row[n * C + c] = the sum of x's values of image n, channel c, and
// per_m2[n * C + c] that of their squared deviations from their mean.
template <class T>
void stats(const T* x, const Tiles& t, float* per_row, float* per_m2) {
  for_each_tile(t, [&](int64_t off, int64_t, int64_t row) {
    tile_stats(x + off, t.S, t.block, per_row + row, per_m2 + row);
  });
}

// A tile of y = (x - mu) scale + beta, as the plain loops; with kRelu,
// z's tile (where given) added and the ReLU taken before y is rounded
// (FusedBatchNormalization, as add_and_relu() on plain arrays).
template <bool kRelu, class T>
MG_TARGET_AVX512 void tile_normalise(const T* x, const T* z, T* y, int64_t S,
                                     int64_t block, const float* mu,
                                     const float* scale, const float* beta) {
  for (int64_t g = 0; g < block; g += 16) {
    const __m512 m = _mm512_loadu_ps(mu + g);
    const __m512 sc = _mm512_loadu_ps(scale + g);
    const __m512 b = _mm512_loadu_ps(beta + g);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t i = s * block + g;
      const __m512 v = _mm512_sub_ps(avx512::load16(x + i), m);
      __m512 r = _mm512_add_ps(_mm512_mul_ps(v, sc), b);
      if constexpr (kRelu) {
        if (z) r = _mm512_add_ps(r, avx512::load16(z + i));
        // max_ps gives its second operand, 0, for a NaN r (and +0 for
        // -0), as ops::ReLU's r > 0 ? r : 0 does.
        r = _mm512_max_ps(r, _mm512_setzero_ps());
      }
      avx512::store16(y + i, r);
    }
  }
}

// y = (x - mu) scale + beta; with relu, relu(that + z) (z may be null).
template <class T>
void normalise(const T* x, const T* z, bool relu, T* y, const Tiles& t,
               const float* mu, const float* scale, const float* beta) {
  for_each_tile(t, [&](int64_t off, int64_t c0, int64_t) {
    const T* zt = z ? z + off : nullptr;
    if (relu) {
      tile_normalise<true>(x + off, zt, y + off, t.S, t.block, mu + c0,
                           scale + c0, beta + c0);
    } else {
      tile_normalise<false>(x + off, zt, y + off, t.S, t.block, mu + c0,
                            scale + c0, beta + c0);
    }
  });
}

// FusedBatchNormalization's grad of its ReLU at value i: dy where y > 0,
// else 0 (a NaN y gives 0, as relu_grad()'s bits rule does), written to dz
// where given (added where accum_z: one rounding, as store()'s). Without
// kMask, dy itself.
struct ReluMask {
  const void* y = nullptr;  // T; null: no mask
  void* dz = nullptr;       // T; null: z has no grad wanted
  bool accum_z = false;
};
template <bool kMask, class T>
MG_TARGET_AVX512 inline __m512 masked_grad(const T* dy, const ReluMask& r,
                                           int64_t i, bool write_dz) {
  const __m512 u = avx512::load16(dy + i);
  if constexpr (!kMask) {
    return u;
  } else {
    const __m512 y = avx512::load16(static_cast<const T*>(r.y) + i);
    const __m512 m = _mm512_maskz_mov_ps(
        _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ), u);
    if (write_dz && r.dz) {
      T* dz = static_cast<T*>(r.dz) + i;
      avx512::store16(dz, r.accum_z ? _mm512_add_ps(avx512::load16(dz), m) : m);
    }
    return m;
  }
}

// A tile's sums of dy into sum_d[g ...] and of dy (x - mu) into
// sum_dx[g ...], two partial sums a lane each; with kMask, of the ReLU's
// grad instead of dy, which is also written to dz.
template <bool kMask, class T>
MG_TARGET_AVX512 void tile_grad_sums(const T* x, const T* dy, ReluMask r,
                                     int64_t S, int64_t block, const float* mu,
                                     float* sum_d, float* sum_dx) {
  for (int64_t g = 0; g < block; g += 16) {
    const __m512 m = _mm512_loadu_ps(mu + g);
    __m512 d0 = _mm512_setzero_ps(), d1 = d0, e0 = d0, e1 = d0;
    int64_t s = 0;
    for (; s + 2 <= S; s += 2) {
      const int64_t i = s * block + g, j = i + block;
      const __m512 u = masked_grad<kMask>(dy, r, i, true);
      const __m512 v = masked_grad<kMask>(dy, r, j, true);
      d0 = _mm512_add_ps(d0, u);
      d1 = _mm512_add_ps(d1, v);
      e0 = _mm512_add_ps(
          e0, _mm512_mul_ps(u, _mm512_sub_ps(avx512::load16(x + i), m)));
      e1 = _mm512_add_ps(
          e1, _mm512_mul_ps(v, _mm512_sub_ps(avx512::load16(x + j), m)));
    }
    if (s < S) {
      const int64_t i = s * block + g;
      const __m512 u = masked_grad<kMask>(dy, r, i, true);
      d0 = _mm512_add_ps(d0, u);
      e0 = _mm512_add_ps(
          e0, _mm512_mul_ps(u, _mm512_sub_ps(avx512::load16(x + i), m)));
    }
    _mm512_storeu_ps(sum_d + g, _mm512_add_ps(_mm512_loadu_ps(sum_d + g),
                                              _mm512_add_ps(d0, d1)));
    _mm512_storeu_ps(sum_dx + g, _mm512_add_ps(_mm512_loadu_ps(sum_dx + g),
                                               _mm512_add_ps(e0, e1)));
  }
}

// sum_d[n * C + c] += the sum of dy, sum_dx[...] of dy (x - mu), per image
// and channel (dy masked by the ReLU and dz written where r.y is given).
template <class T>
void grad_sums(const T* x, const T* dy, const ReluMask& r, const Tiles& t,
               const float* mu, float* sum_d, float* sum_dx) {
  const T* y = static_cast<const T*>(r.y);
  T* dz = static_cast<T*>(r.dz);
  for_each_tile(t, [&](int64_t off, int64_t c0, int64_t row) {
    if (y) {
      const ReluMask rt{y + off, dz ? dz + off : nullptr, r.accum_z};
      tile_grad_sums<true>(x + off, dy + off, rt, t.S, t.block, mu + c0,
                           sum_d + row, sum_dx + row);
    } else {
      tile_grad_sums<false>(x + off, dy + off, ReluMask{}, t.S, t.block,
                            mu + c0, sum_d + row, sum_dx + row);
    }
  });
}

// A tile of dx (+)= a dy + b (x - mu) + k, as the plain loops; with
// kMask, the ReLU's grad in place of dy.
template <bool kMask, class T>
MG_TARGET_AVX512 void tile_grad_x(const T* x, const T* dy, ReluMask r, T* dx,
                                  int64_t S, int64_t block, const float* mu,
                                  const float* a, const float* b,
                                  const float* k, bool accum) {
  for (int64_t g = 0; g < block; g += 16) {
    const __m512 m = _mm512_loadu_ps(mu + g), ac = _mm512_loadu_ps(a + g),
                 bc = _mm512_loadu_ps(b + g), kc = _mm512_loadu_ps(k + g);
    for (int64_t s = 0; s < S; ++s) {
      const int64_t i = s * block + g;
      const __m512 xm = _mm512_sub_ps(avx512::load16(x + i), m);
      const __m512 u = masked_grad<kMask>(dy, r, i, false);
      __m512 v = _mm512_add_ps(
          _mm512_add_ps(_mm512_mul_ps(ac, u), _mm512_mul_ps(bc, xm)), kc);
      if (accum) v = _mm512_add_ps(avx512::load16(dx + i), v);
      avx512::store16(dx + i, v);
    }
  }
}

template <class T>
void grad_x(const T* x, const T* dy, const ReluMask& r, T* dx, const Tiles& t,
            const float* mu, const float* a, const float* b, const float* k,
            bool accum) {
  const T* y = static_cast<const T*>(r.y);
  for_each_tile(t, [&](int64_t off, int64_t c0, int64_t) {
    if (y) {
      tile_grad_x<true>(x + off, dy + off, ReluMask{y + off}, dx + off, t.S,
                        t.block, mu + c0, a + c0, b + c0, k + c0, accum);
    } else {
      tile_grad_x<false>(x + off, dy + off, ReluMask{}, dx + off, t.S, t.block,
                         mu + c0, a + c0, b + c0, k + c0, accum);
    }
  });
}

}  // namespace bn_blocked

// Fn: BatchNormalization, or SyncBatchNormalization (whose sum_over_ranks
// makes every sum and count the whole batch's).
template <class T, class Fn>
class BatchNormalizationKernel : public Fn {
 public:
  using Fn::Fn;

 protected:
  using Fn::opts_;
  using Fn::size0_;
  using Fn::size1_;
  using Fn::size2_;

  void forward_full(const Variables& in, const Variables& out) override {
    const int64_t C = size1_, S = size2_;
    const Rows rows{size0_ * C, C, S};
    // x held channel-blocked is read, and y written, in its layout.
    const Layout held = held_layout(in[0]);
    const bn_blocked::Tiles tiles{size0_, C, S, held.block};
    const T* x = in[0]->data()->template get<const T>(held);
    mean_.assign(C, 0.0f);
    inv_std_.assign(C, 0.0f);
    if (opts_.batch_stat) {
      // One pass over x: each row's (image's channel's) sum and the sum
      // of its squared deviations from its own mean, the second summed
      // from the cache right after the first. The channel's squared
      // deviations are then its rows' plus each row's count times its
      // mean's squared distance from the channel's (Chan, Golub and
      // LeVeque's joining of partial variances), never a difference of
      // E[x^2] and E[x]^2, which cancels badly when |mean| >> std. A pass
      // for the mean and another for the deviations from it read x twice
      // from memory: the second read was a fifth of a forward's traffic.
      std::vector<float> per_row(rows.R, 0.0f), per_m2(rows.R, 0.0f);
      if (!held.plain()) {
        bn_blocked::stats(x, tiles, per_row.data(), per_m2.data());
      } else {
        for_each_piece(rows, [&](const bn_loops::Piece& p) {
          float buf[kBlock];
          const auto xf =
              bn_loops::loop_input(x + p.r * S + p.s0, buf, p.size());
          if (p.s0 == 0) {  // whole rows, or a long row's first piece
            bn_loops::row_stats(xf, p, &per_row[p.r], &per_m2[p.r]);
            return;
          }
          // A long row's later piece, joined to the pieces before it.
          float sum = 0.0f, m2 = 0.0f;
          bn_loops::row_stats(xf, p, &sum, &m2);
          const float n_a = static_cast<float>(p.s0);
          const float n_b = static_cast<float>(p.len);
          const float d = sum / n_b - per_row[p.r] / n_a;
          per_m2[p.r] += m2 + d * d * (n_a * n_b / (n_a + n_b));
          per_row[p.r] += sum;
        });
      }
      // The sums, then the value count: one reduce over the ranks.
      mean_ = channel_totals(per_row, C);
      mean_.push_back(static_cast<float>(size0_ * S));
      this->sum_over_ranks(mean_.data(), C + 1);
      count_ = mean_.back();
      mean_.pop_back();
      const float m = count_;
      for (auto& v : mean_) v /= m;
      const float row_count = static_cast<float>(S);
      for (int64_t r = 0; r < rows.R; ++r) {
        const float d = per_row[r] / row_count - mean_[r % C];
        per_m2[r] += row_count * d * d;
      }
      std::vector<float> var = channel_totals(per_m2, C);
      this->sum_over_ranks(var.data(), C);
      // The running statistics are fp32 whatever T is: cast<float> makes
      // the fp32 copy the head and drops any other.
      float* rm = in[3]->data()->cast<float>();
      float* rv = in[4]->data()->cast<float>();
      const float d = opts_.decay_rate;
      for (int64_t c = 0; c < C; ++c) {
        var[c] /= m;
        inv_std_[c] = 1.0f / std::sqrt(var[c] + opts_.eps);
        rm[c] = d * rm[c] + (1.0f - d) * mean_[c];
        rv[c] = d * rv[c] + (1.0f - d) * var[c] * (m / (m - 1.0f));
      }
    } else {
      const float* rm = in[3]->data()->get<const float>();
      const float* rv = in[4]->data()->get<const float>();
      for (int64_t c = 0; c < C; ++c) {
        mean_[c] = rm[c];
        inv_std_[c] = 1.0f / std::sqrt(rv[c] + opts_.eps);
      }
    }
    const float* beta = input<float>(in[1]);
    const float* gamma = input<float>(in[2]);
    std::vector<float> scale(C);
    for (int64_t c = 0; c < C; ++c) scale[c] = gamma[c] * inv_std_[c];
    // FusedBatchNormalization's z, in x's layout, resolved here: a get
    // inside the threaded loop below may convert (another layout or
    // type), and SyncedArray is not to be converted from two threads.
    const T* z = ends_in_relu() && in.size() == 6
                     ? in[5]->data()->template get<const T>(held)
                     : nullptr;
    if (!held.plain()) {
      T* y = out[0]->data()->template cast<T>(true, held);
      bn_blocked::normalise(x, z, ends_in_relu(), y, tiles, mean_.data(),
                            scale.data(), beta);
      return;
    }
    T* y = output<T>(out[0]);
    const bool relu = ends_in_relu();
    for_each_piece(rows, [&](const bn_loops::Piece& p) {
      float xb[kBlock], yb[kBlock];
      const int64_t off = p.r * S + p.s0, n = p.size();
      float* yf = yb;
      if constexpr (std::is_same_v<T, float>) yf = y + off;
      bn_loops::normalise(bn_loops::loop_input(x + off, xb, n), yf, p,
                          mean_.data(), scale.data(), beta);
      if (relu) add_and_relu(z ? z + off : nullptr, yf, n);
      if constexpr (!std::is_same_v<T, float>) store(yf, y + off, n);
    });
  }

  // With batch statistics, xh = (x - mu) inv_std and
  //   dx = gamma inv_std (dy - sum(dy) / M - xh sum(dy xh) / M);
  // with running statistics mu and inv_std are constants: dx = gamma
  // inv_std dy. In both, dbeta = sum(dy) and dgamma = sum(dy xh). The sums
  // in dx are the whole batch's (over the ranks); dbeta and dgamma stay this
  // rank's: the data-parallel grad all-reduce adds them up.
  void backward_full(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    backward_masked(in, out, propagate_down, accum, bn_blocked::ReluMask{});
  }

  // backward_full(), with dy masked by relu.y > 0 on the fly and the masked
  // grad written to relu.dz in the same pass as the sums, where relu.y is
  // given: FusedBatchNormalization's ReLU, for x held channel-blocked only.
  void backward_masked(const Variables& in, const Variables& out,
                       const std::vector<bool>& propagate_down,
                       const std::vector<bool>& accum,
                       const bn_blocked::ReluMask& relu) {
    if (!propagate_down[0] && !propagate_down[1] && !propagate_down[2] &&
        !relu.dz) {
      return;
    }
    const int64_t C = size1_, S = size2_;
    const Rows rows{size0_ * C, C, S};
    // x held channel-blocked: dy read and dx written in its layout too.
    const Layout held = held_layout(in[0]);
    if (relu.y && held.plain()) {
      throw std::logic_error(
          msg(this->tag(),
              "the ReLU's mask is taken in the blocked loops "
              "only: x is not held channel-blocked"));
    }
    const bn_blocked::Tiles tiles{size0_, C, S, held.block};
    const T* x = in[0]->data()->template get<const T>(held);
    const T* dy = out[0]->grad()->template get<const T>(held);
    const bool need_sums =
        propagate_down[1] || propagate_down[2] || opts_.batch_stat;
    std::vector<float> sums;  // sum(dy) per channel, then sum(dy (x - mu))
    if (need_sums || relu.dz) {
      std::vector<float> sum_d(rows.R, 0.0f), sum_dx(rows.R, 0.0f);
      if (!held.plain()) {
        bn_blocked::grad_sums(x, dy, relu, tiles, mean_.data(), sum_d.data(),
                              sum_dx.data());
      } else {
        for_each_piece(rows, [&](const bn_loops::Piece& p) {
          float xb[kBlock], db[kBlock];
          const int64_t off = p.r * S + p.s0, n = p.size();
          bn_loops::grad_sums(bn_loops::loop_input(x + off, xb, n),
                              bn_loops::loop_input(dy + off, db, n), p,
                              mean_.data(), &sum_d[p.r], &sum_dx[p.r]);
        });
      }
      sums = channel_totals(sum_d, C);
      const std::vector<float> dx_sums = channel_totals(sum_dx, C);
      sums.insert(sums.end(), dx_sums.begin(), dx_sums.end());
    }
    if (propagate_down[1]) {
      store_grad<T>(sums.data(), in[1], accum[1]);  // fp32 for an fp32 master
    }
    if (propagate_down[2]) {
      std::vector<float> dgamma(C);
      for (int64_t c = 0; c < C; ++c) dgamma[c] = sums[C + c] * inv_std_[c];
      store_grad<T>(dgamma.data(), in[2], accum[2]);
    }
    if (!propagate_down[0]) return;
    // dx = a dy + b (x - mu) + k per channel.
    if (opts_.batch_stat) this->sum_over_ranks(sums.data(), 2 * C);
    const float* gamma = input<float>(in[2]);
    std::vector<float> a(C), b(C, 0.0f), k(C, 0.0f);
    const float m = count_;
    for (int64_t c = 0; c < C; ++c) {
      a[c] = gamma[c] * inv_std_[c];
      if (opts_.batch_stat) {
        b[c] = -a[c] * inv_std_[c] * inv_std_[c] * sums[C + c] / m;
        k[c] = -a[c] * sums[c] / m;
      }
    }
    if (!held.plain()) {
      T* dx = in[0]->grad()->template cast<T>(!accum[0], held);
      bn_blocked::grad_x(x, dy, relu, dx, tiles, mean_.data(), a.data(),
                         b.data(), k.data(), accum[0]);
      return;
    }
    T* dx = input_grad<T>(in[0], accum[0]);
    for_each_piece(rows, [&](const bn_loops::Piece& p) {
      float xb[kBlock], db[kBlock], gb[kBlock];
      const int64_t off = p.r * S + p.s0, n = p.size();
      const auto xf = bn_loops::loop_input(x + off, xb, n);
      const auto df = bn_loops::loop_input(dy + off, db, n);
      if constexpr (std::is_same_v<T, float>) {
        bn_loops::grad_x(xf, df, dx + off, p, mean_.data(), a.data(), b.data(),
                         k.data(), accum[0]);
      } else {
        bn_loops::grad_x(xf, df, gb, p, mean_.data(), a.data(), b.data(),
                         k.data(), false);
        store(gb, dx + off, n, accum[0]);
      }
    });
  }

  // x's layout where it is held channel-blocked in T (its head) and the
  // loops here can read it so (AVX-512; channels in groups of 16; this
  // function's own rows: one batch axis, channels on axis 1), else plain.
  Layout held_layout(Variable* x) const {
    const SyncedArray& a = x->data()->array();
    const Layout l = a.layout();
    if (l.plain() || a.dtype() != dtype_of<T> || l.block % 16 != 0 ||
        !channel_blocks_vectorized(16) || l.batch != size0_ ||
        l.channels != size1_ || l.spatial != size2_) {
      return {};
    }
    return l;
  }

  // Whether forward adds z (in[5], where given) and takes the ReLU before
  // y is rounded: FusedBatchNormalization.
  virtual bool ends_in_relu() const { return false; }

  // y = relu(y + z) for n (at most kBlock) fp32 values; z may be null.
  static void add_and_relu(const T* z, float* y, int64_t n) {
    if (z) {
      float buf[kBlock];
      const float* zf = load(z, buf, n);
      for (int64_t i = 0; i < n; ++i) y[i] += zf[i];
    }
    const ops::ReLU relu;
    for (int64_t i = 0; i < n; ++i) y[i] = relu(y[i]);
  }

 private:
  // The statistics forward normalised with, for backward: the batch's in
  // training, the running ones in inference; the batch's value count.
  std::vector<float> mean_, inv_std_;
  float count_ = 0.0f;
};

template <class T>
using BatchNormalizationCpu = BatchNormalizationKernel<T, BatchNormalization>;
template <class T>
using SyncBatchNormalizationCpu =
    BatchNormalizationKernel<T, SyncBatchNormalization>;

// dm = dy where y > 0, else 0, for n elements: exact in T, so a 16-bit T
// is compared on its bits (y > 0 where the bits are positive and at most
// +inf's, sign bit clear: a NaN compares false, as in fp32). A
// scalar conversion per element made FusedBatchNormalization's backward in
// half 3x the time of BatchNormalization, Add2 and ReLU apart; a branch per
// element (GCC left the loop scalar outside the per-ISA copies) made it
// twice their time in float inside a ResNet-18 step.
namespace relu_loops {
// clang-format off
#define MG_RELU_LOOPS(NS, TARGET)                                            \
  namespace NS {                                                             \
  TARGET void grad(const float* y, const float* dy, float* dm, int64_t n) {  \
    _Pragma("GCC ivdep")                                                     \
    for (int64_t i = 0; i < n; ++i) dm[i] = y[i] > 0.0f ? dy[i] : 0.0f;      \
  }                                                                          \
  /* y - 1 below +inf's bits: 0 < y <= +inf in one compare; dy masked */   \
  /* with and (GCC leaves a select of uint16_t scalar: control flow) */     \
  TARGET void grad(const uint16_t* y, uint16_t inf, const uint16_t* dy,      \
                   uint16_t* dm, int64_t n) {                                \
    _Pragma("GCC ivdep")                                                     \
    for (int64_t i = 0; i < n; ++i) {                                        \
      const uint16_t pass =                                                  \
          static_cast<uint16_t>(y[i] - 1u) < inf ? 0xffff : 0;               \
      dm[i] = dy[i] & pass;                                                  \
    }                                                                        \
  }                                                                          \
  }
MG_FOR_EACH_VECTOR_ISA(MG_RELU_LOOPS)
#undef MG_RELU_LOOPS
// clang-format on
}  // namespace relu_loops

template <class T>
void relu_grad(const T* y, const T* dy, T* dm, int64_t n) {
  using namespace relu_loops;
  if constexpr (std::is_same_v<T, float>) {
    MG_CALL_VECTOR_ISA(grad(y, dy, dm, n));
  } else {
    static_assert(sizeof(T) == sizeof(uint16_t));
    constexpr uint16_t inf = std::is_same_v<T, Half> ? 0x7c00 : 0x7f80;
    MG_CALL_VECTOR_ISA(grad(reinterpret_cast<const uint16_t*>(y), inf,
                            reinterpret_cast<const uint16_t*>(dy),
                            reinterpret_cast<uint16_t*>(dm), n));
  }
}

// BatchNormalization's kernel with z added and the ReLU taken on the fp32
// values of y before they are stored (one rounding); backward masks dy with
// y > 0 and runs BatchNormalization's backward on the masked grad. With x
// held channel-blocked, z, y, dy and dz are read and written in its layout
// and the mask is taken inside the normalization's two passes, dz written
// by the first.
template <class T>
class FusedBatchNormalizationCpu
    : public BatchNormalizationKernel<T, FusedBatchNormalization> {
  using Base = BatchNormalizationKernel<T, FusedBatchNormalization>;

 public:
  using Base::Base;

 protected:
  bool ends_in_relu() const override { return true; }

  void backward_full(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const bool to_z = in.size() == 6 && propagate_down[5];
    const bool to_bn =
        propagate_down[0] || propagate_down[1] || propagate_down[2];
    if (!to_z && !to_bn) return;
    const Variables bn_in(in.begin(), in.begin() + 5);
    const std::vector<bool> bn_down(propagate_down.begin(),
                                    propagate_down.begin() + 5);
    const std::vector<bool> bn_accum(accum.begin(), accum.begin() + 5);
    // z may be x itself (one grad array): the engine then asks z's grad to
    // be added and x's to be written, in input order, so dz written first
    // would be overwritten. The masked grad is added to dx last instead.
    const bool z_is_x =
        to_z && &in[5]->grad()->array() == &in[0]->grad()->array();
    const Layout held = z_is_x ? Layout{} : this->held_layout(in[0]);
    if (!held.plain()) {
      // Held channel-blocked: the mask taken as the loops read dy, dz
      // written in the pass that sums (no masked copy of dy).
      const T* y = out[0]->data()->template get<const T>(held);
      T* dz = to_z ? in[5]->grad()->template cast<T>(!accum[5], held) : nullptr;
      Base::backward_masked(bn_in, out, bn_down, bn_accum,
                            bn_blocked::ReluMask{y, dz, to_z && accum[5]});
      return;
    }
    // The ReLU's grad, exact in T (dy or 0), and z's, in one threaded pass.
    const int64_t n = out[0]->size();
    const T* y = input<T>(out[0]);
    const T* dy = output_grad<T>(out[0]);
    Variable masked(out[0]->shape());
    T* dm = masked.grad()->template cast<T>(true);
    T* dz = to_z && !z_is_x ? input_grad<T>(in[5], accum[5]) : nullptr;
    const bool add_z = to_z && accum[5];
    for_each_block(n, [&](int64_t begin, int64_t len) {
      relu_grad(y + begin, dy + begin, dm + begin, len);
      if (!dz) return;
      if (!add_z) {
        std::copy(dm + begin, dm + begin + len, dz + begin);
        return;
      }
      float buf[kBlock];
      store(load(dm + begin, buf, len), dz + begin, len, /*accum=*/true);
    });
    if (to_bn) Base::backward_full(bn_in, {&masked}, bn_down, bn_accum);
    if (!z_is_x) return;
    // dx (whatever layout normalization's backward left it in, read
    // plain) += the masked grad.
    T* dx = input_grad<T>(in[0], /*accum=*/true);
    for_each_block(n, [&](int64_t begin, int64_t len) {
      float buf[kBlock];
      store(load(dm + begin, buf, len), dx + begin, len, /*accum=*/true);
    });
  }
};

}  // namespace

void register_fused_batch_normalization(FunctionRegistry& r) {
  register_float_types<FusedBatchNormalizationCpu>(
      r, decl::FusedBatchNormalization, "cpu");
}

void register_batch_normalization(FunctionRegistry& r) {
  register_float_types<BatchNormalizationCpu>(r, decl::BatchNormalization,
                                              "cpu");
}

void register_sync_batch_normalization(FunctionRegistry& r) {
  register_float_types<SyncBatchNormalizationCpu>(
      r, decl::SyncBatchNormalization, "cpu");
}

}  // namespace mg::cpu
