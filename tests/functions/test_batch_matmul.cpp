// BatchMatmul through the shared checker, every transpose combination.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

struct Case {
  bool ta, tb;
};

class BatchMatmulTest : public ::testing::TestWithParam<Case> {};

// a (2, 3, [M, K]), b (6, [K, N]) with M = 4, K = 5, N = 3: batch axes may
// differ in shape as long as they hold as many matrices.
TEST_P(BatchMatmulTest, All) {
  const auto [ta, tb] = GetParam();
  const int64_t B = 6, M = 4, K = 5, N = 3;
  FunctionCheck c;
  c.inputs = {{ta ? Shape{2, 3, K, M} : Shape{2, 3, M, K}},
              {tb ? Shape{B, N, K} : Shape{B, K, N}}};
  c.build = [ta = ta, tb = tb](const std::vector<VariablePtr>& in) {
    return F::batch_matmul(in[0], in[1], ta, tb);
  };
  c.reference = [ta = ta, tb = tb](const std::vector<Doubles>& in) {
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
  check_all(c);
}

INSTANTIATE_TEST_SUITE_P(Transposes, BatchMatmulTest,
                         ::testing::Values(Case{false, false},
                                           Case{true, false}, Case{false, true},
                                           Case{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.ta ? "Ta" : "A") +
                                  (info.param.tb ? "Tb" : "B");
                         });

TEST(BatchMatmul, OutputShape) {
  auto y = F::batch_matmul(make_variable({2, 3, 4, 5}),
                           make_variable({6, 4, 7}), true, false);
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
      {"[batch_matmul] a with shape (2, 3, 4) holds 2 matrices, but b with "
       "shape (3, 4, 5) holds 3"});
  expect_error(
      [] {
        F::batch_matmul(make_variable({4}), make_variable({4, 1}));
      },
      {"[batch_matmul] a with shape (4,) must have at least 2 "
       "dimensions"});
}

}  // namespace
}  // namespace mg::test
