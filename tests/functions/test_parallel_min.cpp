// cpu::parallel_min_for, the rule for when a loop of the CPU functions
// wakes the thread team: only for big loops where OpenMP's team sleeps
// between regions (OMP_WAIT_POLICY=passive), or at what
// MIXGRAPH_PARALLEL_MIN forces; loops of an exp an element sooner. And the
// copies that take the team above it (store(), the recurrent backend's
// rows), checked on both sides of it and inside a team.
#include <gtest/gtest.h>

#include <omp.h>

#include <vector>

#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/recurrent_backend.hpp>

namespace mg::test {
namespace {

TEST(ParallelMin, PassiveTeamsWaitForBiggerLoops) {
  EXPECT_EQ(cpu::parallel_min_for(nullptr, nullptr), 1 << 15);
  EXPECT_EQ(cpu::parallel_min_for("active", nullptr), 1 << 15);
  EXPECT_EQ(cpu::parallel_min_for("passive", nullptr), 1 << 20);
  EXPECT_EQ(cpu::parallel_min_for("PASSIVE", nullptr), 1 << 20);
  EXPECT_EQ(cpu::parallel_min_for("passive", "5000"), 5000);
  EXPECT_EQ(cpu::parallel_min_for(nullptr, "1"), 1);
  // What is not a positive count is ignored.
  for (const char* bad : {"", "0", "-3", "12abc", "lots"}) {
    EXPECT_EQ(cpu::parallel_min_for("passive", bad), 1 << 20) << bad;
  }
  EXPECT_GT(cpu::parallel_min(), 0);
  EXPECT_LE(cpu::kParallelMinCompute, cpu::parallel_min_for(nullptr, nullptr));
}

// The softmax tiles' exps pay for a passive team's wake at a quarter of
// the elements; below 1 << 18 the general rule (active, forced) stands.
TEST(ParallelMin, LoopsOfExpsWakeTheTeamSooner) {
  EXPECT_EQ(
      cpu::parallel_min_exp_for(cpu::parallel_min_for("passive", nullptr)),
      1 << 18);
  EXPECT_EQ(cpu::parallel_min_exp_for(cpu::parallel_min_for("active", nullptr)),
            1 << 15);
  EXPECT_EQ(cpu::parallel_min_exp_for(cpu::parallel_min_for("passive", "5000")),
            5000);
  EXPECT_EQ(cpu::parallel_min_exp(),
            cpu::parallel_min_exp_for(cpu::parallel_min()));
  EXPECT_LE(cpu::parallel_min_exp(), cpu::parallel_min());
}

// Sizes below the team's threshold, above it (not a multiple of the team
// or of a block), and one of each run from inside a team's thread.
std::vector<int64_t> store_sizes() {
  return {0, 1000, cpu::parallel_min() + 13};
}

// Small integers and halves: exact in every type, and so are their sums.
std::vector<float> exact_values(int64_t n, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i % 97) / 2 + offset;
  return v;
}

template <class T>
void check_store(int64_t n, bool accum, bool in_team) {
  const auto src = exact_values(n, 1.0f);
  const auto old = exact_values(n, -3.0f);
  std::vector<T> dst(old.begin(), old.end());
  if (in_team) {
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      cpu::store(src.data(), dst.data(), n, accum);
    }
  } else {
    cpu::store(src.data(), dst.data(), n, accum);
  }
  for (int64_t i = 0; i < n; ++i) {
    const float want = accum ? old[i] + src[i] : src[i];
    ASSERT_EQ(static_cast<float>(dst[i]), want)
        << "element " << i << " of " << n << (accum ? ", accum" : "")
        << (in_team ? ", in a team" : "");
  }
}

// Column sums (a bias's grad) of float, half and bfloat16 rows: each
// column summed down the rows in order in fp32, as one thread adding one
// widened row after another would: the same bits on the team, across the
// blocks of columns and half's rows' widening in pieces (1100 rows: not a
// multiple of its 16; 1000 columns: not of the blocks' 16 nor of half's
// 256; 1.1M values: past every team threshold).
template <class T>
void expect_column_sums_in_row_order() {
  const int64_t rows = 1100, cols = 1000;
  std::vector<T> a(rows * cols);
  // Every fifth row large and positive: the sums grow past the small
  // values' last bits, so that another order of the rows rounds every
  // column otherwise in every type (with values of both signs alone, the
  // sums stayed below 4096 and bf16's summed exactly in any order).
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float k = static_cast<float>((i * 7 + i / cols * 3) % 23);
    a[i] =
        T(i / cols % 5 == 0 ? 300.0f * (0.37f * k + 0.5f) : 0.37f * k - 4.1f);
  }
  std::vector<float> want(cols, 0.0f), got(cols, -1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < cols; ++q) {
      want[q] += static_cast<float>(a[r * cols + q]);
    }
  }
  cpu::column_sums(a.data(), rows, cols, got.data());
  EXPECT_EQ(got, want) << dtype_name(dtype_of<T>);
}

TEST(ColumnSums, SumDownTheRowsInOrderInEveryType) {
  expect_column_sums_in_row_order<float>();
  expect_column_sums_in_row_order<Half>();
  expect_column_sums_in_row_order<BFloat16>();
}

TEST(Store, CopiesAndAddsOnEitherSideOfTheTeamThreshold) {
  for (const int64_t n : store_sizes()) {
    for (const bool accum : {false, true}) {
      for (const bool in_team : {false, true}) {
        check_store<float>(n, accum, in_team);
        check_store<Half>(n, accum, in_team);
        check_store<BFloat16>(n, accum, in_team);
      }
    }
  }
}

TEST(Store, ACopyOntoItselfIsLeftAlone) {
  auto v = exact_values(cpu::parallel_min() + 13, 0.0f);
  const auto want = v;
  cpu::store(v.data(), v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(v, want);
}

// The recurrent driver's weight split and grad gather: rows of a wider
// matrix, strided on both sides.
TEST(RecurrentBackend, CopiesRowsOnEitherSideOfTheTeamThreshold) {
  cpu::RecurrentBackend<float> be;
  const int64_t cols = 37, src_stride = 50, dst_stride = 41;
  for (const int64_t rows :
       {int64_t{0}, int64_t{3}, cpu::parallel_min() / cols + 5}) {
    const auto src = exact_values(rows * src_stride, 1.0f);
    std::vector<float> dst(static_cast<size_t>(rows * dst_stride), -1.0f);
    be.copy_rows(src.data(), src_stride, dst.data(), dst_stride, rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < dst_stride; ++c) {
        const float want = c < cols ? src[r * src_stride + c] : -1.0f;
        ASSERT_EQ(dst[r * dst_stride + c], want)
            << "row " << r << " column " << c << " of " << rows << " rows";
      }
    }
  }
}

}  // namespace
}  // namespace mg::test
