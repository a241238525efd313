// The max pooling kernels of one map, per ISA: windows wholly inside the
// map, and the 2x2 stride-2 windows (LeNet's) on fp32 (AVX-512, AVX2,
// scalar) and on the bits of half and bfloat16 (AVX-512BW, AVX2); and of
// a group of channel-blocked maps (any windows; each vector ISA). Used by
// MaxPooling on the CPU (pooling.cpp); the rest of pooling lives there.
#include <mixgraph/functions/cpu/max_pooling_kernels.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own
// _mm512_undefined_* helpers (GCC bug 105593; the sanitizer build's -O1
// shows the plain one); the warning is not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>

namespace mg::cpu::pooling {

namespace {

// Whether v replaces m as a window's maximum: larger, or the first nan.
// Bitwise, not short-circuit: no branches to mispredict on random data.
inline bool takes(float v, float m) { return (v > m) | ((v != v) & (m == m)); }

}  // namespace

void max_forward_inside(const float* x, float* y, const Dims3& d) {
  const int64_t h = d.in[1], w = d.in[2];
  for (int64_t o0 = 0; o0 < d.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
      float* yr = y + (o0 * d.out[1] + o1) * d.out[2];
      const float* xr = x + (o0 * d.s[0] * h + o1 * d.s[1]) * w;
      for (int64_t o2 = 0; o2 < d.out[2]; ++o2) {
        const float* win = xr + o2 * d.s[2];
        float m = win[0];
        for (int64_t i0 = 0; i0 < d.k[0]; ++i0) {
          for (int64_t i1 = 0; i1 < d.k[1]; ++i1) {
            for (int64_t i2 = 0; i2 < d.k[2]; ++i2) {
              const float v = win[(i0 * h + i1) * w + i2];
              m = takes(v, m) ? v : m;
            }
          }
        }
        yr[o2] = m;
      }
    }
  }
}

void max_backward_inside(const float* x, const float* dy, float* dx,
                         const Dims3& d) {
  const int64_t h = d.in[1], w = d.in[2];
  for (int64_t o0 = 0; o0 < d.out[0]; ++o0) {
    for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
      const float* dyr = dy + (o0 * d.out[1] + o1) * d.out[2];
      const int64_t row = (o0 * d.s[0] * h + o1 * d.s[1]) * w;
      for (int64_t o2 = 0; o2 < d.out[2]; ++o2) {
        const int64_t first = row + o2 * d.s[2];
        int64_t best = first;
        float m = x[first];
        for (int64_t i0 = 0; i0 < d.k[0]; ++i0) {
          for (int64_t i1 = 0; i1 < d.k[1]; ++i1) {
            for (int64_t i2 = 0; i2 < d.k[2]; ++i2) {
              const int64_t i = first + (i0 * h + i1) * w + i2;
              const bool t = takes(x[i], m);
              m = t ? x[i] : m;
              best = t ? i : best;
            }
          }
        }
        dx[best] += dyr[o2];
      }
    }
  }
}

namespace {

// The 2x2, stride 2 case (LeNet's) of the two above, a row of windows at a
// time: the windows tile rows 2 o1 and 2 o1 + 1 of a 2-D map.
void max_forward_2x2_scalar(const float* x, float* y, const Dims3& d) {
  const int64_t w = d.in[2], ow = d.out[2];
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const float* r0 = x + 2 * o1 * w;
    const float* r1 = r0 + w;
    float* yr = y + o1 * ow;
    for (int64_t j = 0; j < ow; ++j) {
      float m = r0[2 * j];
      const float b = r0[2 * j + 1], c = r1[2 * j], e = r1[2 * j + 1];
      m = takes(b, m) ? b : m;
      m = takes(c, m) ? c : m;
      m = takes(e, m) ? e : m;
      yr[j] = m;
    }
  }
}

void max_backward_2x2_scalar(const float* x, const float* dy, float* dx,
                             const Dims3& d, bool add) {
  const int64_t w = d.in[2], ow = d.out[2];
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const float* r0 = x + 2 * o1 * w;
    const float* r1 = r0 + w;
    float* g0 = dx + 2 * o1 * w;
    float* g1 = g0 + w;
    const float* dyr = dy + o1 * ow;
    for (int64_t j = 0; j < ow; ++j) {
      const float a = r0[2 * j], b = r0[2 * j + 1];
      const float c = r1[2 * j], e = r1[2 * j + 1];
      // Which of the four wins (0 to 3, the first maximum, nan first).
      float m = a;
      int k = 0;
      bool t = takes(b, m);
      m = t ? b : m, k = t ? 1 : k;
      t = takes(c, m);
      m = t ? c : m, k = t ? 2 : k;
      t = takes(e, m);
      k = t ? 3 : k;
      const float g = dyr[j];
      const auto put = [add](float& to, float v) { to = add ? to + v : v; };
      put(g0[2 * j], k == 0 ? g : 0.0f);
      put(g0[2 * j + 1], k == 1 ? g : 0.0f);
      put(g1[2 * j], k == 2 ? g : 0.0f);
      put(g1[2 * j + 1], k == 3 ? g : 0.0f);
    }
  }
}

// The same sixteen windows at a time with AVX-512: two rows of 32 inputs
// split into their even and odd columns, the four candidates compared with
// the rule of `takes`, and (backward) the grad put back where each winner
// came from. A row's last windows go through masked loads and stores, so
// short rows (LeNet's 12 and 4 windows) need no scalar tail.
__attribute__((target("avx512f"))) inline __mmask16 takes16(__m512 v,
                                                            __m512 m) {
  const __mmask16 gt = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ);
  const __mmask16 nan_v = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __mmask16 num_m = _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q);
  return gt | (nan_v & num_m);
}

// The first n lanes (none for n <= 0, all for n >= 16).
inline __mmask16 lanes(int64_t n) {
  if (n <= 0) return 0;
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
}

// p[i] += v[i] (add), else p[i] = v[i], for the lanes in k.
__attribute__((target("avx512f"))) inline void put16(float* p, __mmask16 k,
                                                     __m512 v, bool add) {
  if (add) v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, p), v);
  _mm512_mask_storeu_ps(p, k, v);
}

__attribute__((target("avx512f"))) void max_2x2_avx512(const float* x,
                                                       const float* dy,
                                                       float* y, float* dx,
                                                       const Dims3& d,
                                                       bool add) {
  const int64_t w = d.in[2], ow = d.out[2];
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                        10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13,
                                       11, 9, 7, 5, 3, 1);
  const __m512i lo =
      _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
                                      26, 10, 25, 9, 24, 8);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const float* r0 = x + 2 * o1 * w;
    const float* r1 = r0 + w;
    for (int64_t j = 0; j < ow; j += 16) {
      const int64_t n = std::min<int64_t>(16, ow - j);
      const __mmask16 mo = lanes(n), m0 = lanes(2 * n), m1 = lanes(2 * n - 16);
      const __m512 p0 = _mm512_maskz_loadu_ps(m0, r0 + 2 * j);
      const __m512 p1 = _mm512_maskz_loadu_ps(m1, r0 + 2 * j + 16);
      const __m512 q0 = _mm512_maskz_loadu_ps(m0, r1 + 2 * j);
      const __m512 q1 = _mm512_maskz_loadu_ps(m1, r1 + 2 * j + 16);
      const __m512 a = _mm512_permutex2var_ps(p0, even, p1);
      const __m512 b = _mm512_permutex2var_ps(p0, odd, p1);
      const __m512 c = _mm512_permutex2var_ps(q0, even, q1);
      const __m512 e = _mm512_permutex2var_ps(q0, odd, q1);
      const __mmask16 tb = takes16(b, a);
      __m512 m = _mm512_mask_mov_ps(a, tb, b);
      const __mmask16 tc = takes16(c, m);
      m = _mm512_mask_mov_ps(m, tc, c);
      const __mmask16 te = takes16(e, m);
      if (y) {
        _mm512_mask_storeu_ps(y + o1 * ow + j, mo,
                              _mm512_mask_mov_ps(m, te, e));
        continue;
      }
      // The winner: e if te, else c if tc, else b if tb, else a.
      const __mmask16 we = te, wc = tc & ~te, wb = tb & ~tc & ~te;
      const __mmask16 wa = ~(tb | tc | te);
      const __m512 g = _mm512_maskz_loadu_ps(mo, dy + o1 * ow + j);
      const __m512 ga = _mm512_mask_mov_ps(zero, wa, g);
      const __m512 gb = _mm512_mask_mov_ps(zero, wb, g);
      const __m512 gc = _mm512_mask_mov_ps(zero, wc, g);
      const __m512 ge = _mm512_mask_mov_ps(zero, we, g);
      float* g0 = dx + 2 * o1 * w + 2 * j;
      float* g1 = g0 + w;
      put16(g0, m0, _mm512_permutex2var_ps(ga, lo, gb), add);
      put16(g0 + 16, m1, _mm512_permutex2var_ps(ga, hi, gb), add);
      put16(g1, m0, _mm512_permutex2var_ps(gc, lo, ge), add);
      put16(g1 + 16, m1, _mm512_permutex2var_ps(gc, hi, ge), add);
    }
  }
}

// The same eight windows at a time with AVX2 (CPUs without AVX-512): the
// even and odd columns by shuffles within lanes and a cross-lane permute,
// the rule of `takes` by compares and blends, a row's last windows through
// masked loads and stores.
__attribute__((target("avx2"))) inline __m256 takes8(__m256 v, __m256 m) {
  const __m256 gt = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
  const __m256 nan_v = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256 num_m = _mm256_cmp_ps(m, m, _CMP_ORD_Q);
  return _mm256_or_ps(gt, _mm256_and_ps(nan_v, num_m));
}

// All ones in the first n lanes (none for n <= 0, all for n >= 8).
__attribute__((target("avx2"))) inline __m256i lanes8(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int k = static_cast<int>(std::clamp<int64_t>(n, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), index);
}

// p[i] += v[i] (add), else p[i] = v[i], for the lanes in k.
__attribute__((target("avx2"))) inline void put8(float* p, __m256i k, __m256 v,
                                                 bool add) {
  if (add) v = _mm256_add_ps(_mm256_maskload_ps(p, k), v);
  _mm256_maskstore_ps(p, k, v);
}

// Even (odd) columns of 16 inputs: shuffles pick them per 128-bit lane,
// the permute puts the lanes' halves in order.
__attribute__((target("avx2"))) inline __m256 even8(__m256 p0, __m256 p1) {
  const __m256 s = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xd8));
}
__attribute__((target("avx2"))) inline __m256 odd8(__m256 p0, __m256 p1) {
  const __m256 s = _mm256_shuffle_ps(p0, p1, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xd8));
}

// row[0..15] += (or =) (u0 v0 u1 v1 ... u7 v7) for the lanes of m0 and m1.
__attribute__((target("avx2"))) inline void put_interleaved8(
    float* row, __m256i m0, __m256i m1, __m256 u, __m256 v, bool add) {
  const __m256 lo = _mm256_unpacklo_ps(u, v), hi = _mm256_unpackhi_ps(u, v);
  put8(row, m0, _mm256_permute2f128_ps(lo, hi, 0x20), add);
  put8(row + 8, m1, _mm256_permute2f128_ps(lo, hi, 0x31), add);
}

__attribute__((target("avx2"))) void max_2x2_avx2(const float* x,
                                                  const float* dy, float* y,
                                                  float* dx, const Dims3& d,
                                                  bool add) {
  const int64_t w = d.in[2], ow = d.out[2];
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const float* r0 = x + 2 * o1 * w;
    const float* r1 = r0 + w;
    for (int64_t j = 0; j < ow; j += 8) {
      const int64_t n = std::min<int64_t>(8, ow - j);
      const __m256i mo = lanes8(n), m0 = lanes8(2 * n), m1 = lanes8(2 * n - 8);
      const __m256 p0 = _mm256_maskload_ps(r0 + 2 * j, m0);
      const __m256 p1 = _mm256_maskload_ps(r0 + 2 * j + 8, m1);
      const __m256 q0 = _mm256_maskload_ps(r1 + 2 * j, m0);
      const __m256 q1 = _mm256_maskload_ps(r1 + 2 * j + 8, m1);
      const __m256 a = even8(p0, p1), b = odd8(p0, p1);
      const __m256 c = even8(q0, q1), e = odd8(q0, q1);
      const __m256 tb = takes8(b, a);
      __m256 m = _mm256_blendv_ps(a, b, tb);
      const __m256 tc = takes8(c, m);
      m = _mm256_blendv_ps(m, c, tc);
      const __m256 te = takes8(e, m);
      if (y) {
        _mm256_maskstore_ps(y + o1 * ow + j, mo, _mm256_blendv_ps(m, e, te));
        continue;
      }
      // The winner: e if te, else c if tc, else b if tb, else a.
      const __m256 wc = _mm256_andnot_ps(te, tc);
      const __m256 wb = _mm256_andnot_ps(_mm256_or_ps(tc, te), tb);
      const __m256 wa = _mm256_andnot_ps(_mm256_or_ps(tb, _mm256_or_ps(tc, te)),
                                         _mm256_castsi256_ps(mo));
      const __m256 g = _mm256_maskload_ps(dy + o1 * ow + j, mo);
      const __m256 ga = _mm256_and_ps(wa, g), gb = _mm256_and_ps(wb, g);
      const __m256 gc = _mm256_and_ps(wc, g), ge = _mm256_and_ps(te, g);
      // Interleaved back: (ga0 gb0 ga1 gb1 ...) on row 0, (gc, ge) row 1.
      float* g0 = dx + 2 * o1 * w + 2 * j;
      put_interleaved8(g0, m0, m1, ga, gb, add);
      put_interleaved8(g0 + w, m0, m1, gc, ge, add);
    }
  }
}

}  // namespace

void max_forward_2x2(const float* x, float* y, const Dims3& d) {
  if (cpu_features().avx512f) {
    return max_2x2_avx512(x, nullptr, y, nullptr, d, false);
  }
  if (cpu_features().avx2)
    return max_2x2_avx2(x, nullptr, y, nullptr, d, false);
  max_forward_2x2_scalar(x, y, d);
}

void max_backward_2x2(const float* x, const float* dy, float* dx,
                      const Dims3& d, bool add) {
  if (cpu_features().avx512f) return max_2x2_avx512(x, dy, nullptr, dx, d, add);
  if (cpu_features().avx2) return max_2x2_avx2(x, dy, nullptr, dx, d, add);
  max_backward_2x2_scalar(x, dy, dx, d, add);
}

namespace {

// ---- 2x2 max pooling on the bits of half and bfloat16 (AVX-512BW, AVX2) ----
//
// A 16-bit float orders as its value once its bits are mapped to a key:
// 0x8000 plus the magnitude for a positive number, 0x8000 less it for a
// negative one, so that -0 and +0 tie as they compare in fp32; nans
// (magnitude above inf's bits) follow the rule of `takes`. A maximum is
// exact in any type, so this gives the fp32 path's values and grads bit
// for bit without converting: 32 windows a vector, half the bytes.

// A window's candidate: its bits, key and whether it is a nan.
struct Cand16 {
  __m512i bits, key;
  __mmask32 nan;
};

__attribute__((target("avx512f,avx512bw"))) inline Cand16 cand16(__m512i v,
                                                                 __m512i inf) {
  const __m512i base = _mm512_set1_epi16(static_cast<int16_t>(0x8000));
  const __m512i mag = _mm512_andnot_si512(base, v);
  const __mmask32 neg = _mm512_test_epi16_mask(v, base);
  const __m512i key =
      _mm512_mask_sub_epi16(_mm512_add_epi16(base, mag), neg, base, mag);
  return {v, key, _mm512_cmpgt_epu16_mask(mag, inf)};
}

// m becomes v in the lanes where v takes over (the rule of `takes`: larger,
// or the first nan); returns those lanes.
__attribute__((target("avx512f,avx512bw"))) inline __mmask32 take16(
    Cand16& m, const Cand16& v) {
  const __mmask32 t = static_cast<__mmask32>(
      ~m.nan & (v.nan | _mm512_cmpgt_epu16_mask(v.key, m.key)));
  m.bits = _mm512_mask_mov_epi16(m.bits, t, v.bits);
  m.key = _mm512_mask_mov_epi16(m.key, t, v.key);
  m.nan = static_cast<__mmask32>(m.nan | (t & v.nan));  // t: m was no nan
  return t;
}

// The first n lanes of 32 (none for n <= 0, all for n >= 32).
inline __mmask32 lanes32(int64_t n) {
  if (n <= 0) return 0;
  return n >= 32 ? ~__mmask32(0) : __mmask32((1u << n) - 1);
}

// The word shuffles: a row's 64 inputs (two vectors) into their even and
// odd columns, and two vectors of 32 back into one row of 64 (lo: the
// first 32 words, hi: the next).
struct Shuffles16 {
  alignas(64) int16_t even[32], odd[32], lo[32], hi[32];
  Shuffles16() {
    for (int k = 0; k < 32; ++k) {
      even[k] = static_cast<int16_t>(2 * k);
      odd[k] = static_cast<int16_t>(2 * k + 1);
      // Word k of the row: a's k/2 for even k, b's (index 32 + k/2) odd.
      lo[k] = static_cast<int16_t>((k % 2) * 32 + k / 2);
      hi[k] = static_cast<int16_t>((k % 2) * 32 + 16 + k / 2);
    }
  }
};
const Shuffles16 kShuffles16;

// Forward (y set) or backward (dy, dx set: dy written where each window's
// maximum came from, zeros at the window's other three) of one map.
__attribute__((target("avx512f,avx512bw"))) void max_2x2_bits_avx512(
    const Bits16* x, const Bits16* dy, Bits16* y, Bits16* dx, const Dims3& d,
    uint16_t inf_bits) {
  const int64_t w = d.in[2], ow = d.out[2];
  const __m512i inf = _mm512_set1_epi16(static_cast<int16_t>(inf_bits));
  const __m512i even = _mm512_load_si512(kShuffles16.even);
  const __m512i odd = _mm512_load_si512(kShuffles16.odd);
  const __m512i lo = _mm512_load_si512(kShuffles16.lo);
  const __m512i hi = _mm512_load_si512(kShuffles16.hi);
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const Bits16* r0 = x + 2 * o1 * w;
    const Bits16* r1 = r0 + w;
    for (int64_t j = 0; j < ow; j += 32) {
      const int64_t n = std::min<int64_t>(32, ow - j);
      const __mmask32 mo = lanes32(n), m0 = lanes32(2 * n),
                      m1 = lanes32(2 * n - 32);
      const __m512i p0 = _mm512_maskz_loadu_epi16(m0, r0 + 2 * j);
      const __m512i p1 = _mm512_maskz_loadu_epi16(m1, r0 + 2 * j + 32);
      const __m512i q0 = _mm512_maskz_loadu_epi16(m0, r1 + 2 * j);
      const __m512i q1 = _mm512_maskz_loadu_epi16(m1, r1 + 2 * j + 32);
      Cand16 m = cand16(_mm512_permutex2var_epi16(p0, even, p1), inf);
      const __mmask32 tb =
          take16(m, cand16(_mm512_permutex2var_epi16(p0, odd, p1), inf));
      const __mmask32 tc =
          take16(m, cand16(_mm512_permutex2var_epi16(q0, even, q1), inf));
      const __mmask32 te =
          take16(m, cand16(_mm512_permutex2var_epi16(q0, odd, q1), inf));
      if (y) {
        _mm512_mask_storeu_epi16(y + o1 * ow + j, mo, m.bits);
        continue;
      }
      // The winner: e if te, else c if tc, else b if tb, else a.
      const __mmask32 wc = tc & ~te, wb = tb & ~tc & ~te;
      const __mmask32 wa = ~(tb | tc | te);
      const __m512i g = _mm512_maskz_loadu_epi16(mo, dy + o1 * ow + j);
      const __m512i ga = _mm512_maskz_mov_epi16(wa, g);
      const __m512i gb = _mm512_maskz_mov_epi16(wb, g);
      const __m512i gc = _mm512_maskz_mov_epi16(wc, g);
      const __m512i ge = _mm512_maskz_mov_epi16(te, g);
      Bits16* g0 = dx + 2 * o1 * w + 2 * j;
      Bits16* g1 = g0 + w;
      _mm512_mask_storeu_epi16(g0, m0, _mm512_permutex2var_epi16(ga, lo, gb));
      _mm512_mask_storeu_epi16(g0 + 32, m1,
                               _mm512_permutex2var_epi16(ga, hi, gb));
      _mm512_mask_storeu_epi16(g1, m0, _mm512_permutex2var_epi16(gc, lo, ge));
      _mm512_mask_storeu_epi16(g1 + 32, m1,
                               _mm512_permutex2var_epi16(gc, hi, ge));
    }
  }
}

// The same with AVX2, 16 windows a vector: keys as two's complement
// integers (the magnitude, negated for a negative number: -0 and +0 tie)
// for the signed 16-bit compare AVX2 has; a row's last windows through a
// zero-padded copy (AVX2 has no 16-bit masked loads).
struct Cand16x16 {
  __m256i bits, key, nan;  // nan: all ones in a nan's lane
};

__attribute__((target("avx2"))) inline Cand16x16 cand16_avx2(__m256i v,
                                                             __m256i inf) {
  const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi16(0x7fff));
  const __m256i neg = _mm256_srai_epi16(v, 15);
  const __m256i key = _mm256_sub_epi16(_mm256_xor_si256(mag, neg), neg);
  return {v, key, _mm256_cmpgt_epi16(mag, inf)};
}

__attribute__((target("avx2"))) inline __m256i take16_avx2(Cand16x16& m,
                                                           const Cand16x16& v) {
  const __m256i t = _mm256_andnot_si256(
      m.nan, _mm256_or_si256(v.nan, _mm256_cmpgt_epi16(v.key, m.key)));
  m.bits = _mm256_blendv_epi8(m.bits, v.bits, t);
  m.key = _mm256_blendv_epi8(m.key, v.key, t);
  m.nan = _mm256_or_si256(m.nan, _mm256_and_si256(t, v.nan));
  return t;
}

// 16 words with each 128-bit lane's even words moved to its low half, then
// the 64-bit quarters put in order: (even 0-7, odd 0-7).
__attribute__((target("avx2"))) inline __m256i even_then_odd_avx2(
    const Bits16* q) {
  const __m256i shuf =
      _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0,
                       1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, shuf), 0xd8);
}

// 32 words into their 16 even and 16 odd words.
__attribute__((target("avx2"))) inline void split16_avx2(const Bits16* p,
                                                         __m256i& even,
                                                         __m256i& odd) {
  const __m256i a = even_then_odd_avx2(p), b = even_then_odd_avx2(p + 16);
  even = _mm256_permute2x128_si256(a, b, 0x20);
  odd = _mm256_permute2x128_si256(a, b, 0x31);
}

// row[0..31] = (u0 v0 u1 v1 ... u15 v15).
__attribute__((target("avx2"))) inline void interleave16_avx2(Bits16* row,
                                                              __m256i u,
                                                              __m256i v) {
  const __m256i l = _mm256_unpacklo_epi16(u, v),
                h = _mm256_unpackhi_epi16(u, v);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row),
                      _mm256_permute2x128_si256(l, h, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 16),
                      _mm256_permute2x128_si256(l, h, 0x31));
}

// 16 windows over rows r0 and r1 (32 words each): forward (y) or backward
// (dy, and g0, g1 the two rows of dx).
__attribute__((target("avx2"))) void max_2x2_block16_avx2(
    const Bits16* r0, const Bits16* r1, const Bits16* dy, Bits16* y, Bits16* g0,
    Bits16* g1, __m256i inf) {
  __m256i a, b, c, e;
  split16_avx2(r0, a, b);
  split16_avx2(r1, c, e);
  Cand16x16 m = cand16_avx2(a, inf);
  const __m256i tb = take16_avx2(m, cand16_avx2(b, inf));
  const __m256i tc = take16_avx2(m, cand16_avx2(c, inf));
  const __m256i te = take16_avx2(m, cand16_avx2(e, inf));
  if (y) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), m.bits);
    return;
  }
  // The winner: e if te, else c if tc, else b if tb, else a.
  const __m256i wc = _mm256_andnot_si256(te, tc);
  const __m256i wb = _mm256_andnot_si256(_mm256_or_si256(tc, te), tb);
  const __m256i wa = _mm256_andnot_si256(
      _mm256_or_si256(tb, _mm256_or_si256(tc, te)), _mm256_set1_epi16(-1));
  const __m256i g = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dy));
  interleave16_avx2(g0, _mm256_and_si256(wa, g), _mm256_and_si256(wb, g));
  interleave16_avx2(g1, _mm256_and_si256(wc, g), _mm256_and_si256(te, g));
}

__attribute__((target("avx2"))) void max_2x2_bits_avx2(const Bits16* x,
                                                       const Bits16* dy,
                                                       Bits16* y, Bits16* dx,
                                                       const Dims3& d,
                                                       uint16_t inf_bits) {
  const int64_t w = d.in[2], ow = d.out[2];
  const __m256i inf = _mm256_set1_epi16(static_cast<int16_t>(inf_bits));
  // The last windows of a row may run as a whole block over the rows after
  // it (only this map's: its readers and writers are this thread) where
  // every word it writes past the row is written again later: y's next
  // rows always are; dx's where the windows cover each row whole and the
  // row is narrower than a block (g0's words past the row land in g1's
  // first ones, which the same block then writes; with blocks before it,
  // g1's would already be written). Copies through zero-padded buffers
  // for each row made half's 2x2 pooling 2.5-4x float's on maps of 28 and
  // 14 columns held to AVX2.
  const Bits16* x_end = x + d.in_size;
  const Bits16* dy_end = dy ? dy + d.out_size : nullptr;
  const Bits16* dx_end = dx && w == 2 * ow ? dx + 2 * d.out[1] * w : nullptr;
  for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {
    const Bits16* r0 = x + 2 * o1 * w;
    const Bits16* r1 = r0 + w;
    const Bits16* dyr = dy ? dy + o1 * ow : nullptr;
    Bits16* yr = y ? y + o1 * ow : nullptr;
    Bits16* g0 = dx ? dx + 2 * o1 * w : nullptr;
    Bits16* g1 = dx ? g0 + w : nullptr;
    int64_t j = 0;
    for (; j + 16 <= ow; j += 16) {
      max_2x2_block16_avx2(r0 + 2 * j, r1 + 2 * j, dy ? dyr + j : nullptr,
                           y ? yr + j : nullptr, dx ? g0 + 2 * j : nullptr,
                           dx ? g1 + 2 * j : nullptr, inf);
    }
    if (j == ow) continue;
    const bool run_on =
        r1 + 2 * j + 32 <= x_end &&
        (y ? yr + j + 16 <= y + d.out_size
           : dx_end && j == 0 && dyr + 16 <= dy_end && g1 + 32 <= dx_end);
    if (run_on) {
      max_2x2_block16_avx2(r0 + 2 * j, r1 + 2 * j, dy ? dyr + j : nullptr,
                           y ? yr + j : nullptr, dx ? g0 + 2 * j : nullptr,
                           dx ? g1 + 2 * j : nullptr, inf);
      continue;
    }
    // The last n windows, through zero-padded copies.
    const int64_t n = ow - j;
    uint16_t b0[32] = {}, b1[32] = {}, bdy[16] = {}, by[16], bg0[32], bg1[32];
    std::memcpy(b0, r0 + 2 * j, 2 * n * sizeof(uint16_t));
    std::memcpy(b1, r1 + 2 * j, 2 * n * sizeof(uint16_t));
    if (dy) std::memcpy(bdy, dyr + j, n * sizeof(uint16_t));
    max_2x2_block16_avx2(b0, b1, bdy, y ? by : nullptr, bg0, bg1, inf);
    if (y) {
      std::memcpy(yr + j, by, n * sizeof(uint16_t));
    } else {
      std::memcpy(g0 + 2 * j, bg0, 2 * n * sizeof(uint16_t));
      std::memcpy(g1 + 2 * j, bg1, 2 * n * sizeof(uint16_t));
    }
  }
}

}  // namespace

namespace blocked_loops {
// The windows of a group of kB interleaved maps, in each vector ISA: a
// window's elements are vectors of kB channels (GCC's vector types: the
// lane loops written out were not vectorized), s elements apart (kB, or a
// block of a multiple of kB channels: a position's vectors one after the
// other, while its window's elements are in cache), compared by the rule
// of `takes` lane by lane. The winners' grads go back one lane at a time
// (each lane's own element: no two lanes meet).
// (Spelled per width: GCC 12 drops vector_size from a dependent alias
// template, which left one lane.)
template <int kB>
struct Lanes;
template <>
struct Lanes<16> {
  typedef float Floats __attribute__((vector_size(64)));
  typedef int32_t Ints __attribute__((vector_size(64)));
};
template <>
struct Lanes<8> {
  typedef float Floats __attribute__((vector_size(32)));
  typedef int32_t Ints __attribute__((vector_size(32)));
};
// The maps are of E: float, or half and bfloat16 converted in registers
// (kB lanes in one conversion: 16 on AVX-512, 8 on AVX2 with F16C; the
// caller picks only those). A window's maximum is one of its elements and
// a grad written is dy's own value, so neither rounds: the same bits as
// pooling the maps converted to fp32 and converting back. Grads added to
// a 16-bit dx (`write` false) need windows that tile the map: each
// element then takes one sum at most, rounded once, as there.
// The AVX2 loops are built with F16C, which every AVX2 CPU has.
// LeNet's and the U-Net's windows, 2 x 2 with stride 2 and none past the
// map, take a loop of their own: the four elements at fixed offsets, with
// no window bounds to work out per output. The same comparisons in the
// same order as the general loop's (the same bits); a window's grad is
// added (`write` false) at its maximum only, as there. LeNet's pooling in
// float took 4.1 ms of a 28 ms step through the general loop (Ice Lake).
inline bool is_2x2_inside(const Dims3& d) {
  return is_2x2_stride_2(d) && d.k[0] == 1 && d.out[0] == 1 && d.p[0] == 0 &&
         d.p[1] == 0 && d.p[2] == 0 && 2 * d.out[1] <= d.in[1] &&
         2 * d.out[2] <= d.in[2];
}
// clang-format off
#define MG_BLOCKED_MAX(NS, TARGET)                                          \
  namespace NS {                                                            \
  template <int kB, class E>                                                \
  TARGET inline void get(const E* p, typename Lanes<kB>::Floats& v) {       \
    if constexpr (std::is_same_v<E, float>) {                               \
      std::memcpy(&v, p, sizeof v);                                         \
    } else if constexpr (kB == 16) {                                        \
      const __m512 w = avx512::load16(p);                                   \
      std::memcpy(&v, &w, sizeof v);                                        \
    } else {                                                                \
      const __m256 w = avx2::load8(p);                                      \
      std::memcpy(&v, &w, sizeof v);                                        \
    }                                                                       \
  }                                                                         \
  template <int kB, class E>                                                \
  TARGET inline void put(E* p, const typename Lanes<kB>::Floats& v) {       \
    if constexpr (std::is_same_v<E, float>) {                               \
      std::memcpy(p, &v, sizeof v);                                         \
    } else if constexpr (kB == 16) {                                        \
      __m512 w;                                                             \
      std::memcpy(&w, &v, sizeof v);                                        \
      avx512::store16(p, w);                                                \
    } else {                                                                \
      __m256 w;                                                             \
      std::memcpy(&w, &v, sizeof v);                                        \
      avx2::store8(p, w);                                                   \
    }                                                                       \
  }                                                                         \
  /* dx at p: dy (g) where this element won its window (won), else 0;  */   \
  /* or, with `write` false, g added to it where it won.                */  \
  template <int kB, class E>                                                \
  TARGET inline void grad_at(E* p, const typename Lanes<kB>::Ints& won,     \
                             const typename Lanes<kB>::Floats& g,           \
                             bool write) {                                  \
    typename Lanes<kB>::Floats v{};                                         \
    if (write) {                                                            \
      v = won ? g : v;                                                      \
    } else {                                                                \
      get<kB>(p, v);                                                        \
      v = won ? v + g : v;                                                  \
    }                                                                       \
    put<kB>(p, v);                                                          \
  }                                                                         \
  template <int kB, class E>                                                \
  TARGET void pool_2x2(const E* x, const E* dy, E* y, E* dx, const Dims3& d, \
                       bool write, int64_t s) {                             \
    using F = typename Lanes<kB>::Floats;                                   \
    using I = typename Lanes<kB>::Ints;                                     \
    const int64_t w = d.in[2];                                              \
    for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {                             \
      for (int64_t o2 = 0; o2 < d.out[2]; ++o2) {                           \
        const int64_t o = o1 * d.out[2] + o2, i0 = 2 * (o1 * w + o2);       \
        const int64_t at_e[4] = {i0, i0 + 1, i0 + w, i0 + w + 1};           \
        for (int64_t c = 0; c < s; c += kB) {                               \
          F m;                                                              \
          get<kB>(x + i0 * s + c, m);                                       \
          I at{};                                                           \
          _Pragma("GCC unroll 3") for (int e = 1; e < 4; ++e) {             \
            F v;                                                            \
            get<kB>(x + at_e[e] * s + c, v);                                \
            const I t = (v > m) | ((v != v) & (m == m));                    \
            m = t ? v : m;                                                  \
            at = t ? I{} + e : at;                                          \
          }                                                                 \
          if (y) {                                                          \
            put<kB>(y + o * s + c, m);                                      \
            continue;                                                       \
          }                                                                 \
          F g;                                                              \
          get<kB>(dy + o * s + c, g);                                       \
          _Pragma("GCC unroll 4") for (int e = 0; e < 4; ++e) {             \
            grad_at<kB>(dx + at_e[e] * s + c, at == e, g, write);           \
          }                                                                 \
        }                                                                   \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  template <int kB, class E>                                                \
  TARGET void pool(const E* x, const E* dy, E* y, E* dx, const Dims3& d,    \
                   bool write, int64_t s) {                                 \
    using F = typename Lanes<kB>::Floats;                                   \
    using I = typename Lanes<kB>::Ints;                                     \
    if (is_2x2_inside(d)) return pool_2x2<kB>(x, dy, y, dx, d, write, s);   \
    int64_t o = 0;                                                          \
    for (int64_t o0 = 0; o0 < d.out[0]; ++o0) {                             \
      const Range r0 = window(d, 0, o0);                                    \
      for (int64_t o1 = 0; o1 < d.out[1]; ++o1) {                           \
        const Range r1 = window(d, 1, o1);                                  \
        for (int64_t o2 = 0; o2 < d.out[2]; ++o2, ++o) {                    \
          const Range r2 = window(d, 2, o2);                                \
          for (int64_t c = 0; c < s; c += kB) {                             \
            F m{};                                                          \
            I at{};                                                         \
            bool empty = true;                                              \
            for (int64_t i0 = r0.begin; i0 < r0.end; ++i0) {                \
              for (int64_t i1 = r1.begin; i1 < r1.end; ++i1) {              \
                for (int64_t i2 = r2.begin; i2 < r2.end; ++i2) {            \
                  const int64_t i = (i0 * d.in[1] + i1) * d.in[2] + i2;     \
                  F v;                                                      \
                  get<kB>(x + i * s + c, v);                                \
                  const I t =                                               \
                      empty ? ~I{} : (v > m) | ((v != v) & (m == m));       \
                  m = t ? v : m;                                            \
                  at = t ? I{} + static_cast<int32_t>(i) : at;              \
                  empty = false;                                            \
                }                                                           \
              }                                                             \
            }                                                               \
            if (y) {                                                        \
              if (empty) m = F{};                                           \
              put<kB>(y + o * s + c, m);                                    \
            } else if (write || !std::is_same_v<E, float>) {                \
              F g;                                                          \
              get<kB>(dy + o * s + c, g);                                   \
              for (int64_t i0 = r0.begin; i0 < r0.end; ++i0) {              \
                for (int64_t i1 = r1.begin; i1 < r1.end; ++i1) {            \
                  for (int64_t i2 = r2.begin; i2 < r2.end; ++i2) {          \
                    const int64_t i = (i0 * d.in[1] + i1) * d.in[2] + i2;   \
                    grad_at<kB>(dx + i * s + c,                             \
                                at == static_cast<int32_t>(i), g, write);   \
                  }                                                         \
                }                                                           \
              }                                                             \
            } else if constexpr (std::is_same_v<E, float>) {                \
              if (!empty) {                                                 \
                int32_t win[kB] = {};                                       \
                std::memcpy(win, &at, sizeof at);                           \
                for (int l = 0; l < kB; ++l) {                              \
                  dx[static_cast<int64_t>(win[l]) * s + c + l] +=           \
                      dy[o * s + c + l];                                    \
                }                                                           \
              }                                                             \
            }                                                               \
          }                                                                 \
        }                                                                   \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  }
MG_BLOCKED_MAX(isa_baseline, __attribute__((MG_NO_CONTRACT)))
MG_BLOCKED_MAX(isa_avx2, __attribute__((target("avx2,f16c"), MG_NO_CONTRACT)))
MG_BLOCKED_MAX(isa_avx512, __attribute__((target("avx512f"), MG_NO_CONTRACT)))
#undef MG_BLOCKED_MAX
// clang-format on

// The lanes of the loop that pools blocks of `block` channels: 16 where
// they divide it (float's on every vector ISA, 16-bit ones' on AVX-512),
// else 8 (16-bit: AVX2 with F16C); 0 where no loop does.
int64_t lanes_for(int64_t block, bool sixteen_bit) {
  const VectorIsa isa = vector_isa();
  if (block <= 0) return 0;
  if (block % 16 == 0 && (!sixteen_bit || isa == VectorIsa::avx512)) {
    return 16;
  }
  const bool eight =
      !sixteen_bit || (isa != VectorIsa::baseline && cpu_features().f16c);
  return block % 8 == 0 && eight ? 8 : 0;
}

// Float's maps on any vector ISA, half's and bfloat16's where
// blocks_16_loop(), their grads' windows tiling the map: blocks of 16 or 8
// channels, or of a multiple (bfloat16's on AMX are channels-last, a block
// of all the channels).
template <class E>
void pool(const E* x, const E* dy, E* y, E* dx, const Dims3& d, int64_t block,
          bool write) {
  constexpr bool kSixteen = !std::is_same_v<E, float>;
  const int64_t lanes = lanes_for(block, kSixteen);
  if (lanes == 0) {
    throw std::logic_error(
        std::string("[max pooling] no loop for ") +
        (kSixteen ? "16-bit " : "") + "blocks of " + std::to_string(block) +
        " channels on this CPU (a multiple of 8 or 16 has one)");
  }
  if (kSixteen && dx && !tiles(d)) {
    throw std::logic_error(
        "[max pooling] 16-bit grads of windows that do not tile the map");
  }
  if constexpr (kSixteen) {
    if (lanes == 16) return isa_avx512::pool<16>(x, dy, y, dx, d, write, block);
    return isa_avx2::pool<8>(x, dy, y, dx, d, write, block);
  } else {
    // Each MG_CALL_VECTOR_ISA returns, whichever ISA it picks.
    if (lanes == 16) {
      MG_CALL_VECTOR_ISA(pool<16>(x, dy, y, dx, d, write, block));
    }
    MG_CALL_VECTOR_ISA(pool<8>(x, dy, y, dx, d, write, block));
  }
}
}  // namespace blocked_loops

bool blocks_16_loop(int64_t block) {
  return blocked_loops::lanes_for(block, true) != 0;
}

template <class E>
void max_forward_blocked(const E* x, E* y, const Dims3& d, int64_t block) {
  blocked_loops::pool<E>(x, nullptr, y, nullptr, d, block, false);
}

template <class E>
void max_backward_blocked(const E* x, const E* dy, E* dx, const Dims3& d,
                          int64_t block, bool write) {
  blocked_loops::pool<E>(x, dy, nullptr, dx, d, block, write);
}

#define MG_BLOCKED_MAX_TYPE(E)                                             \
  template void max_forward_blocked(const E*, E*, const Dims3&, int64_t);  \
  template void max_backward_blocked(const E*, const E*, E*, const Dims3&, \
                                     int64_t, bool);
MG_BLOCKED_MAX_TYPE(float)
MG_BLOCKED_MAX_TYPE(Half)
MG_BLOCKED_MAX_TYPE(BFloat16)
#undef MG_BLOCKED_MAX_TYPE

void max_2x2_bits(const Bits16* x, const Bits16* dy, Bits16* y, Bits16* dx,
                  const Dims3& d, uint16_t inf_bits) {
  if (cpu_features().avx512bw) {
    return max_2x2_bits_avx512(x, dy, y, dx, d, inf_bits);
  }
  max_2x2_bits_avx2(x, dy, y, dx, d, inf_bits);
}

}  // namespace mg::cpu::pooling
