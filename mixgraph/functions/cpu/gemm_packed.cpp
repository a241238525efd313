#include <mixgraph/functions/cpu/gemm_packed.hpp>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/profile.hpp>

// The driver, the packing and the writing of C use AVX2 (8 wide, and so
// also on AVX-512 CPUs); only the register tile's loop is per ISA.
#define MG_TARGET_GEMM __attribute__((target("avx2,fma,f16c")))
#define MG_TARGET_GEMM512 __attribute__((target("avx512f,avx2,fma,f16c")))

namespace mg::cpu {
namespace {

// A register tile and its blocking: an MR x NR block of C lives in
// registers over KC steps of k. A's MR rows (MR x KC) stay in L1 while
// they meet each NR-column panel of B's KC x NC block, which streams from
// L2 (kStationaryA), A's block (MC x KC) in L2 beside it; or the other
// way round, an NR-column panel of B stays in L1 while it meets each MR
// rows of A's block. Both are packed in fp32, which is where fp16 and bf16
// are converted (a stored fp32 A is read in place). multiply<Panel>() computes
// one tile, its registers starting from C's fp32 sums of the blocks of k before
// (c0) and, before the last block, stored straight back to them: one pass over
// the sums a block, where going through a tile buffer took two (with pack_a's
// transposed A a panel at a time, half's products with k 1024 ran 2-10%
// faster, 2026-12-04); in the last block written to C itself (TileOut).
//
// Where a tile in C's last block of k goes, when not to fp32 sums: C
// itself (T), its rows ldc apart, each vector of sums plus a 16-bit
// accum's C as it was (c_in, unless null) plus the bias (unless null),
// rounded to T once, from the registers: no trip through a tile buffer
// (half's GPT products at k 256, 1.5-2% of their time). Where `watch` is
// not null (an fp32 C whose caller asked whether it is finite), each value
// written, times zero, is added to the vector of floats there: they stay
// zero while every value is finite and turn NaN at the first inf or NaN,
// one FMA a vector of C instead of a pass over C after the product.
template <class T>
struct TileOut {
  T* c;
  int64_t ldc;
  const T* c_in;
  const float* bias;
  float* watch;
};

// AVX2: BLIS's blocking for AMD Zen, 6 x 16 in 12 of the 16 ymm registers,
// a 16 KB panel of B held, at most 144 KB of A. On an Intel Xeon held to
// AVX2 the other order (Avx512Tile's) ran faster (oneDNN's fp32 speed over
// ours 0.81 -> 1.01 on the LSTM's 2048 x 2048 x 512 product, 2026-12-04),
// but the AVX2-only CPUs this tile is for are AMD's Zen 2 and 3, whose 512
// KB L2 would not hold that order's B block beside A's: unmeasured there.
struct Avx2Tile {
  static constexpr int64_t kMR = 6, kNR = 16, kKC = 256, kMC = 144, kNC = 2048;
  static constexpr bool kStationaryA = false;
  template <bool Panel, class T>
  static void multiply(int64_t kc, const float* a, int64_t lda, int64_t rows,
                       const float* b, const float* c0, int64_t ld0, float* c,
                       int64_t ldc, const TileOut<T>* out);
  template <class S>
  static void to_f32(const S* src, float* dst, int64_t count);
};

// AVX-512: BLIS's shape for Skylake-X, 12 x 32 in 24 of the 32 zmm
// registers (two FMAs a broadcast, 24 independent sums against the FMA's
// latency of 4 on two ports). The 12 rows of a stored A are 12 pointers,
// which fit in the general registers with the rest. A's 12 rows (12 KB)
// stay in L1 while B's 32 KB panels stream from a 512 KB block in L2 (2
// MB a core on Intel's Xeons, 1 MB on AMD Zen 4) beside at most 192 KB of
// A: one sequential stream where holding B's panel streamed 12 rows of A.
// On an Intel Xeon (2026-12-04; call against call, six runs) that raised
// our half product's speed over oneDNN's fp32 one from 0.75-0.94x to
// 0.91-1.07x on the LSTM's 2048 x 2048 x 512 product, 1.11-1.21x to
// 1.18-1.31x on ResNet-18's weight grad, and by 0.02 on average over the
// GPT's ten shapes (-0.04 to +0.15); on fp32 operands (one run, the
// attention's path) it moved -0.06 to +0.11. NC 512 was the best of 512,
// 1024 and 2048. Not measured on Zen 4, where products with a long k take
// the tile below.
struct Avx512Tile {
  static constexpr int64_t kMR = 12, kNR = 32, kKC = 256, kMC = 192, kNC = 512;
  static constexpr bool kStationaryA = true;
  template <bool Panel, class T>
  static void multiply(int64_t kc, const float* a, int64_t lda, int64_t rows,
                       const float* b, const float* c0, int64_t ld0, float* c,
                       int64_t ldc, const TileOut<T>* out);
  template <class S>
  static void to_f32(const S* src, float* dst, int64_t count);
};

// The same tile with KC 512, on AMD (Zen 4: one zmm FMA a cycle, 32 KB L1,
// 1 MB L2) for products large enough (long_k_pays): a 64 KB panel of B
// read from L2 still feeds the tile, and each pass over C that the longer
// KC saves (for a 16-bit C also over the fp32 sums past KC) is a pass over
// memory. Half's products with k 512-2048 went from 1.08-1.26x oneDNN's
// fp32 time to 0.98-1.18x (bench_gemm, RESULTS.md 2026-12-03). Not for
// every product: the packs double with KC, and a small model's step peaks
// on them (tutorial 02 in half, LeNet: 13.2 -> 13.9 MiB). Intel keeps 256.
// Measured with B's 64 KB panel held (read from L2 on Zen 4, twice its
// L1) and A's rows streaming past it, which it keeps: A's 12 rows of 512
// would take 24 of Zen 4's 32 KB of L1.
struct Avx512LongTile : Avx512Tile {
  static constexpr int64_t kKC = 512, kNC = 2048;
  static constexpr bool kStationaryA = false;
};
// Its blocking at KC 256: what long_k_pays() weighs its packs against, as
// the rule was measured (Avx512Tile's NC is smaller since).
struct Avx512LongTileShortK : Avx512LongTile {
  static constexpr int64_t kKC = Avx512Tile::kKC;
};

// The tiles of a PackedB, with KC 512: B is packed once, so a deeper block
// costs no larger pack per call, and C's sums make half the trips between
// blocks. On the LSTM's steps (m 32; n 2048, k 512 and n 512, k 2048) it
// ran 0.83-0.90x and 0.87-0.91x oneDNN's time on an Intel Xeon held to
// AVX2, 0.96-0.97x and 0.99-1.00x with AVX-512, where KC 256 ran
// 0.83-0.85x / 0.91-0.92x and 0.95-0.97x / 1.04-1.05x, and 128 or the
// whole of k slower still (2026-12-05, call against call, medians of 401).
struct Avx2PackedBTile : Avx2Tile {
  static constexpr int64_t kKC = 512;
};
struct Avx512PackedBTile : Avx512Tile {
  static constexpr int64_t kKC = 512;
};

// Small products on one thread: waking the team costs more.
int product_threads(int64_t m, int64_t n, int64_t k, int64_t batch) {
  const double flops = 2.0 * m * n * k * batch;
  return flops < kProductTeamFlops ? 1 : omp_get_max_threads();
}

Operand at(Operand x, int64_t offset) {
  return {static_cast<const char*>(x.data) + offset * dtype_size(x.dtype),
          x.dtype};
}

// count elements of src (float, Half or BFloat16) as fp32 at dst, 8 or 16
// at a time.
template <class S>
MG_TARGET_GEMM void Avx2Tile::to_f32(const S* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, avx2::load8(src + i));
  }
  for (; i < count; ++i) dst[i] = static_cast<float>(src[i]);
}

template <class S>
MG_TARGET_GEMM512 void Avx512Tile::to_f32(const S* src, float* dst,
                                          int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, avx512::load16(src + i));
  }
  for (; i < count; ++i) dst[i] = static_cast<float>(src[i]);
}

// One product, or the part of one that a thread computes: its matrices,
// their row strides, and where its fp32 sums go.
template <class T>
struct Product {
  bool ta, tb;
  int64_t m, n, k;
  Operand a, b;  // op(A) m x k, op(B) k x n
  int64_t lda, ldb, ldc;
  T* c;
  // C's fp32 sums between blocks of k, ldc apart as C's: C itself for
  // float, else scratch (null where k fits one block and C is written
  // once).
  float* acc;
  const float* bias;
  bool accum;
  // The thread's TileOut::watch (fp32 C only), or null.
  float* watch = nullptr;
  // op(B) packed once (PackedB: blocks of k, each its panels over all of
  // B's columns), where not null: b is then not read, and b_col0 is the
  // column of that B which this product's column 0 is.
  const float* packed_b = nullptr;
  int64_t b_panels = 0, b_col0 = 0;

  // Rows [i0, i0 + count) of C.
  Product rows(int64_t i0, int64_t count) const {
    Product p = *this;
    p.m = count;
    p.a = at(a, ta ? i0 : i0 * lda);
    p.c = c + i0 * ldc;
    if (acc) p.acc = acc + i0 * ldc;
    return p;
  }
  // Columns [j0, j0 + count) of C.
  Product columns(int64_t j0, int64_t count) const {
    Product p = *this;
    p.n = count;
    if (packed_b) {
      p.b_col0 += j0;
    } else {
      p.b = at(b, tb ? j0 * ldb : j0);
    }
    p.c = c + j0;
    if (acc) p.acc = acc + j0;
    if (bias) p.bias = bias + j0;
    return p;
  }
};

// v[0..7] as the rows of an 8 x 8 matrix, transposed in place.
MG_TARGET_GEMM inline void transpose8(__m256 (&v)[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]);
  const __m256 t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]);
  const __m256 t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]);
  const __m256 t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]);
  const __m256 t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// Columns [j0, j0 + NR) of op(B)'s rows [p0, p0 + kc), at dst: kc rows of
// NR, zero past n. B is b (of type S), stored n x k (tb): op(B)'s column j
// is row j, so NR rows are converted and interleaved by 8 x 8 transposes.
template <class Tile, class S, class T>
MG_TARGET_GEMM void pack_b_panel(const Product<T>& p, const S* b, int64_t j0,
                                 int64_t p0, int64_t kc, float* dst) {
  constexpr int64_t kNR = Tile::kNR;
  const int64_t cols = std::min(kNR, p.n - j0);
  alignas(32) float rows[kNR * Tile::kKC];
  for (int64_t j = 0; j < kNR; ++j) {
    if (j < cols) {
      Tile::to_f32(b + (j0 + j) * p.ldb + p0, rows + j * kc, kc);
    } else {
      std::fill(rows + j * kc, rows + (j + 1) * kc, 0.0f);
    }
  }
  int64_t r = 0;
  for (; r + 8 <= kc; r += 8) {
    for (int64_t g = 0; g < kNR; g += 8) {
      __m256 v[8];
      for (int64_t j = 0; j < 8; ++j) {
        v[j] = _mm256_loadu_ps(rows + (g + j) * kc + r);
      }
      transpose8(v);
      for (int64_t q = 0; q < 8; ++q) {
        _mm256_store_ps(dst + (r + q) * kNR + g, v[q]);
      }
    }
  }
  for (; r < kc; ++r) {
    for (int64_t j = 0; j < kNR; ++j) dst[r * kNR + j] = rows[j * kc + r];
  }
}

// Columns [j0, j0 + nc) of op(B)'s rows [p0, p0 + kc), at dst: panels of
// NR columns (kc x NR each, zero past n), one after the other. A stored B
// (k x n) is read a row at a time, each row once, into every panel: by
// panel, each of kc rows n apart would be a new cache line and page (GPT
// weights, n 1024: 7.7% of a product's time in packing).
template <class Tile, class S, class T>
MG_TARGET_GEMM void pack_b(const Product<T>& p, const S* b, int64_t j0,
                           int64_t nc, int64_t p0, int64_t kc, float* dst) {
  constexpr int64_t kNR = Tile::kNR;
  const int64_t panels = ceil_div(nc, kNR);
  if (p.tb) {
    for (int64_t q = 0; q < panels; ++q) {
      pack_b_panel<Tile>(p, b, j0 + q * kNR, p0, kc, dst + q * kNR * kc);
    }
    return;
  }
  const int64_t full = nc / kNR;
  for (int64_t r = 0; r < kc; ++r) {
    const S* row = b + (p0 + r) * p.ldb + j0;
    float* d = dst + r * kNR;
    for (int64_t q = 0; q < full; ++q, row += kNR, d += kNR * kc) {
      for (int64_t g = 0; g < kNR; g += 8) {
        _mm256_store_ps(d + g, avx2::load8(row + g));
      }
    }
    if (full < panels) {
      const int64_t cols = nc - full * kNR;
      for (int64_t j = 0; j < kNR; ++j) {
        d[j] = j < cols ? static_cast<float>(row[j]) : 0.0f;
      }
    }
  }
}

// op(A)'s rows [i0, i0 + mc), columns [p0, p0 + kc), at dst: a stored
// A's rows as they are (mc x kc, row-major; the tile reads MR rows at a
// time), a transposed one's in panels of MR rows (kc x MR each, zero past
// m). A is a, of type S.
template <class Tile, class S, class T>
MG_TARGET_GEMM void pack_a(const Product<T>& p, const S* a, int64_t i0,
                           int64_t mc, int64_t p0, int64_t kc, float* dst) {
  constexpr int64_t kMR = Tile::kMR;
  if (!p.ta) {  // A: m x k, row-major
    for (int64_t i = 0; i < mc; ++i) {
      Tile::to_f32(a + (i0 + i) * p.lda + p0, dst + i * kc, kc);
    }
    return;
  }
  // A stored k x m: op(A)'s column q is row q, its mc elements contiguous.
  // A panel at a time, so that its writes run on: MR elements of each row
  // (two overlapping runs of 8, or of 4 where MR is under 8), then the
  // next row's.
  static_assert(kMR >= 4 && kMR <= 16);
  for (int64_t i = 0; i < mc; i += kMR) {
    float* d = dst + i * kc;
    const S* col = a + p0 * p.lda + i0 + i;  // row p0, column i0 + i
    if (mc - i >= kMR) {
      for (int64_t q = 0; q < kc; ++q, col += p.lda, d += kMR) {
        if constexpr (kMR >= 8) {
          _mm256_storeu_ps(d, avx2::load8(col));
          _mm256_storeu_ps(d + kMR - 8, avx2::load8(col + kMR - 8));
        } else {
          _mm_storeu_ps(d, avx2::load4(col));
          _mm_storeu_ps(d + kMR - 4, avx2::load4(col + kMR - 4));
        }
      }
      continue;
    }
    const int64_t rows = std::min(kMR, mc - i);  // zero past m
    for (int64_t q = 0; q < kc; ++q, col += p.lda, d += kMR) {
      for (int64_t r = 0; r < kMR; ++r) {
        d[r] = r < rows ? static_cast<float>(col[r]) : 0.0f;
      }
    }
  }
}

// f(x's data as S*) for x's type S.
template <class F>
decltype(auto) with_type(Operand x, F&& f) {
  switch (x.dtype) {
    case Dtype::f32:
      return f(static_cast<const float*>(x.data));
    case Dtype::f16:
      return f(static_cast<const Half*>(x.data));
    default:  // bf16: gemm_packed() refuses every other type
      return f(static_cast<const BFloat16*>(x.data));
  }
}

void check_operand(const char* name, Operand x) {
  if (x.dtype != Dtype::f32 && x.dtype != Dtype::f16 &&
      x.dtype != Dtype::bf16) {
    throw std::invalid_argument(
        msg("[gemm_packed] operand ", name, " is ", dtype_name(x.dtype),
            "; this product reads float, half and bfloat16 only"));
  }
}

// c (R x NR, rows ldc apart) = c0 (rows ld0 apart; zero where null) + R
// rows of op(A) (kc each) times a panel of B (kc x NR), each row's NR sums
// in NR / W registers of W floats (Vec); or, where `out` is not null, those
// sums written to out's C (TileOut), and c not touched. The rows are a
// panel's (kc x MR: Panel, row r's q-th element at a[q MR + r]) or rows lda
// apart.
#define MG_TILE_ROWS(NAME, TARGET, VEC, W, LOADU, LOAD, SET1, FMA, STOREU,  \
                     ZERO, ADD, LOADT, STORET, UNROLL)                      \
  template <int R, bool Panel, int64_t kMR, int64_t kNR, class T>           \
  TARGET void NAME(int64_t kc, const float* a, int64_t lda, const float* b, \
                   const float* c0, int64_t ld0, float* c, int64_t ldc,     \
                   const TileOut<T>* out) {                                 \
    constexpr int V = kNR / W;                                              \
    const float* row[R];                                                    \
    for (int r = 0; r < R; ++r) row[r] = Panel ? a + r : a + r * lda;       \
    constexpr int64_t step = Panel ? kMR : 1;                               \
    VEC sum[R][V];                                                          \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                  \
      _Pragma("GCC unroll 4") for (int v = 0; v < V; ++v) {                 \
        sum[r][v] = c0 ? LOADU(c0 + r * ld0 + v * W) : ZERO();              \
      }                                                                     \
    }                                                                       \
    _Pragma(UNROLL) for (int64_t q = 0; q < kc; ++q) {                      \
      VEC bv[V];                                                            \
      _Pragma("GCC unroll 4") for (int v = 0; v < V; ++v) {                 \
        bv[v] = LOAD(b + v * W);                                            \
      }                                                                     \
      _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                \
        const VEC x = SET1(row[r][q * step]);                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; ++v) {               \
          sum[r][v] = FMA(x, bv[v], sum[r][v]);                             \
        }                                                                   \
      }                                                                     \
      b += kNR;                                                             \
    }                                                                       \
    if (!out) {                                                             \
      _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; ++v) {               \
          STOREU(c + r * ldc + v * W, sum[r][v]);                           \
        }                                                                   \
      }                                                                     \
      return;                                                               \
    }                                                                       \
    VEC seen = ZERO();                                                      \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; ++r) {                  \
      _Pragma("GCC unroll 4") for (int v = 0; v < V; ++v) {                 \
        VEC x = sum[r][v];                                                  \
        const int64_t at = r * out->ldc + v * W;                            \
        if (out->c_in) x = ADD(x, LOADT(out->c_in + at));                   \
        if (out->bias) x = ADD(x, LOADU(out->bias + v * W));                \
        STORET(out->c + at, x);                                             \
        if (out->watch) seen = FMA(x, ZERO(), seen);                        \
      }                                                                     \
    }                                                                       \
    if (out->watch) STOREU(out->watch, ADD(LOADU(out->watch), seen));       \
  }
// clang-format off
MG_TILE_ROWS(avx2_rows, MG_TARGET_GEMM, __m256, 8, _mm256_loadu_ps,
             _mm256_load_ps, _mm256_set1_ps, _mm256_fmadd_ps,
             _mm256_storeu_ps, _mm256_setzero_ps, _mm256_add_ps, avx2::load8,
             avx2::store8, "GCC unroll 4")
MG_TILE_ROWS(avx512_rows, MG_TARGET_GEMM512, __m512, 16, _mm512_loadu_ps,
             _mm512_load_ps, _mm512_set1_ps, _mm512_fmadd_ps,
             _mm512_storeu_ps, _mm512_setzero_ps, _mm512_add_ps,
             avx512::load16, avx512::store16, "GCC unroll 2")
// clang-format on
#undef MG_TILE_ROWS

// c (rows x NR) = c0 + rows of op(A) times a panel of B, as avx2_rows's
// and avx512_rows's; past m, rows of the block that are not there are
// never read or written.
template <bool Panel, class T>
void Avx2Tile::multiply(int64_t kc, const float* a, int64_t lda, int64_t rows,
                        const float* b, const float* c0, int64_t ld0, float* c,
                        int64_t ldc, const TileOut<T>* out) {
  with_tile_rows<kMR>(rows, [&](auto r) {
    avx2_rows<decltype(r)::value, Panel, kMR, kNR>(kc, a, lda, b, c0, ld0, c,
                                                   ldc, out);
  });
}

template <bool Panel, class T>
void Avx512Tile::multiply(int64_t kc, const float* a, int64_t lda, int64_t rows,
                          const float* b, const float* c0, int64_t ld0,
                          float* c, int64_t ldc, const TileOut<T>* out) {
  with_tile_rows<kMR>(rows, [&](auto r) {
    avx512_rows<decltype(r)::value, Panel, kMR, kNR>(kc, a, lda, b, c0, ld0, c,
                                                     ldc, out);
  });
}

// A tile narrower than NR (rows x cols at C's (i, j), cols < NR: C's right
// edge) after a block of k: its sums added to those of the blocks before
// (acc) and, in the last block, with the bias and a 16-bit accum's C, rounded
// to T once; before the last block kept in fp32 in acc. (Whole tiles go
// through the registers: their sums start from acc and end in acc or, as a
// TileOut, in C.)
template <class Tile, class T>
MG_TARGET_GEMM void finish_edge(const Product<T>& p, const float* tile,
                                int64_t i, int64_t j, int64_t rows,
                                int64_t cols, bool first, bool last) {
  constexpr int64_t kNR = Tile::kNR;
  constexpr bool is_float = std::is_same_v<T, float>;
  const float* bias = last && p.bias ? p.bias + j : nullptr;
  // For float, acc is C: accum's C is its sum before the first block.
  const bool add_c = p.accum && (is_float ? first : last);
  for (int64_t r = 0; r < rows; ++r) {
    const float* t = tile + r * kNR;
    T* c = p.c + (i + r) * p.ldc + j;
    float* acc = p.acc ? p.acc + (i + r) * p.ldc + j : nullptr;
    for (int64_t q = 0; q < cols; ++q) {
      float v = t[q];
      if (!first) v += acc[q];
      if (add_c) v += static_cast<float>(c[q]);
      if (bias) v += bias[q];
      if (last) {
        c[q] = T(v);
        if (p.watch) p.watch[0] += v * 0.0f;  // TileOut's watch, one lane
      } else {
        acc[q] = v;
      }
    }
  }
}

// Whether run_product() reads A where it is, not from a pack: a stored
// (not transposed) fp32 A, which packing copied as it is. Products with it
// took 0.92-0.99x the time with AVX-512 and 0.95-1.01x held to AVX2 on the
// GPT's, the LSTM's and ResNet-18's shapes, 0.96-1.01x on the LSTM's steps
// (Intel Xeon, 2 threads, call against call, 2026-12-05).
bool reads_a_in_place(bool ta, Operand a) {
  return !ta && a.dtype == Dtype::f32;
}

// One product on one thread: bp holds a block of B (KC x NC), ap one of
// A (MC x KC).
template <class Tile, class T>
void run_product(const Product<T>& p, float* bp, float* ap) {
  constexpr int64_t kMR = Tile::kMR, kNR = Tile::kNR, kKC = Tile::kKC;
  // Blocks of A of equal rows, a multiple of MR, at most MC.
  const int64_t mc_step =
      ceil_div(ceil_div(p.m, ceil_div(p.m, Tile::kMC)), kMR) * kMR;
  const bool in_place = reads_a_in_place(p.ta, p.a);
  for (int64_t jc = 0; jc < p.n; jc += Tile::kNC) {
    const int64_t nc = std::min(Tile::kNC, p.n - jc);
    const int64_t panels = ceil_div(nc, kNR);
    for (int64_t pc = 0; pc < p.k; pc += kKC) {
      const int64_t kc = std::min(kKC, p.k - pc);
      const bool first = pc == 0, last = pc + kc == p.k;
      const float* b_block = bp;
      if (p.packed_b) {
        b_block = p.packed_b + pc * p.b_panels * kNR +
                  (p.b_col0 + jc) / kNR * kNR * kc;
      } else {
        with_type(p.b, [&](auto b) { pack_b<Tile>(p, b, jc, nc, pc, kc, bp); });
      }
      for (int64_t i0 = 0; i0 < p.m; i0 += mc_step) {
        const int64_t mc = std::min(mc_step, p.m - i0);
        // A's block: rows lda apart, or panels of MR rows kc x MR each.
        const float* a_block = ap;
        int64_t lda = kc;
        if (in_place) {
          a_block = static_cast<const float*>(p.a.data) + i0 * p.lda + pc;
          lda = p.lda;
        } else {
          with_type(p.a,
                    [&](auto a) { pack_a<Tile>(p, a, i0, mc, pc, kc, ap); });
        }
        // C's tile of A's rows i and B's panel q.
        auto compute = [&](int64_t i, int64_t q) {
          const int64_t j = jc + q * kNR;
          const int64_t cols = std::min(kNR, p.n - j);
          const int64_t rows = std::min(kMR, mc - i);
          const float* a = a_block + i * lda;
          const float* b = b_block + q * kNR * kc;
          alignas(64) float tile[kMR * kNR];
          const float* c0 = nullptr;
          float* c = tile;
          int64_t ldc = kNR;
          TileOut<T> to_c;
          const TileOut<T>* out = nullptr;
          if (cols == kNR) {  // in registers from C's fp32 sums so far
            float* acc = p.acc ? p.acc + (i0 + i) * p.ldc + j : nullptr;
            if (!first || (std::is_same_v<T, float> && p.accum)) c0 = acc;
            if (!last) {
              c = acc, ldc = p.ldc;
            } else {  // to C itself, from the registers
              T* ct = p.c + (i0 + i) * p.ldc + j;
              const bool add_c = !std::is_same_v<T, float> && p.accum;
              to_c = {ct, p.ldc, add_c ? ct : nullptr,
                      p.bias ? p.bias + j : nullptr, p.watch};
              out = &to_c;
            }
          }
          if (p.ta) {
            Tile::template multiply<true>(kc, a, lda, rows, b, c0, p.ldc, c,
                                          ldc, out);
          } else {
            Tile::template multiply<false>(kc, a, lda, rows, b, c0, p.ldc, c,
                                           ldc, out);
          }
          if (cols < kNR)
            finish_edge<Tile>(p, tile, i0 + i, j, rows, cols, first, last);
        };
        if constexpr (Tile::kStationaryA) {
          for (int64_t i = 0; i < mc; i += kMR) {
            for (int64_t q = 0; q < panels; ++q) compute(i, q);
          }
        } else {
          for (int64_t q = 0; q < panels; ++q) {
            for (int64_t i = 0; i < mc; i += kMR) compute(i, q);
          }
        }
      }
    }
  }
}

// Whether run()'s threads take whole matrices of a batch each (attention's
// many small products), not bands of each matrix (share()).
bool shares_by_matrix(int threads, int64_t batch) {
  return threads > 1 && batch >= 2 * threads;
}

// Whether a team shares C out by rows (C has more rows than columns), else
// by columns: so that the operand each thread packs whole, and so packs
// again, is the smaller one.
bool shares_by_rows(int64_t m, int64_t n) { return m >= n; }

// Thread tid's band of C among nth, [begin, end) of its rows (by_rows) or
// columns, in whole tiles' rows (MR) or panels (NR).
template <class Tile>
TeamShare band(int64_t m, int64_t n, int tid, int nth) {
  const bool by_rows = shares_by_rows(m, n);
  const int64_t size = by_rows ? m : n;
  const int64_t unit = by_rows ? Tile::kMR : Tile::kNR;
  const auto [u0, u1] = team_share(ceil_div(size, unit), tid, nth);
  return {std::min(size, u0 * unit), std::min(size, u1 * unit)};
}

// Thread tid's share of p among nth: its band of C's rows or columns.
// Threads share no buffer and never wait for each other.
template <class Tile, class T>
Product<T> share(const Product<T>& p, int tid, int nth) {
  const auto [begin, end] = band<Tile>(p.m, p.n, tid, nth);
  return shares_by_rows(p.m, p.n) ? p.rows(begin, end - begin)
                                  : p.columns(begin, end - begin);
}

// The floats of the packs of B and of A for an m x n x k product: as large
// as the product needs (a block of A has at most min(MC, m rounded up to
// MR) rows, a block of B min(NC, n rounded up to NR) columns, both at most
// min(KC, k) of k), not the tile's most: they count in the allocator's
// peak, where a small model's grads are of their size.
template <class Tile>
int64_t b_pack_floats(int64_t n, int64_t k) {
  return std::min(Tile::kKC, k) *
         std::min(Tile::kNC, ceil_div(n, Tile::kNR) * Tile::kNR);
}
template <class Tile>
int64_t a_pack_floats(int64_t m, int64_t k) {
  return std::min(Tile::kMC, ceil_div(m, Tile::kMR) * Tile::kMR) *
         std::min(Tile::kKC, k);
}

// The rows and columns of the largest part of an m x n C that one of
// `threads` computes at a time: the widest of share()'s bands, or a whole
// matrix where they share a batch out by matrix. What each thread's packs
// hold: a thread with a band of C's columns packs only B's columns of its
// band.
struct Extent {
  int64_t rows, cols;
};
template <class Tile>
Extent share_extent(int64_t m, int64_t n, int threads, int64_t batch) {
  if (threads <= 1 || shares_by_matrix(threads, batch)) return {m, n};
  int64_t widest = 0;
  for (int t = 0; t < threads; ++t) {
    const auto [begin, end] = band<Tile>(m, n, t, threads);
    widest = std::max(widest, end - begin);
  }
  return shares_by_rows(m, n) ? Extent{widest, n} : Extent{m, widest};
}

// packed_b: op(B) packed whole by pack_whole_b<Tile>() (batch 1), or null.
// c_finite (float C only), where not null: set to whether every value
// written to C was finite (TileOut's watch, a cache line of them a thread).
template <class Tile, class T>
void run(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
         Operand b, T* c, const float* bias, bool accum, int64_t batch,
         const float* packed_b = nullptr, bool* c_finite = nullptr) {
  constexpr bool is_float = std::is_same_v<T, float>;
  const int threads = product_threads(m, n, k, batch);
  constexpr int64_t kWatch = 16;  // floats: the widest vector, a cache line
  std::vector<float> watch_area;
  float* watch_sums = nullptr;  // threads x kWatch, 64-byte aligned
  if (c_finite && is_float) {
    watch_area.assign(threads * kWatch + kWatch, 0.0f);
    watch_sums = watch_area.data();
    while (reinterpret_cast<std::uintptr_t>(watch_sums) % 64) ++watch_sums;
  }
  // Attention's many small products: one per thread at a time.
  const bool by_matrix = shares_by_matrix(threads, batch);
  const Extent part = share_extent<Tile>(m, n, threads, batch);
  const int64_t b_floats = packed_b ? 0 : b_pack_floats<Tile>(part.cols, k);
  const int64_t a_floats =
      reads_a_in_place(ta, a) ? 0 : a_pack_floats<Tile>(part.rows, k);
  std::unique_ptr<Memory> packs = CpuAllocator::instance().allocate(
      threads * (b_floats + a_floats) * sizeof(float));
  std::unique_ptr<Memory> sums;
  if (!is_float && k > Tile::kKC) {
    sums = CpuAllocator::instance().allocate(batch * m * n * sizeof(float));
  }
  auto product = [&](int64_t i) {
    float* acc = nullptr;
    if constexpr (is_float) {
      acc = c + i * m * n;
    } else if (sums) {
      acc = static_cast<float*>(sums->ptr()) + i * m * n;
    }
    Product<T> p{ta,
                 tb,
                 m,
                 n,
                 k,
                 at(a, i * m * k),
                 at(b, i * k * n),
                 ta ? m : k,
                 tb ? k : n,
                 n,
                 c + i * m * n,
                 acc,
                 bias,
                 accum};
    p.packed_b = packed_b;
    p.b_panels = ceil_div(n, Tile::kNR);
    return p;
  };
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    float* bp = static_cast<float*>(packs->ptr()) + tid * (b_floats + a_floats);
    float* ap = bp + b_floats;
    float* watch = watch_sums ? watch_sums + tid * kWatch : nullptr;
    if (by_matrix) {
      for (int64_t i = tid; i < batch; i += nth) {
        Product<T> p = product(i);
        p.watch = watch;
        run_product<Tile>(p, bp, ap);
      }
    } else {
      // The `threads` bands the packs were sized for, whatever team the
      // runtime gave (one thread inside another parallel region).
      for (int64_t i = 0; i < batch; ++i) {
        for (int t = tid; t < threads; t += nth) {
          Product<T> part = share<Tile>(product(i), t, threads);
          part.watch = watch;
          if (part.m > 0 && part.n > 0) run_product<Tile>(part, bp, ap);
        }
      }
    }
  }
  if (c_finite) {
    *c_finite =
        watch_sums && std::all_of(watch_sums, watch_sums + threads * kWatch,
                                  [](float v) { return v == 0.0f; });
  }
}

// op(B) (k x n; b stored n x k where tb) packed whole at dst, as
// run_product() reads a PackedB: blocks of KC rows of k, each its
// ceil(n / NR) panels of kc x NR, the threads sharing each block's panels.
template <class Tile>
void pack_whole_b(bool tb, int64_t n, int64_t k, Operand b, float* dst) {
  constexpr int64_t kNR = Tile::kNR;
  const int64_t panels = ceil_div(n, kNR);
  Product<float> p{};  // what pack_b() reads of a product: B's layout
  p.tb = tb;
  p.n = n;
  p.k = k;
  p.ldb = tb ? k : n;
#pragma omp parallel num_threads(product_threads(1, n, k, 1))
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const auto [q0, q1] = team_share(panels, tid, nth);
    if (q0 < q1) {
      for (int64_t pc = 0; pc < k; pc += Tile::kKC) {
        const int64_t kc = std::min(Tile::kKC, k - pc);
        const int64_t j0 = q0 * kNR, nc = std::min(n, q1 * kNR) - j0;
        float* d = dst + pc * panels * kNR + q0 * kNR * kc;
        with_type(b, [&](auto s) { pack_b<Tile>(p, s, j0, nc, pc, kc, d); });
      }
    }
  }
}

template <class Tile>
int64_t whole_b_floats(int64_t n, int64_t k) {
  return ceil_div(n, Tile::kNR) * Tile::kNR * k;
}

}  // namespace

void check_column_band(const char* who, int64_t j0, int64_t count, int64_t n,
                       int64_t width) {
  const int64_t end = j0 + count;
  if (j0 < 0 || count < 0 || end > n || j0 % width != 0 ||
      (end % width != 0 && end != n)) {
    throw std::invalid_argument(
        msg("[", who, "] columns [", j0, ", ", end, ") of ", n,
            ": must lie within B, start at a multiple of ", width,
            " and end at one or at B's last column"));
  }
}

bool gemm_packed_available() {
  const CpuFeatures& cpu = cpu_features();
  return cpu.avx2 && cpu.f16c && __builtin_cpu_supports("fma");
}

bool gemm_packed_avx512() {
  return gemm_packed_available() && cpu_features().avx512f;
}

namespace {

// gemm_packed_here()'s scratch: the packs of any m and k with n columns.
template <class Tile>
int64_t scratch_floats(int64_t n) {
  return b_pack_floats<Tile>(n, Tile::kKC) +
         a_pack_floats<Tile>(Tile::kMC, Tile::kKC);
}

template <class Tile>
void run_here(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
              Operand b, float* c, bool accum, float* scratch) {
  const Product<float> p{ta,         tb,         m, n, k, a,       b,
                         ta ? m : k, tb ? k : n, n, c, c, nullptr, accum};
  run_product<Tile>(p, scratch, scratch + b_pack_floats<Tile>(n, k));
}

}  // namespace

int64_t gemm_packed_scratch_floats(int64_t n) {
  if (gemm_packed_avx512()) {
    return scratch_floats<Avx512Tile>(n);
  }
  return scratch_floats<Avx2Tile>(n);
}

void gemm_packed_here(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      Operand a, Operand b, float* c, bool accum,
                      float* scratch) {
  const FunctionProfile::ProductScope timed;
  check_operand("A", a);
  check_operand("B", b);
  if (m == 0 || n == 0 || k == 0) return;
  if (gemm_packed_avx512()) {
    return run_here<Avx512Tile>(ta, tb, m, n, k, a, b, c, accum, scratch);
  }
  run_here<Avx2Tile>(ta, tb, m, n, k, a, b, c, accum, scratch);
}

namespace {

PackedDepth& packed_depth() {
  static PackedDepth depth = PackedDepth::automatic;
  return depth;
}

// Whether KC 512 (Avx512LongTile) is for this product: k past 256, an AMD
// CPU, and packs that grow by at most a quarter of the product's own
// operands and result (the GPT's and the LSTM's products; none of LeNet's).
// Each thread's packs as run() sizes them, for its band of C: counted with
// all of B's columns for each thread, the GPT's weight grads of 256 rows
// (256 x 1024 and 256 x 1000, k 1024, shared by columns) stayed at KC 256,
// where KC 512 takes 0.93-0.95x their time (half operands, Zen 4).
bool long_k_pays(int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (packed_depth() != PackedDepth::automatic) {
    return packed_depth() == PackedDepth::long_k;
  }
  if (k <= Avx512Tile::kKC || cpu_features().intel) return false;
  const int threads = product_threads(m, n, k, batch);
  const Extent part = share_extent<Avx512LongTile>(m, n, threads, batch);
  const int64_t extra =
      threads * (b_pack_floats<Avx512LongTile>(part.cols, k) -
                 b_pack_floats<Avx512LongTileShortK>(part.cols, k) +
                 a_pack_floats<Avx512LongTile>(part.rows, k) -
                 a_pack_floats<Avx512LongTileShortK>(part.rows, k));
  return 4 * extra <= batch * (m * k + k * n + m * n);
}

}  // namespace

ScopedPackedDepth::ScopedPackedDepth(PackedDepth depth)
    : previous_(packed_depth()) {
  packed_depth() = depth;
}
ScopedPackedDepth::~ScopedPackedDepth() { packed_depth() = previous_; }

template <class T>
void gemm_packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
                 Operand b, T* c, const float* bias, bool accum, int64_t batch,
                 bool* c_finite) {
  const FunctionProfile::ProductScope timed;
  if (c_finite) *c_finite = false;
  check_operand("A", a);
  check_operand("B", b);
  if (m == 0 || n == 0 || k == 0 || batch == 0) return;
  if (gemm_packed_avx512()) {
    if (long_k_pays(m, n, k, batch)) {
      return run<Avx512LongTile>(ta, tb, m, n, k, a, b, c, bias, accum, batch,
                                 nullptr, c_finite);
    }
    return run<Avx512Tile>(ta, tb, m, n, k, a, b, c, bias, accum, batch,
                           nullptr, c_finite);
  }
  run<Avx2Tile>(ta, tb, m, n, k, a, b, c, bias, accum, batch, nullptr,
                c_finite);
}

PackedB::PackedB(bool tb, int64_t n, int64_t k, Operand b)
    : PackedB((check_operand("B", b), n), k) {  // b's type checked first
  float* dst = static_cast<float*>(data_->ptr());
  if (avx512_) {
    pack_whole_b<Avx512PackedBTile>(tb, n, k, b, dst);
  } else {
    pack_whole_b<Avx2PackedBTile>(tb, n, k, b, dst);
  }
}

PackedB::PackedB(int64_t n, int64_t k)
    : avx512_(gemm_packed_avx512()), n_(n), k_(k) {
  if (n <= 0 || k <= 0) {
    throw std::invalid_argument(
        msg("[PackedB] B is ", k, " x ", n, ": both sizes must be positive"));
  }
  const int64_t floats = avx512_ ? whole_b_floats<Avx512PackedBTile>(n, k)
                                 : whole_b_floats<Avx2PackedBTile>(n, k);
  data_ = CpuAllocator::instance().allocate(floats * sizeof(float));
  const int64_t w = panel_width(), last = (n - 1) / w * w;
  if (last + w > n) {  // the last panel's padding columns
    for (int64_t q = 0; q < k; ++q) {
      float* row = panel_row(q, last);
      std::fill(row + (n - last), row + w, 0.0f);
    }
  }
}

PackedB::~PackedB() = default;

float* PackedB::panel_row(int64_t q, int64_t j0) {
  // As run_product() reads it: blocks of KC rows, each its panels of kc x
  // NR one after the other.
  const int64_t w = panel_width(), kKC = Avx2PackedBTile::kKC;
  static_assert(Avx2PackedBTile::kKC == Avx512PackedBTile::kKC);
  const int64_t pc = q / kKC * kKC, kc = std::min(kKC, k_ - pc);
  const int64_t panels = ceil_div(n_, w);
  return static_cast<float*>(data_->ptr()) + pc * panels * w + j0 * kc +
         (q - pc) * w;
}

void PackedB::multiply(int64_t m, const float* a, float* c, const float* bias,
                       bool accum) const {
  const FunctionProfile::ProductScope timed;
  if (m == 0) return;
  const Operand op_a{a, Dtype::f32};
  const float* packed = static_cast<const float*>(data_->ptr());
  if (avx512_) {
    return run<Avx512PackedBTile, float>(false, false, m, n_, k_, op_a, op_a, c,
                                         bias, accum, 1, packed);
  }
  run<Avx2PackedBTile, float>(false, false, m, n_, k_, op_a, op_a, c, bias,
                              accum, 1, packed);
}

int64_t PackedB::panel_width() const {
  return avx512_ ? Avx512PackedBTile::kNR : Avx2PackedBTile::kNR;
}

namespace {

// Columns [j0, j0 + count) of A (m x k, fp32, read in place) times a
// PackedB's op(B) on the calling thread: neither operand is packed here, so
// run_product() needs no scratch.
template <class Tile>
void multiply_columns_here(int64_t m, int64_t n, int64_t k, const float* a,
                           const float* packed, float* c, const float* bias,
                           bool accum, int64_t j0, int64_t count) {
  const Operand op_a{a, Dtype::f32};
  Product<float> p{false, false, m, n, k, op_a, op_a,
                   k,     n,     n, c, c, bias, accum};
  p.packed_b = packed;
  p.b_panels = ceil_div(n, Tile::kNR);
  run_product<Tile>(p.columns(j0, count), nullptr, nullptr);
}

}  // namespace

void PackedB::multiply_columns(int64_t m, const float* a, float* c,
                               const float* bias, bool accum, int64_t j0,
                               int64_t count) const {
  const FunctionProfile::ProductScope timed;
  check_column_band("PackedB", j0, count, n_, panel_width());
  if (m == 0 || count == 0) return;
  const float* packed = static_cast<const float*>(data_->ptr());
  if (avx512_) {
    return multiply_columns_here<Avx512PackedBTile>(m, n_, k_, a, packed, c,
                                                    bias, accum, j0, count);
  }
  multiply_columns_here<Avx2PackedBTile>(m, n_, k_, a, packed, c, bias, accum,
                                         j0, count);
}

#define MG_INSTANTIATE_GEMM_PACKED(T)                                          \
  template void gemm_packed<T>(bool, bool, int64_t, int64_t, int64_t, Operand, \
                               Operand, T*, const float*, bool, int64_t,       \
                               bool*);
MG_INSTANTIATE_GEMM_PACKED(float)
MG_INSTANTIATE_GEMM_PACKED(Half)
MG_INSTANTIATE_GEMM_PACKED(BFloat16)
#undef MG_INSTANTIATE_GEMM_PACKED

}  // namespace mg::cpu
