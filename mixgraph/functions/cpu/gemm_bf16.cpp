#include <mixgraph/functions/cpu/gemm_bf16.hpp>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

// For <immintrin.h>, with GCC 12's warnings on its own helpers held off.
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
#include <mixgraph/graph/profile.hpp>

#define MG_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

namespace mg::cpu {
namespace {

constexpr int64_t kPanel = PackedBf16B::panel_width();
// Rows of C a tile holds: 12 x 32 fp32 sums in 24 of the 32 zmm registers
// (two dot products a broadcast of A's pair, 24 independent chains against
// their latency), as the fp32 tile of gemm_packed.cpp.
constexpr int kTileRows = 12;

// op(B)'s element (r, j) of b (stored k x n, or n x k where tb), as bits.
template <class S>
uint16_t bf16_bits_at(const S* b, bool tb, int64_t n, int64_t k, int64_t r,
                      int64_t j) {
  const S v = tb ? b[j * k + r] : b[r * n + j];
  if constexpr (std::is_same_v<S, BFloat16>) {
    return v.bits;
  } else {
    return BFloat16(v).bits;
  }
}

// Panel p of op(B) at dst: its ceil(k / 2) pairs of rows, each 32 columns
// of two: row 2q's element then row 2q + 1's (zero past k and past n).
template <class S>
void bf16_pack_panel(const S* b, bool tb, int64_t n, int64_t k, int64_t p,
                     uint16_t* dst) {
  const int64_t j0 = p * kPanel, cols = std::min(kPanel, n - j0);
  const int64_t pairs = ceil_div(k, 2);
  std::fill(dst, dst + pairs * 2 * kPanel, uint16_t{0});
  const auto put = [&](int64_t r, int64_t j) {
    dst[(r / 2) * 2 * kPanel + 2 * j + r % 2] =
        bf16_bits_at(b, tb, n, k, r, j0 + j);
  };
  // Along b's rows: op(B)'s columns where tb, else its rows.
  if (tb) {
    for (int64_t j = 0; j < cols; ++j) {
      for (int64_t r = 0; r < k; ++r) put(r, j);
    }
  } else {
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < cols; ++j) put(r, j);
    }
  }
}

// R rows of C's panel (32 columns, the first `cols` kept) = R rows of A
// (k bf16 each, lda apart) times a packed panel, [+ bias] [+ C].
template <int R>
MG_TARGET_BF16 void bf16_tile_rows(int64_t k, const BFloat16* a, int64_t lda,
                                   const uint16_t* panel, float* c, int64_t ldc,
                                   const float* bias, bool accum,
                                   int64_t cols) {
  const __mmask16 m0 = cols >= 16 ? 0xffff : (1u << cols) - 1;
  const __mmask16 m1 = cols >= 32  ? 0xffff
                       : cols > 16 ? (1u << (cols - 16)) - 1
                                   : 0;
  // Every loop over the rows unrolled: with one left rolled, GCC kept sum
  // in memory as well and stored its 24 registers there every pair of k.
  __m512 sum[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    sum[r][0] =
        accum ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
    sum[r][1] = accum ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16)
                      : _mm512_setzero_ps();
  }
  const int64_t pairs = k / 2;
  const uint16_t* b = panel;
#pragma GCC unroll 2
  for (int64_t q = 0; q < pairs; ++q, b += 2 * kPanel) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + kPanel);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * q, sizeof(pair));
      const __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
      sum[r][0] = _mm512_dpbf16_ps(sum[r][0], x, b0);
      sum[r][1] = _mm512_dpbf16_ps(sum[r][1], x, b1);
    }
  }
  if (k % 2 != 0) {  // the last row alone: its pair's second half is zero
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + kPanel);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(a[r * lda + k - 1].bits);
      sum[r][0] = _mm512_dpbf16_ps(sum[r][0], x, b0);
      sum[r][1] = _mm512_dpbf16_ps(sum[r][1], x, b1);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    __m512 v0 = sum[r][0], v1 = sum[r][1];
    if (bias) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, bias));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, bias + 16));
    }
    _mm512_mask_storeu_ps(c + r * ldc, m0, v0);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, v1);
  }
}

// Panels [p0, p1) of C: each panel's rows a tile at a time, so that the
// panel (k x 32 bf16: 32 KB at k 512) is read from memory once and again
// from cache for the tiles after.
void bf16_run_panels(int64_t m, int64_t n, int64_t k, const BFloat16* a,
                     int64_t lda, const uint16_t* packed, float* c, int64_t ldc,
                     const float* bias, bool accum, int64_t p0, int64_t p1) {
  const int64_t panel_size = ceil_div(k, 2) * 2 * kPanel;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j = p * kPanel, cols = std::min(kPanel, n - j);
    const uint16_t* panel = packed + p * panel_size;
    for (int64_t i = 0; i < m; i += kTileRows) {
      with_tile_rows<kTileRows>(
          std::min<int64_t>(kTileRows, m - i), [&](auto rows) {
            bf16_tile_rows<decltype(rows)::value>(
                k, a + i * lda, lda, panel, c + i * ldc + j, ldc,
                bias ? bias + j : nullptr, accum, cols);
          });
    }
  }
}

}  // namespace

bool PackedBf16B::available() {
  const CpuFeatures& cpu = cpu_features();
  return cpu.avx512f && cpu.avx512bw && cpu.avx512bf16;
}

PackedBf16B::PackedBf16B(bool tb, int64_t n, int64_t k, Operand b)
    : n_(n), k_(k) {
  if (n <= 0 || k <= 0) {
    throw std::invalid_argument(msg("[PackedBf16B] B is ", k, " x ", n,
                                    ": both sizes must be positive"));
  }
  if (b.dtype != Dtype::f32 && b.dtype != Dtype::bf16) {
    throw std::invalid_argument(msg("[PackedBf16B] B is ", dtype_name(b.dtype),
                                    "; it packs float and bfloat16 only"));
  }
  if (!available()) {
    throw std::logic_error(
        "[PackedBf16B] needs AVX512-BF16, which this CPU (or its ISA cap) "
        "lacks");
  }
  const int64_t panels = ceil_div(n, kPanel),
                panel_size = ceil_div(k, 2) * 2 * kPanel;
  data_ = CpuAllocator::instance().allocate(panels * panel_size * 2);
  auto* dst = static_cast<uint16_t*>(data_->ptr());
  // A pass of a few operations an element: parallel_min()'s rule.
  const bool team = n * k >= parallel_min();
#pragma omp parallel for num_threads(team ? omp_get_max_threads() : 1)
  for (int64_t p = 0; p < panels; ++p) {
    if (b.dtype == Dtype::bf16) {
      bf16_pack_panel(static_cast<const BFloat16*>(b.data), tb, n, k, p,
                      dst + p * panel_size);
    } else {
      bf16_pack_panel(static_cast<const float*>(b.data), tb, n, k, p,
                      dst + p * panel_size);
    }
  }
}

PackedBf16B::~PackedBf16B() = default;

void PackedBf16B::multiply_columns(int64_t m, const BFloat16* a, int64_t lda,
                                   float* c, int64_t ldc, const float* bias,
                                   bool accum, int64_t j0,
                                   int64_t count) const {
  const FunctionProfile::ProductScope timed;
  check_column_band("PackedBf16B", j0, count, n_, kPanel);
  // A's rows hold k values and C's n: rows closer than that would overlap
  // (the tile reads and writes whole rows of each).
  if (m < 0 || (m > 1 && (lda < k_ || ldc < n_))) {
    throw std::invalid_argument(msg("[PackedBf16B] ", m, " rows of A ", lda,
                                    " apart and of C ", ldc, " apart: B is ",
                                    k_, " x ", n_, ", so A's rows need ", k_,
                                    " and C's ", n_, " at least"));
  }
  if (m == 0 || count == 0) return;
  bf16_run_panels(m, n_, k_, a, lda, static_cast<const uint16_t*>(data_->ptr()),
                  c, ldc, bias, accum, j0 / kPanel,
                  ceil_div(j0 + count, kPanel));
}

void PackedBf16B::multiply(int64_t m, const BFloat16* a, float* c,
                           const float* bias, bool accum) const {
  const FunctionProfile::ProductScope timed;
  if (m == 0) return;
  const int64_t panels = ceil_div(n_, kPanel);
  const auto* packed = static_cast<const uint16_t*>(data_->ptr());
  const bool team = 2.0 * m * n_ * k_ >= kProductTeamFlops && panels > 1;
#pragma omp parallel num_threads(team ? omp_get_max_threads() : 1)
  {
    const auto [p0, p1] =
        team_share(panels, omp_get_thread_num(), omp_get_num_threads());
    if (p0 < p1) {
      bf16_run_panels(m, n_, k_, a, k_, packed, c, n_, bias, accum, p0, p1);
    }
  }
}

}  // namespace mg::cpu
