// cpu_utils.hpp's loops compiled per vector ISA.
#include <mixgraph/functions/cpu/cpu_utils.hpp>

#include <algorithm>
#include <type_traits>

#include <omp.h>

#include <mixgraph/contexts/cpu/isa_loops.hpp>

namespace mg::cpu {

namespace {
// Each column summed down the rows in order, at every vector width: the
// same bits on every path (compiled for the baseline alone it ran 4 wide,
// 2.7% of an LSTM step).
namespace sum_loops {
#define MG_SUM_LOOPS(NS, TARGET)                                             \
  namespace NS {                                                             \
  /* sums[q] += a[r, q] for q in [0, n), the rows (lda apart) in order. */   \
  TARGET void add_rows(const float* a, int64_t rows, int64_t lda, int64_t n, \
                       float* sums) {                                        \
    for (int64_t r = 0; r < rows; ++r) {                                     \
      const float* row = a + r * lda;                                        \
      for (int64_t q = 0; q < n; ++q) sums[q] += row[q];                     \
    }                                                                        \
  }                                                                          \
  /* As add_rows, bf16 widened as it is read (a shift). */                   \
  TARGET void add_rows(const BFloat16* a, int64_t rows, int64_t lda,         \
                       int64_t n, float* sums) {                             \
    for (int64_t r = 0; r < rows; ++r) {                                     \
      const BFloat16* row = a + r * lda;                                     \
      for (int64_t q = 0; q < n; ++q) {                                      \
        sums[q] += detail::bf16_bits_to_float(row[q].bits);                  \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  }
MG_FOR_EACH_VECTOR_ISA(MG_SUM_LOOPS)
#undef MG_SUM_LOOPS
}  // namespace sum_loops

template <class T>
void add_rows(const T* a, int64_t rows, int64_t lda, int64_t n, float* sums) {
  using namespace sum_loops;
  MG_CALL_VECTOR_ISA(add_rows(a, rows, lda, n, sums));
}
}  // namespace

template <class T>
void column_sums(const T* a, int64_t rows, int64_t cols, float* sums) {
  // Each thread one block of columns (a multiple of 16), the rows read
  // along that block. fp32 and bf16 rows are summed as they are read;
  // half's are widened kRows at a time into a buffer of 16 KiB (blocks of
  // at most kCols), which the sums then read from L1. With blocks of 256
  // for every type, and bf16 widened a row at a time by convert(), a
  // GPT's bias sums of bf16 dy took 36-38 us at 1024 x 256 and 160-175 at
  // 1024 x 1000, against 21 and 98-105 so (Intel Xeon, 2 threads, passive
  // waits, 2026-12-08).
  constexpr int64_t kCols = 256, kRows = 16;
  const bool team = rows * cols >= parallel_min();
  const int64_t threads = team ? omp_get_max_threads() : 1;
  int64_t width =
      std::max<int64_t>(ceil_div(ceil_div(cols, threads), 16) * 16, 16);
  if (std::is_same_v<T, Half>) width = std::min(width, kCols);
#pragma omp parallel for schedule(static) if (team)
  for (int64_t q0 = 0; q0 < cols; q0 += width) {
    const int64_t n = std::min(cols - q0, width);
    float* s = sums + q0;
    std::fill(s, s + n, 0.0f);
    if constexpr (!std::is_same_v<T, Half>) {
      add_rows(a + q0, rows, cols, n, s);
    } else {
      float wide[kRows * kCols];
      for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
        const int64_t m = std::min(rows - r0, kRows);
        for (int64_t r = 0; r < m; ++r) {
          convert(a + (r0 + r) * cols + q0, dtype_of<T>, wide + r * kCols,
                  Dtype::f32, static_cast<size_t>(n));
        }
        add_rows(wide, m, kCols, n, s);
      }
    }
  }
}

template void column_sums(const float*, int64_t, int64_t, float*);
template void column_sums(const Half*, int64_t, int64_t, float*);
template void column_sums(const BFloat16*, int64_t, int64_t, float*);

}  // namespace mg::cpu
