// cpu_utils.hpp's loops compiled per vector ISA.
#include <mixgraph/functions/cpu/cpu_utils.hpp>

#include <algorithm>

#include <mixgraph/contexts/cpu/isa_loops.hpp>

namespace mg::cpu {

namespace {
// Each column summed down the rows in order, at every vector width: the
// same bits on every path (compiled for the baseline alone it ran 4 wide,
// 2.7% of an LSTM step).
namespace sum_loops {
#define MG_SUM_LOOPS(NS, TARGET)                                      \
  namespace NS {                                                      \
  TARGET void column_sums(const float* a, int64_t rows, int64_t cols, \
                          int64_t q0, int64_t q1, float* sums) {      \
    std::fill(sums + q0, sums + q1, 0.0f);                            \
    for (int64_t r = 0; r < rows; ++r) {                              \
      const float* row = a + r * cols;                                \
      for (int64_t q = q0; q < q1; ++q) sums[q] += row[q];            \
    }                                                                 \
  }                                                                   \
  }
MG_FOR_EACH_VECTOR_ISA(MG_SUM_LOOPS)
#undef MG_SUM_LOOPS
}  // namespace sum_loops
}  // namespace

void column_sums(const float* a, int64_t rows, int64_t cols, float* sums) {
  constexpr int64_t kCols = 256;
#pragma omp parallel for schedule(static) if (rows * cols >= parallel_min())
  for (int64_t q0 = 0; q0 < cols; q0 += kCols) {
    const int64_t q1 = std::min(cols, q0 + kCols);
    using namespace sum_loops;
    [&] { MG_CALL_VECTOR_ISA(column_sums(a, rows, cols, q0, q1, sums)); }();
  }
}

}  // namespace mg::cpu
