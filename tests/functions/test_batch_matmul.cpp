// BatchMatmul through the shared checker, every transpose combination.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::batch_matmul_tests {
namespace {

// a (2, 3, [M, K]), b (2, 3, [K, N]) with M = 4, K = 5, N = 3, each
// transposed or not.
FunctionCheck batch_matmul_check(bool ta, bool tb) {
  const int64_t B = 6, M = 4, K = 5, N = 3;
  FunctionCheck c;
  c.inputs = {{ta ? Shape{2, 3, K, M} : Shape{2, 3, M, K}},
              {tb ? Shape{2, 3, N, K} : Shape{2, 3, K, N}}};
  c.build = [ta, tb](const std::vector<VariablePtr>& in) {
    return F::batch_matmul(in[0], in[1], ta, tb);
  };
  c.reference = [ta, tb](const std::vector<Doubles>& in) {
    Doubles y(B * M * N);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double av = in[0][b * M * K + (ta ? k * M + i : i * K + k)];
            const double bv = in[1][b * K * N + (tb ? j * K + k : k * N + j)];
            s += av * bv;
          }
          y[(b * M + i) * N + j] = s;
        }
      }
    }
    return y;
  };
  return c;
}

// A product of 512 terms: fp16 sums would miss the double reference.
FunctionCheck batch_matmul_long_check() {
  FunctionCheck c = batch_matmul_check(false, false);
  c.inputs = {{{2, 1, 512}, 0.0f, 1.0f}, {{2, 512, 2}, 0.0f, 1.0f}};
  c.reference = [](const std::vector<Doubles>& in) {
    Doubles y(4, 0.0);
    for (int b = 0; b < 2; ++b) {
      for (int j = 0; j < 2; ++j) {
        for (int k = 0; k < 512; ++k) {
          y[b * 2 + j] += in[0][b * 512 + k] * in[1][(b * 512 + k) * 2 + j];
        }
      }
    }
    return y;
  };
  c.half_atol = c.bf16_atol = 0.0;
  c.half_rtol = 2e-3;  // the rounding of the output alone: 2^-11
  c.bf16_rtol = 1e-2;  // 2^-8 plus the inputs' rounding
  c.check_grad = false;
  return c;
}

const bool kBatchMatmul =
    harness::add(decl::BatchMatmul,
                 {{"a b", [] { return batch_matmul_check(false, false); }},
                  {"a^T b", [] { return batch_matmul_check(true, false); }},
                  {"a b^T", [] { return batch_matmul_check(false, true); }},
                  {"a^T b^T", [] { return batch_matmul_check(true, true); }},
                  {"512-term sums", batch_matmul_long_check, true}});

TEST(BatchMatmul, OutputShape) {
  auto y = F::batch_matmul(make_variable({2, 3, 4, 5}),
                           make_variable({2, 3, 4, 7}), true, false);
  EXPECT_EQ(y->shape(), (Shape{2, 3, 5, 7}));
}

TEST(BatchMatmul, HalfAccumulatesInFloat) {
  // A row of 4096 ones times a column of ones: 4096, exact only in fp32.
  ContextGuard guard(context("cpu", "half"));
  auto a = variable_from({1, 1, 4096}, std::vector<float>(4096, 1.0f));
  auto b = variable_from({1, 4096, 1}, std::vector<float>(4096, 1.0f));
  auto y = F::batch_matmul(a, b);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4096}));
}

TEST(BatchMatmul, BadShapes) {
  expect_error(
      [] {
        F::batch_matmul(make_variable({2, 3, 4}), make_variable({2, 5, 6}));
      },
      {"[batch_matmul] a with shape (2, 3, 4) has 4 columns, but b with shape "
       "(2, 5, 6) has 5 rows"});
  expect_error(
      [] {
        F::batch_matmul(make_variable({2, 3, 4}), make_variable({2, 6, 5}),
                        false, true);
      },
      {"b with shape (2, 6, 5) (transposed) has 5 rows"});
  expect_error(
      [] {
        F::batch_matmul(make_variable({2, 3, 4}), make_variable({3, 4, 5}));
      },
      {"[batch_matmul] a with shape (2, 3, 4) has batch dimensions (2,), but "
       "b with shape (3, 4, 5) has (3,); they must be equal"});
  // As many matrices, other dimensions: (2, 3) would meet (3, 2) wrongly.
  expect_error(
      [] {
        F::batch_matmul(make_variable({2, 3, 4, 4}),
                        make_variable({3, 2, 4, 4}));
      },
      {"has batch dimensions (2, 3), but b with shape (3, 2, 4, 4) has "
       "(3, 2)"});
  expect_error(
      [] {
        F::batch_matmul(make_variable({6, 4, 4}), make_variable({2, 3, 4, 4}));
      },
      {"has batch dimensions (6,), but b"});
  expect_error(
      [] {
        F::batch_matmul(make_variable({4}), make_variable({4, 1}));
      },
      {"[batch_matmul] a with shape (4,) must have at least 2 "
       "dimensions"});
}

}  // namespace
}  // namespace mg::test::batch_matmul_tests
