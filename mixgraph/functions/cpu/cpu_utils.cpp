// The thresholds of cpu_utils.hpp that depend on the process's setup, and
// its loops compiled per vector ISA.
#include <mixgraph/functions/cpu/cpu_utils.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include <mixgraph/contexts/cpu/isa_loops.hpp>

namespace mg::cpu {

int64_t parallel_min_for(const char* wait_policy, const char* forced) {
  if (forced) {
    char* end = nullptr;
    const long long n = std::strtoll(forced, &end, 10);
    if (end != forced && *end == '\0' && n > 0) return n;
  }
  std::string policy = wait_policy ? wait_policy : "";
  for (char& c : policy) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return policy == "passive" ? int64_t{1} << 20 : int64_t{1} << 15;
}

int64_t parallel_min() {
  static const int64_t min = parallel_min_for(
      std::getenv("OMP_WAIT_POLICY"), std::getenv("MIXGRAPH_PARALLEL_MIN"));
  return min;
}

int64_t parallel_min_exp() { return parallel_min_exp_for(parallel_min()); }

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
