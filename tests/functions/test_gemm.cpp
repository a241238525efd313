// cpu::gemm, the oneDNN matrix product under Affine: every operand and
// output type it takes, against a double reference.
#include <gtest/gtest.h>
#include <omp.h>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/cpu/gemm_bf16.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../support/function_tester.hpp"

namespace mg::test::gemm_tests {
namespace {

// Values k / 32 with |k| <= 32: exact in half, bfloat16 and float, so the
// reference sees the same operands as every path, and products and their
// fp32 sums are exact: what differs is only the rounding of the result.
std::vector<float> grid_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-32, 32);
  std::vector<float> v(n);
  for (float& x : v) x = k(rng) / 32.0f;
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  std::vector<T> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = T(v[i]);
  return r;
}

// op(B) = b (k x n) stored as it is, or transposed (n x k) where tb.
std::vector<float> stored_b(const std::vector<float>& b, int64_t k, int64_t n,
                            bool tb) {
  std::vector<float> stored(k * n);
  for (int64_t l = 0; l < k; ++l) {
    for (int64_t j = 0; j < n; ++j) {
      stored[tb ? j * k + l : l * n + j] = b[l * n + j];
    }
  }
  return stored;
}

// f(j0, j1) for three bands of whole panels of w columns over n (the
// last the widest, ending at n), as threads would share C's columns.
template <class F>
void for_three_bands(int64_t n, int64_t w, F&& f) {
  const int64_t panels = (n + w - 1) / w;
  for (int64_t band = 0; band < 3; ++band) {
    f(panels * band / 3 * w, std::min(n, panels * (band + 1) / 3 * w));
  }
}

// C (m x n) = op(A) op(B) + bias + (accum ? C0 : 0), in double.
Doubles gemm_ref(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const std::vector<float>& a, const std::vector<float>& b,
                 const std::vector<float>& bias, const std::vector<float>& c0) {
  Doubles c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias.empty() ? 0.0 : bias[j];
      if (!c0.empty()) s += c0[i * n + j];
      for (int64_t l = 0; l < k; ++l) {
        const double x = ta ? a[l * m + i] : a[i * k + l];
        const double y = tb ? b[j * k + l] : b[l * n + j];
        s += x * y;
      }
      c[i * n + j] = s;
    }
  }
  return c;
}

template <class T>
Doubles doubles(const std::vector<T>& v) {
  Doubles d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
  return d;
}

// Runs gemm<C> with A of type TA and B of type TB on every transpose
// combination, with and without bias and accumulation. rtol is the
// rounding of one C element (0 for float: sums of grid products are exact).
template <class C, class TA, class TB>
void check_gemm(double rtol) {
  const int64_t m = 37, n = 21, k = 45;  // no multiple of a vector width
  const auto a = grid_values(m * k, 1), b = grid_values(k * n, 2);
  const auto bias = grid_values(n, 3), c0 = grid_values(m * n, 4);
  const auto a_t = as<TA>(a);
  const auto b_t = as<TB>(b);
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    for (int variant = 0; variant < 2; ++variant) {
      const bool with_bias = variant == 1, accum = variant == 1;
      SCOPED_TRACE("ta " + std::to_string(ta) + " tb " + std::to_string(tb) +
                   (with_bias ? " bias and accum" : ""));
      std::vector<C> c = as<C>(accum ? c0 : std::vector<float>(m * n, 7.0f));
      cpu::gemm<C>(ta, tb, m, n, k, cpu::Operand{a_t.data(), dtype_of<TA>},
                   cpu::Operand{b_t.data(), dtype_of<TB>}, c.data(),
                   with_bias ? bias.data() : nullptr, accum);
      expect_near(doubles(c),
                  gemm_ref(ta, tb, m, n, k, a, b,
                           with_bias ? bias : std::vector<float>{},
                           accum ? c0 : std::vector<float>{}),
                  1e-6, rtol, "C");
    }
  }
}

TEST(Gemm, Float) { check_gemm<float, float, float>(0); }

// Affine's half forward: half activations, the fp32 master weight as is.
TEST(Gemm, HalfOutputWithFloatWeights) { check_gemm<Half, Half, float>(1e-3); }
TEST(Gemm, HalfOutputWithHalfOperands) { check_gemm<Half, Half, Half>(1e-3); }

// Affine's weight grad in a half pass: half operands, an fp32 grad.
TEST(Gemm, FloatOutputFromHalfOperands) { check_gemm<float, Half, Half>(0); }

// bf16 operands into fp32 (oneDNN's bf16 kernels where the CPU has them).
TEST(Gemm, FloatOutputFromBFloat16Operands) {
  check_gemm<float, BFloat16, BFloat16>(0);
}
TEST(Gemm, BFloat16OutputWithFloatWeights) {
  check_gemm<BFloat16, BFloat16, float>(8e-3);
}
TEST(Gemm, BFloat16Output) { check_gemm<BFloat16, BFloat16, BFloat16>(8e-3); }

// A batched half product (attention's), fp32 underneath, with accumulation
// and every transpose: each matrix against the reference, at sizes past a
// vector width and a cache block.
TEST(Gemm, HalfBatchedWithAccumulation) {
  const int64_t batch = 3, m = 300, n = 40, k = 500;
  const auto a = grid_values(batch * m * k, 5),
             b = grid_values(batch * k * n, 6);
  const auto c0 = grid_values(batch * m * n, 7);
  const auto a_h = as<Half>(a), b_h = as<Half>(b);
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    SCOPED_TRACE("ta " + std::to_string(ta) + " tb " + std::to_string(tb));
    std::vector<Half> c = as<Half>(c0);
    cpu::gemm<Half>(ta, tb, m, n, k, a_h.data(), b_h.data(), c.data(), nullptr,
                    /*accum=*/true, batch);
    for (int64_t e = 0; e < batch; ++e) {
      SCOPED_TRACE("matrix " + std::to_string(e));
      auto part = [](const std::vector<float>& v, int64_t e, int64_t size) {
        return std::vector<float>(v.begin() + e * size,
                                  v.begin() + (e + 1) * size);
      };
      const std::vector<Half> ce(c.begin() + e * m * n,
                                 c.begin() + (e + 1) * m * n);
      expect_near(doubles(ce),
                  gemm_ref(ta, tb, m, n, k, part(a, e, m * k),
                           part(b, e, k * n), {}, part(c0, e, m * n)),
                  1e-6, 1e-3, "C");
    }
  }
}

// cpu::gemm_packed, gemm()'s product for 16-bit operands, called directly
// so that every CPU tests it: on shapes that cross each block of both of
// its tiles (6 and 12 rows, 16 and 32 columns, 144 and 192 rows of A, 512
// and 2048 columns of B, 256 and 512 of k; a batch taken a matrix per thread;
// C shared out by columns in bands narrower than a block of B, whose packs
// are sized to the band), every transpose, with and without bias and
// accumulation. Each tile the CPU can run is checked: the AVX-512 one where
// it is there, with KC 256 and 512, and the AVX2 one always (the AVX-512 one
// held back by a ScopedCpuFeatures).
struct PackedTile {
  std::string name;
  cpu::CpuFeatures features;
  cpu::PackedDepth depth;
};
std::vector<PackedTile> packed_tiles() {
  std::vector<PackedTile> tiles;
  const cpu::CpuFeatures all = cpu::detected_cpu_features();
  if (all.avx512f) {
    tiles.push_back({"avx512 tile, KC 256", all, cpu::PackedDepth::short_k});
    tiles.push_back({"avx512 tile, KC 512", all, cpu::PackedDepth::long_k});
  }
  cpu::CpuFeatures avx2;
  avx2.avx2 = all.avx2;
  avx2.f16c = all.f16c;
  tiles.push_back({"avx2 tile", avx2, cpu::PackedDepth::automatic});
  return tiles;
}

// f() on each of packed_tiles(), with its ISA and depth set and its name
// traced.
template <class F>
void on_each_packed_tile(F&& f) {
  for (const auto& [tile, features, depth] : packed_tiles()) {
    const cpu::ScopedCpuFeatures path(features);
    const cpu::ScopedPackedDepth kc(depth);
    SCOPED_TRACE(tile);
    f();
  }
}

template <class C, class TA, class TB>
void check_gemm_packed(double rtol) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  struct Shape {
    int64_t m, n, k, batch;
  };
  for (const auto& [tile, features, depth] : packed_tiles()) {
    const cpu::ScopedCpuFeatures path(features);
    const cpu::ScopedPackedDepth kc(depth);
    ASSERT_EQ(cpu::gemm_packed_avx512(), features.avx512f) << tile;
    SCOPED_TRACE(tile);
    for (const Shape s :
         {Shape{37, 21, 45, 1}, Shape{7, 2065, 520, 1}, Shape{150, 40, 300, 1},
          Shape{200, 70, 600, 1}, Shape{64, 48, 300, 6}, Shape{5, 3, 1, 3},
          Shape{20, 300, 700, 1}}) {
      const int64_t m = s.m, n = s.n, k = s.k, batch = s.batch;
      const auto a = grid_values(batch * m * k, 11),
                 b = grid_values(batch * k * n, 12);
      const auto bias = grid_values(n, 13), c0 = grid_values(batch * m * n, 14);
      const auto a_t = as<TA>(a);
      const auto b_t = as<TB>(b);
      for (int t = 0; t < 8; ++t) {
        const bool ta = t & 1, tb = t & 2, accum = t & 4;
        const bool with_bias = accum && batch == 1;
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) +
                     " k " + std::to_string(k) + " batch " +
                     std::to_string(batch) + (ta ? " ta" : "") +
                     (tb ? " tb" : "") + (accum ? " accum" : "") +
                     (with_bias ? " bias" : ""));
        std::vector<C> c =
            as<C>(accum ? c0 : std::vector<float>(batch * m * n, 7.0f));
        bool finite = false;
        cpu::gemm_packed<C>(
            ta, tb, m, n, k, cpu::Operand{a_t.data(), dtype_of<TA>},
            cpu::Operand{b_t.data(), dtype_of<TB>}, c.data(),
            with_bias ? bias.data() : nullptr, accum, batch, &finite);
        // Every value is finite: an fp32 C says so, a 16-bit one cannot.
        EXPECT_EQ(finite, (std::is_same_v<C, float>)) << "c_finite";
        auto part = [](const std::vector<float>& v, int64_t e, int64_t size) {
          return std::vector<float>(v.begin() + e * size,
                                    v.begin() + (e + 1) * size);
        };
        for (int64_t e = 0; e < batch; ++e) {
          const std::vector<C> ce(c.begin() + e * m * n,
                                  c.begin() + (e + 1) * m * n);
          expect_near(
              doubles(ce),
              gemm_ref(ta, tb, m, n, k, part(a, e, m * k), part(b, e, k * n),
                       with_bias ? bias : std::vector<float>{},
                       accum ? part(c0, e, m * n) : std::vector<float>{}),
              1e-6, rtol, "C");
        }
      }
    }
  }
}

TEST(GemmPacked, Float) { check_gemm_packed<float, float, float>(0); }
TEST(GemmPacked, HalfOutputWithFloatWeights) {
  check_gemm_packed<Half, Half, float>(1e-3);
}
TEST(GemmPacked, HalfOutputWithHalfOperands) {
  check_gemm_packed<Half, Half, Half>(1e-3);
}
TEST(GemmPacked, FloatOutputFromHalfOperands) {
  check_gemm_packed<float, Half, Half>(0);
}
TEST(GemmPacked, FloatOutputFromBFloat16Operands) {
  check_gemm_packed<float, BFloat16, BFloat16>(0);
}
TEST(GemmPacked, BFloat16Output) {
  check_gemm_packed<BFloat16, BFloat16, BFloat16>(8e-3);
}

// A product called where OpenMP gives it a team of one (inside another
// parallel region) still runs the bands its packs were sized for, one after
// the other: the same bits as the team's, and (under ASan) no pack overrun
// where the packs hold a band of C's columns, not all of B's.
TEST(GemmPacked, ATeamOfOneRunsEveryBand) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "one thread: no bands";
  const int64_t m = 20, n = 300, k = 700;  // by columns, bands of 160
  const auto a = as<Half>(grid_values(m * k, 21));
  const auto b = as<Half>(grid_values(k * n, 22));
  auto product = [&](std::vector<float>& c) {
    cpu::gemm_packed<float>(
        false, false, m, n, k, cpu::Operand{a.data(), Dtype::f16},
        cpu::Operand{b.data(), Dtype::f16}, c.data(), nullptr, false, 1);
  };
  std::vector<float> team(m * n), alone(m * n);
  product(team);
  int inner_team = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
#pragma omp parallel
      inner_team = omp_get_num_threads();
      product(alone);
    }
  }
  ASSERT_EQ(inner_team, 1) << "nested regions ran with more than one thread";
  EXPECT_EQ(team, alone);
}

// An inf in a half operand (a loss scale too large) reaches C as inf or
// nan, where the loss scaler looks for it, whichever block it falls in.
TEST(GemmPacked, AnInfReachesC) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  for (const auto& [tile, features, depth] : packed_tiles()) {
    const cpu::ScopedCpuFeatures path(features);
    const cpu::ScopedPackedDepth kc(depth);
    SCOPED_TRACE(tile);
    const int64_t m = 20, n = 40, k = 600;
    std::vector<Half> a(m * k, Half(1.0f)), b(k * n, Half(1.0f));
    a[13 * k + 517] = Half(std::numeric_limits<float>::infinity());
    std::vector<Half> c(m * n);
    cpu::gemm_packed<Half>(
        false, false, m, n, k, cpu::Operand{a.data(), Dtype::f16},
        cpu::Operand{b.data(), Dtype::f16}, c.data(), nullptr, false, 1);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float v = static_cast<float>(c[i * n + j]);
        if (i == 13) {
          EXPECT_TRUE(std::isinf(v)) << "C(13, " << j << ") = " << v;
        } else {
          EXPECT_EQ(v, static_cast<float>(k)) << "C(" << i << ", " << j << ")";
        }
      }
    }
  }
}

// Whether an fp32 C came out finite, told by the product that wrote it
// (the loss scaler then skips its check of a parameter's grad): false
// wherever one value is not, whether an operand's inf brought it, the sums
// overflowed fp32, accum's C held it, it fell in a whole tile or in the
// columns past the last (C's right edge), in one matrix of a batch; and
// false for a 16-bit C, which the product does not watch. Each tile, each
// depth (k 600 crosses two or three blocks of k).
TEST(GemmPacked, ReportsWhetherCIsFinite) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  const float inf = std::numeric_limits<float>::infinity();
  // 40 columns: a whole tile of 32 (16 held to AVX2) and an edge of 8 (or
  // 16 and 8); 20 rows: whole tiles and a shorter one.
  const int64_t m = 20, n = 40, k = 600;
  struct Case {
    std::string what;
    int64_t batch;
    std::function<void(std::vector<float>& a, std::vector<float>& b,
                       std::vector<float>& c)>
        spoil;
    bool accum = false;
  };
  const std::vector<Case> cases{
      {"every value finite", 1, [](auto&, auto&, auto&) {}},
      {"an inf in A's row 13", 1,
       [&](auto& a, auto&, auto&) { a[13 * k + 517] = inf; }},
      {"a nan in B's column 3 (a whole tile)", 1,
       [&](auto&, auto& b, auto&) { b[77 * n + 3] = std::nanf(""); }},
      {"an inf in B's column 39 (C's edge)", 1,
       [&](auto&, auto& b, auto&) { b[599 * n + 39] = inf; }},
      {"sums past fp32's range from finite operands", 1,
       [&](auto& a, auto& b, auto&) { a[5 * k + 2] = b[2 * n + 37] = 3e20f; }},
      {"an inf in accum's C at the edge", 1,
       [&](auto&, auto&, auto& c) { c[19 * n + 38] = inf; }, true},
      {"a nan in the second of three matrices", 3,
       [&](auto& a, auto&, auto&) { a[m * k + 7] = std::nanf(""); }},
  };
  on_each_packed_tile([&] {
    for (const Case& cs : cases) {
      SCOPED_TRACE(cs.what);
      std::vector<float> a(cs.batch * m * k, 1.0f), b(cs.batch * k * n, 0.5f),
          c(cs.batch * m * n, 2.0f);
      cs.spoil(a, b, c);
      const bool expected = cs.what == "every value finite";
      const std::vector<Half> b_half = as<Half>(b);
      bool finite = !expected;
      cpu::gemm_packed<float>(false, false, m, n, k,
                              cpu::Operand{a.data(), Dtype::f32},
                              cpu::Operand{b.data(), Dtype::f32}, c.data(),
                              nullptr, cs.accum, cs.batch, &finite);
      EXPECT_EQ(finite, expected);
      const bool any_bad = std::any_of(
          c.begin(), c.end(), [](float v) { return !std::isfinite(v); });
      EXPECT_EQ(any_bad, !expected) << "the case itself";
      if (cs.what.rfind("sums past", 0) == 0) continue;  // half holds no 3e20
      // A half C is not watched: unknown, so false.
      std::vector<Half> c_half = as<Half>(std::vector<float>(cs.batch * m * n));
      finite = true;
      cpu::gemm_packed<Half>(false, false, m, n, k,
                             cpu::Operand{a.data(), Dtype::f32},
                             cpu::Operand{b_half.data(), Dtype::f16},
                             c_half.data(), nullptr, false, cs.batch, &finite);
      EXPECT_FALSE(finite) << "half C";
    }
  });
}

// The same on a team: a value that is not finite in the part of C that the
// team's last thread writes (its band of columns, of rows, or its matrices
// of a batch) makes c_finite false, in a whole tile or at C's edge; so
// each thread's watch is read, not only the first's.
TEST(GemmPacked, ReportsANonFiniteValueInAnyThreadsPart) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  if (omp_get_max_threads() < 2) GTEST_SKIP() << "one thread: no team";
  struct Case {
    std::string what;
    int64_t m, n, k, batch;
    std::function<void(std::vector<float>& a, std::vector<float>& b)> spoil;
  };
  // 2 m n k batch above kProductTeamFlops in each.
  const std::vector<Case> cases{
      {"bands of columns: a nan in B's column 570 (a whole tile)", 24, 600, 400,
       1, [](auto&, auto& b) { b[123 * 600 + 570] = std::nanf(""); }},
      {"bands of columns: an inf in B's column 599 (C's edge)", 24, 600, 400, 1,
       [](auto&, auto& b) {
         b[5 * 600 + 599] = std::numeric_limits<float>::infinity();
       }},
      {"bands of rows: one sum past fp32's range in row 590, column 5", 600, 40,
       400, 1,
       [](auto& a, auto& b) { a[590 * 400 + 7] = b[7 * 40 + 5] = 3e20f; }},
      {"a matrix each: a nan in the last matrix", 64, 64, 300,
       2 * omp_get_max_threads(),
       [](auto& a, auto&) { a[a.size() - 100] = std::nanf(""); }},
  };
  on_each_packed_tile([&] {
    for (const Case& cs : cases) {
      SCOPED_TRACE(cs.what);
      ASSERT_GE(2.0 * cs.m * cs.n * cs.k * cs.batch, cpu::kProductTeamFlops);
      std::vector<float> a(cs.batch * cs.m * cs.k, 1.0f),
          b(cs.batch * cs.k * cs.n, 0.5f), c(cs.batch * cs.m * cs.n);
      bool finite = false;
      cpu::gemm_packed<float>(false, false, cs.m, cs.n, cs.k,
                              cpu::Operand{a.data(), Dtype::f32},
                              cpu::Operand{b.data(), Dtype::f32}, c.data(),
                              nullptr, false, cs.batch, &finite);
      EXPECT_TRUE(finite) << "every value finite";
      cs.spoil(a, b);
      cpu::gemm_packed<float>(false, false, cs.m, cs.n, cs.k,
                              cpu::Operand{a.data(), Dtype::f32},
                              cpu::Operand{b.data(), Dtype::f32}, c.data(),
                              nullptr, false, cs.batch, &finite);
      EXPECT_FALSE(finite);
      EXPECT_TRUE(std::any_of(c.begin(), c.end(), [](float v) {
        return !std::isfinite(v);
      })) << "the case itself";
    }
  });
}

// gemm() tells only where its own product wrote an fp32 C: oneDNN's
// kernels (fp32 operands and C, a product this small on every CPU) are not
// watched.
TEST(Gemm, SaysCIsFiniteOnlyWhereItsOwnProductWatched) {
  const int64_t m = 8, n = 24, k = 16;
  const std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f);
  const std::vector<Half> a_half = as<Half>(a);
  std::vector<float> c(m * n);
  bool finite = true;
  cpu::gemm<float>(false, false, m, n, k, cpu::Operand{a.data(), Dtype::f32},
                   cpu::Operand{b.data(), Dtype::f32}, c.data(), nullptr, false,
                   1, &finite);
  EXPECT_FALSE(finite) << "oneDNN's fp32 product";
  if (!cpu::gemm_converts_operands()) GTEST_SKIP() << "no product of ours";
  cpu::gemm<float>(
      false, false, m, n, k, cpu::Operand{a_half.data(), Dtype::f16},
      cpu::Operand{b.data(), Dtype::f32}, c.data(), nullptr, false, 1, &finite);
  EXPECT_TRUE(finite) << "ours, a half operand";
}

// PackedB, B packed once for many products (a recurrent layer's steps):
// every product reads its own A and the B it was given, copied when packed,
// on shapes that cross every block of both tiles (k in blocks of 512 with a
// part left; n past each tile's NC, with a thread's share of the columns
// starting past column 0; rows that fill no tile), B stored either way and
// of every float type, with and without bias and accumulation.
TEST(GemmPacked, PackedBAgainstTheReference) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  struct Shape {
    int64_t m, n, k;
  };
  for (const auto& [tile, features, depth] : packed_tiles()) {
    if (depth == cpu::PackedDepth::long_k) continue;  // PackedB has its own
    const cpu::ScopedCpuFeatures path(features);
    SCOPED_TRACE(tile);
    for (const Shape s :
         {Shape{13, 100, 1100}, Shape{32, 530, 700}, Shape{7, 2065, 520},
          Shape{3, 4200, 40}, Shape{1, 3, 1}}) {
      const int64_t m = s.m, n = s.n, k = s.k;
      const auto b = grid_values(k * n, 21);
      const auto bias = grid_values(n, 22), c0 = grid_values(m * n, 23);
      for (const Dtype type : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        for (int t = 0; t < 4; ++t) {
          const bool tb = t & 1, accum = t & 2, with_bias = accum;
          SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) +
                       " k " + std::to_string(k) + " B " + dtype_name(type) +
                       (tb ? " tb" : "") + (accum ? ", bias and accum" : ""));
          std::vector<float> stored = stored_b(b, k, n, tb);
          const auto half = as<Half>(stored);
          const auto bf16 = as<BFloat16>(stored);
          const void* data = type == Dtype::f16 ? half.data()
                             : type == Dtype::bf16
                                 ? static_cast<const void*>(bf16.data())
                                 : stored.data();
          const cpu::PackedB packed(tb, n, k, cpu::Operand{data, type});
          stored.assign(stored.size(), 99.0f);  // packed: B was copied
          for (uint32_t call = 0; call < 2; ++call) {
            const auto a = grid_values(m * k, 24 + call);
            std::vector<float> c = accum ? c0 : std::vector<float>(m * n, 7.0f);
            packed.multiply(m, a.data(), c.data(),
                            with_bias ? bias.data() : nullptr, accum);
            expect_near(doubles(c),
                        gemm_ref(false, false, m, n, k, a, b,
                                 with_bias ? bias : std::vector<float>{},
                                 accum ? c0 : std::vector<float>{}),
                        1e-6, 0, "C");
            // The same C from three bands of whole panels (the last one
            // the widest, and ending at C's edge), each on this thread.
            std::vector<float> banded =
                accum ? c0 : std::vector<float>(m * n, 7.0f);
            for_three_bands(
                n, packed.panel_width(), [&](int64_t j0, int64_t j1) {
                  packed.multiply_columns(m, a.data(), banded.data(),
                                          with_bias ? bias.data() : nullptr,
                                          accum, j0, j1 - j0);
                });
            EXPECT_EQ(banded, c) << "C by bands of columns";
          }
        }
      }
    }
  }
  // Columns that start or end inside a panel (but at C's edge), or end
  // past C, are refused.
  const auto b = grid_values(40 * 100, 25), a = grid_values(2 * 40, 26);
  const cpu::PackedB packed(false, 100, 40, cpu::Operand{b.data(), Dtype::f32});
  std::vector<float> c(2 * 100);
  for (const auto& [j0, count] :
       {std::pair{int64_t{1}, int64_t{8}}, std::pair{int64_t{0}, int64_t{8}},
        std::pair{int64_t{0}, int64_t{101}}}) {
    try {
      packed.multiply_columns(2, a.data(), c.data(), nullptr, false, j0, count);
      ADD_FAILURE() << "columns from " << j0 << ", " << count << " of 100";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedB] columns"),
                std::string::npos)
          << e.what();
    }
  }
  // An empty B has nothing to pack (GemmFixedB does not make one).
  const float one = 1.0f;
  for (const auto& [n, k] : {std::pair{0, 4}, std::pair{4, 0}}) {
    try {
      cpu::PackedB empty(false, n, k, cpu::Operand{&one, Dtype::f32});
      ADD_FAILURE() << "a " << k << " x " << n << " B was packed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedB]"), std::string::npos)
          << e.what();
    }
  }
}

// PackedBf16B, the bf16 step product on AVX512-BF16: A and op(B) of
// grid values (exact in bf16, as are their products and fp32 sums) against
// the double reference, B stored either way and as fp32 or bf16, with and
// without bias and accumulation, on shapes with an odd k (the last pair
// half empty), a last panel part padding, rows that fill no tile, and A's
// and C's rows further apart than k and n; the same bits by bands of
// columns on this thread as the whole on the team. Bad bands, empty B and
// other types are refused by name.
TEST(GemmBf16, PackedBf16BAgainstTheReference) {
  if (!cpu::PackedBf16B::available()) GTEST_SKIP() << "no AVX512-BF16";
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s :
       {Shape{13, 100, 1101}, Shape{32, 2048, 512}, Shape{32, 512, 2048},
        Shape{7, 70, 3}, Shape{1, 3, 1}}) {
    const int64_t m = s.m, n = s.n, k = s.k;
    const auto b = grid_values(k * n, 41);
    const auto bias = grid_values(n, 42), c0 = grid_values(m * n, 43);
    for (const Dtype type : {Dtype::f32, Dtype::bf16}) {
      for (int t = 0; t < 4; ++t) {
        const bool tb = t & 1, accum = t & 2, with_bias = !accum;
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) +
                     " k " + std::to_string(k) + " B " + dtype_name(type) +
                     (tb ? " tb" : "") + (accum ? ", accum" : ", bias"));
        std::vector<float> stored = stored_b(b, k, n, tb);
        const auto bf16 = as<BFloat16>(stored);
        const void* data = type == Dtype::bf16
                               ? static_cast<const void*>(bf16.data())
                               : stored.data();
        const cpu::PackedBf16B packed(tb, n, k, cpu::Operand{data, type});
        stored.assign(stored.size(), 99.0f);  // packed: B was copied
        const auto a = grid_values(m * k, 44);
        const auto a16 = as<BFloat16>(a);
        std::vector<float> c = accum ? c0 : std::vector<float>(m * n, 7.0f);
        packed.multiply(m, a16.data(), c.data(),
                        with_bias ? bias.data() : nullptr, accum);
        expect_near(doubles(c),
                    gemm_ref(false, false, m, n, k, a, b,
                             with_bias ? bias : std::vector<float>{},
                             accum ? c0 : std::vector<float>{}),
                    1e-6, 0, "C");
        // Three bands of whole panels, A's rows k + 3 apart, C's n + 5.
        const int64_t lda = k + 3, ldc = n + 5;
        std::vector<BFloat16> wide_a(m * lda, BFloat16(-1.0f));
        for (int64_t i = 0; i < m; ++i) {
          std::copy(a16.begin() + i * k, a16.begin() + (i + 1) * k,
                    wide_a.begin() + i * lda);
        }
        std::vector<float> banded(m * ldc, 5.0f);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            banded[i * ldc + j] = accum ? c0[i * n + j] : 7.0f;
          }
        }
        for_three_bands(n, packed.panel_width(), [&](int64_t j0, int64_t j1) {
          packed.multiply_columns(m, wide_a.data(), lda, banded.data(), ldc,
                                  with_bias ? bias.data() : nullptr, accum, j0,
                                  j1 - j0);
        });
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            const float want = j < n ? c[i * n + j] : 5.0f;
            ASSERT_EQ(banded[i * ldc + j], want)
                << "row " << i << ", column " << j << " by bands";
          }
        }
      }
    }
  }
  const auto b = grid_values(40 * 100, 45);
  const auto a = as<BFloat16>(grid_values(2 * 40, 46));
  const cpu::PackedBf16B packed(false, 100, 40,
                                cpu::Operand{b.data(), Dtype::f32});
  std::vector<float> c(2 * 100);
  for (const auto& [j0, count] :
       {std::pair{int64_t{1}, int64_t{31}}, std::pair{int64_t{0}, int64_t{8}},
        std::pair{int64_t{0}, int64_t{101}}}) {
    try {
      packed.multiply_columns(2, a.data(), 40, c.data(), 100, nullptr, false,
                              j0, count);
      ADD_FAILURE() << "columns from " << j0 << ", " << count << " of 100";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedBf16B] columns"),
                std::string::npos)
          << e.what();
    }
  }
  // Rows of A closer than k, or of C closer than n, would overlap.
  for (const auto& [m, lda, ldc] :
       {std::tuple{int64_t{2}, int64_t{39}, int64_t{100}},
        std::tuple{int64_t{2}, int64_t{40}, int64_t{99}},
        std::tuple{int64_t{-1}, int64_t{40}, int64_t{100}}}) {
    try {
      packed.multiply_columns(m, a.data(), lda, c.data(), ldc, nullptr, false,
                              0, 32);
      ADD_FAILURE() << m << " rows " << lda << " and " << ldc << " apart";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedBf16B] "), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("B is 40 x 100"), std::string::npos)
          << e.what();
    }
  }
  const float one = 1.0f;
  const Half half_one(1.0f);
  for (const auto& [n, k, operand] :
       {std::tuple{0, 4, cpu::Operand{&one, Dtype::f32}},
        std::tuple{4, 0, cpu::Operand{&one, Dtype::f32}},
        std::tuple{1, 1, cpu::Operand{&half_one, Dtype::f16}}}) {
    try {
      cpu::PackedBf16B refused(false, n, k, operand);
      ADD_FAILURE() << "a " << k << " x " << n << " B was packed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedBf16B] B is"),
                std::string::npos)
          << e.what();
    }
  }
}

// A PackedB written in place through panel_row() (Winograd's transformed
// kernels are computed straight into their packs) multiplies exactly as
// one packed from the same B: rows across KC's blocks (k 700), a last
// panel part padding (its columns past n zero without being written, as
// the packing constructor leaves them: garbage there is never summed into
// C, but could hold slow subnormals), on each tile's panel width. Empty sizes
// are refused as the packing constructor refuses them.
TEST(GemmPacked, PackedBWrittenInPlace) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  for (const auto& [tile, features, depth] : packed_tiles()) {
    if (depth == cpu::PackedDepth::long_k) continue;
    const cpu::ScopedCpuFeatures path(features);
    SCOPED_TRACE(tile);
    const int64_t m = 13, n = 70, k = 700;
    const auto b = grid_values(k * n, 31), a = grid_values(m * k, 32);
    const cpu::PackedB packed(false, n, k, cpu::Operand{b.data(), Dtype::f32});
    cpu::PackedB written(n, k);
    ASSERT_EQ(written.panel_width(), packed.panel_width());
    const int64_t w = written.panel_width(), last = (n - 1) / w * w;
    for (int64_t q = 0; q < k; ++q) {  // the padding, as the packing's
      const float* row = written.panel_row(q, last);
      for (int64_t j = n - last; j < w; ++j) ASSERT_EQ(row[j], 0.0f) << q;
    }
    for (int64_t q = 0; q < k; ++q) {
      for (int64_t j0 = 0; j0 < n; j0 += w) {
        float* row = written.panel_row(q, j0);
        for (int64_t j = j0; j < std::min(n, j0 + w); ++j) {
          row[j - j0] = b[q * n + j];
        }
      }
    }
    std::vector<float> c(m * n, 7.0f), c_written(m * n, 7.0f);
    packed.multiply(m, a.data(), c.data(), nullptr, false);
    written.multiply(m, a.data(), c_written.data(), nullptr, false);
    EXPECT_EQ(c_written, c);
  }
  for (const auto& [n, k] : {std::pair{0, 4}, std::pair{4, 0}}) {
    try {
      cpu::PackedB empty(n, k);
      ADD_FAILURE() << "a " << k << " x " << n << " B was made";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[PackedB] B is"), std::string::npos)
          << e.what();
    }
  }
}

// Integer data is never read as a float type: an operand of another type
// is refused by name, and C is left as it was.
TEST(GemmPacked, RefusesOperandsOfOtherTypes) {
  const std::vector<int32_t> ids(6, 1);
  const std::vector<float> w(6, 1.0f);
  std::vector<float> c(4, 7.0f);
  expect_error(
      [&] {
        cpu::gemm_packed<float>(
            false, false, 2, 2, 3, cpu::Operand{w.data(), Dtype::f32},
            cpu::Operand{ids.data(), Dtype::i32}, c.data(), nullptr, false, 1);
      },
      {"operand B is ", dtype_name(Dtype::i32), "float, half and bfloat16"},
      "[gemm_packed]");
  EXPECT_EQ(c, std::vector<float>(4, 7.0f));
}

// C += op(A) op(B) + bias against the reference, with fp32 operands and C
// and with half ones (grid values, exact in half, from `seed` on).
void expect_float_and_half_products(bool ta, bool tb, int64_t m, int64_t n,
                                    int64_t k, uint32_t seed) {
  const auto a = grid_values(k * m, seed), b = grid_values(k * n, seed + 1);
  const auto bias = grid_values(n, seed + 2), c0 = grid_values(m * n, seed + 3);
  const auto a_h = as<Half>(a), b_h = as<Half>(b);
  const auto ref = gemm_ref(ta, tb, m, n, k, a, b, bias, c0);
  std::vector<float> c = c0;
  cpu::gemm<float>(ta, tb, m, n, k, a.data(), b.data(), c.data(), bias.data(),
                   /*accum=*/true);
  expect_near(doubles(c), ref, 1e-6, 0, "float C");
  std::vector<Half> ch = as<Half>(c0);
  cpu::gemm<Half>(ta, tb, m, n, k, cpu::Operand{a_h.data(), Dtype::f16},
                  cpu::Operand{b_h.data(), Dtype::f16}, ch.data(), bias.data(),
                  /*accum=*/true);
  expect_near(doubles(ch), ref, 1e-6, 1e-3, "half C");
}

// A transposed A with rows 1024 apart and a narrow C, a shape oneDNN
// 2.6's AVX2 sgemm read at half speed (fp32 runs ours there now): in float
// and in half, with bias and accumulation.
TEST(Gemm, ATransposedWithRowsOf1024) {
  for (const bool tb : {false, true}) {
    SCOPED_TRACE(tb ? "tb" : "plain B");
    expect_float_and_half_products(true, tb, 1024, 24, 40, 8);
  }
}

// A plain B with rows 1024 floats apart and few rows of C, which oneDNN
// 2.6's AVX2 sgemm read in place onto the same L1 sets (fp32 runs ours
// there now): float and half operands, A plain and transposed.
TEST(Gemm, PlainBWithRowsOf1024) {
  for (const int64_t m : {64, 100}) {
    for (const bool ta : {false, true}) {
      SCOPED_TRACE("m " + std::to_string(m) + (ta ? ", ta" : ", plain A"));
      expect_float_and_half_products(ta, false, m, 1024, 40, 20);
    }
  }
}

// Products with C of 256 rows and columns or more, each way of transposing:
// where gemm() hands fp32 ones to our product (AVX2; plain operands on an
// Intel CPU with AVX-512) and where to oneDNN's, C is the reference's, with
// bias and accumulation.
TEST(Gemm, FloatProductsOf256RowsAndColumnsAgainstTheReference) {
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    SCOPED_TRACE(std::string(ta ? "ta" : "plain A") + (tb ? ", tb" : ""));
    expect_float_and_half_products(ta, tb, 260, 270, 45, 30 + t);
  }
}

// GemmFixedB, one B for many A (a recurrent layer's steps): each call
// against the reference, B changed after construction (it was copied),
// on every tb with and without bias and accumulation (fp32: our tile on
// a PackedB, which GemmPacked.PackedBAgainstTheReference tests further).
TEST(Gemm, FixedBEveryCallAgainstTheReference) {
  const int64_t m = 32, n = 100, k = 70;
  auto b = grid_values(k * n, 12);
  const auto bias = grid_values(n, 13), c0 = grid_values(m * n, 14);
  for (int t = 0; t < 4; ++t) {
    const bool tb = t & 1, with_bias = t & 2, accum = t & 2;
    SCOPED_TRACE(std::string(tb ? "tb" : "plain B") +
                 (with_bias ? ", bias and accum" : ""));
    const auto b_kept = b;
    const cpu::GemmFixedB product(
        tb, m, n, k, cpu::Operand{b.data(), Dtype::f32}, with_bias, accum);
    b.assign(b.size(), 99.0f);
    for (uint32_t call = 0; call < 2; ++call) {
      const auto a = grid_values(m * k, 15 + call);
      std::vector<float> c = accum ? c0 : std::vector<float>(m * n, 7.0f);
      product(cpu::Operand{a.data(), Dtype::f32}, c.data(),
              with_bias ? bias.data() : nullptr);
      expect_near(doubles(c),
                  gemm_ref(false, tb, m, n, k, a, b_kept,
                           with_bias ? bias : std::vector<float>{},
                           accum ? c0 : std::vector<float>{}),
                  1e-6, 0, "C");
    }
    b = b_kept;
  }
}

// A recurrent step's B (LSTM, hidden 512: m 32, both products) is stored
// once in the kernel's own layout, in fp32 and, where oneDNN computes in it,
// bf16: kept plain, oneDNN's AVX-512 kernels ran these 1.35x slower, and
// the bf16 ones (AMX) would repack B on every call.
TEST(Gemm, FixedBStoresBInTheKernelsLayout) {
  std::vector<Dtype> types{Dtype::f32};
  if (cpu::compute_type<BFloat16>() == Dtype::bf16)
    types.push_back(Dtype::bf16);
  const std::vector<float> b(2048 * 512);  // zeros, as fp32 or bf16
  for (const Dtype type : types) {
    for (const bool tb : {false, true}) {
      for (const auto& [n, k] : {std::pair{2048, 512}, std::pair{512, 2048}}) {
        SCOPED_TRACE(std::string(dtype_name(type)) + (tb ? " tb" : "") + " n " +
                     std::to_string(n));
        const cpu::GemmFixedB product(tb, 32, n, k,
                                      cpu::Operand{b.data(), type}, !tb, tb);
        EXPECT_TRUE(product.b_relaid());
      }
    }
  }
}

// The primitive and its argument memories are cached per shape and pointed
// at new data on every call.
TEST(Gemm, ACachedShapeReadsTheNewOperands) {
  const int64_t m = 3, n = 2, k = 2;
  std::vector<float> a1{1, 2, 3, 4, 5, 6}, a2{0, 1, 1, 0, 2, 2};
  std::vector<float> b{1, 0, 0, 1}, c1(m * n), c2(m * n);
  cpu::gemm<float>(false, false, m, n, k, a1.data(), b.data(), c1.data());
  cpu::gemm<float>(false, false, m, n, k, a2.data(), b.data(), c2.data());
  EXPECT_EQ(c1, a1);
  EXPECT_EQ(c2, a2);
}

}  // namespace
}  // namespace mg::test::gemm_tests
