// BatchInv, BatchDet, BatchLogdet and BatchCholesky: harness cases on
// well-conditioned batches against double references written here (Gauss-
// Jordan, LU, Cholesky), hand-computed examples, the singular and
// non-positive-definite cases, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::batch_linalg_tests {
namespace {

using Matrix = std::vector<std::vector<double>>;

Matrix matrix_at(const Doubles& x, int64_t b, int64_t n) {
  Matrix m(n, std::vector<double>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) m[i][j] = x[(b * n + i) * n + j];
  }
  return m;
}

void append(Doubles& y, const Matrix& m) {
  for (const auto& row : m) y.insert(y.end(), row.begin(), row.end());
}

// Gauss-Jordan with partial pivoting.
Matrix inverse_ref(Matrix a) {
  const size_t n = a.size();
  Matrix inv(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    }
    std::swap(a[c], a[p]);
    std::swap(inv[c], inv[p]);
    const double d = a[c][c];
    for (size_t j = 0; j < n; ++j) a[c][j] /= d, inv[c][j] /= d;
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t j = 0; j < n; ++j) {
        a[r][j] -= f * a[c][j];
        inv[r][j] -= f * inv[c][j];
      }
    }
  }
  return inv;
}

// LU with partial pivoting: the determinant.
double det_ref(Matrix a) {
  const size_t n = a.size();
  double det = 1.0;
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    }
    if (p != c) std::swap(a[c], a[p]), det = -det;
    det *= a[c][c];
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j < n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  return det;
}

// L with a = L L^T, from a's lower triangle.
Matrix cholesky_ref(const Matrix& a) {
  const size_t n = a.size();
  Matrix l(n, std::vector<double>(n, 0.0));
  for (size_t j = 0; j < n; ++j) {
    double d = a[j][j];
    for (size_t k = 0; k < j; ++k) d -= l[j][k] * l[j][k];
    l[j][j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i][j];
      for (size_t k = 0; k < j; ++k) s -= l[i][k] * l[j][k];
      l[i][j] = s / l[j][j];
    }
  }
  return l;
}

// b matrices (n, n): uniform in [-1, 1) plus `diag` on the diagonal (well
// conditioned), every other one with its first row negated (a negative
// determinant); with spd, m m^T + n I instead. Rounded to multiples of
// 1/64 so half and bfloat16 hold them nearly exactly.
std::vector<float> matrices(int64_t b, int64_t n, bool spd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v;
  for (int64_t k = 0; k < b; ++k) {
    std::vector<float> m(static_cast<size_t>(n * n));
    for (auto& e : m) e = std::round(u(rng) * 64.0f) / 64.0f;
    if (spd) {
      std::vector<float> a(m.size());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          float s = i == j ? static_cast<float>(n) : 0.0f;
          for (int64_t t = 0; t < n; ++t) s += m[i * n + t] * m[j * n + t];
          a[i * n + j] = std::round(s * 16.0f) / 16.0f;
        }
      }
      m = a;
    } else {
      for (int64_t i = 0; i < n; ++i) m[i * n + i] += 2.5f;
      if (k % 2) {
        for (int64_t j = 0; j < n; ++j) m[j] = -m[j];
      }
    }
    v.insert(v.end(), m.begin(), m.end());
  }
  return v;
}

harness::Case inv_case(int64_t b, int64_t n) {
  return {"x " + shape_str({b, n, n}), [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed({b, n, n}, matrices(b, n, false, 5),
                                         /*need_grad=*/true)};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::batch_inv(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y;
              for (int64_t k = 0; k < b; ++k)
                append(y, inverse_ref(matrix_at(in[0], k, n)));
              return y;
            };
            return c;
          }};
}

harness::Case det_case(int64_t b, int64_t n, bool log) {
  return {"x " + shape_str({b, n, n}), [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed({b, n, n}, matrices(b, n, false, 7),
                                         /*need_grad=*/true)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return log ? F::batch_logdet(in[0]) : F::batch_det(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y;
              for (int64_t k = 0; k < b; ++k) {
                const double d = det_ref(matrix_at(in[0], k, n));
                y.push_back(log ? std::log(std::abs(d)) : d);
              }
              return y;
            };
            if (!log) c.bf16_rtol = c.half_rtol = 5e-2;  // a product of n
            return c;
          }};
}

// The input symmetrised first, (x + x^T) / 2: the factor reads only the
// lower triangle, so finite differences of x itself would see half of
// NNabla's symmetric grad on each side.
harness::Case cholesky_case(int64_t b, int64_t n, bool upper) {
  return {"x " + shape_str({b, n, n}) + (upper ? " upper" : " lower"), [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed({b, n, n}, matrices(b, n, true, 9),
                                         /*need_grad=*/true)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              auto sym = F::mul_scalar(
                  F::add2(in[0], F::transpose(in[0], {0, 2, 1})), 0.5f);
              return F::batch_cholesky(sym, upper);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y;
              for (int64_t k = 0; k < b; ++k) {
                Matrix a = matrix_at(in[0], k, n);
                for (int64_t i = 0; i < n; ++i) {
                  for (int64_t j = 0; j < i; ++j) {
                    a[i][j] = a[j][i] = 0.5 * (a[i][j] + a[j][i]);
                  }
                }
                Matrix l = cholesky_ref(a);
                if (upper) {
                  for (int64_t i = 0; i < n; ++i) {
                    for (int64_t j = 0; j < i; ++j) std::swap(l[i][j], l[j][i]);
                  }
                }
                append(y, l);
              }
              return y;
            };
            return c;
          }};
}

const bool kBatchInv =
    harness::add(decl::BatchInv, {inv_case(2, 3), inv_case(3, 1)});
const bool kBatchDet = harness::add(
    decl::BatchDet, {det_case(2, 3, false), det_case(2, 4, false)});
const bool kBatchLogdet = harness::add(
    decl::BatchLogdet, {det_case(2, 3, true), det_case(3, 2, true)});
const bool kBatchCholesky =
    harness::add(decl::BatchCholesky,
                 {cholesky_case(2, 3, false), cholesky_case(2, 4, true)});

TEST(BatchInv, HandComputedInverseAndGrad) {
  auto x = variable_from({1, 2, 2}, {4, 7, 2, 6}, true);
  auto y = F::batch_inv(x);
  y->forward();
  expect_near(to_doubles(y), {0.6, -0.7, -0.2, 0.4}, 1e-6, 1e-6, "inverse");
  // With dy = ones: -y^T 1 1^T y^T = -(y^T 1)(y 1)^T, y's column sums
  // (0.4, -0.3) times its row sums (-0.1, 0.2).
  x->grad()->zero();
  y->backward(1.0f);
  expect_near(grad_doubles(x), {0.04, -0.08, -0.03, 0.06}, 1e-6, 1e-6, "dx");
}

TEST(BatchInv, ASingularMatrixIsAnError) {
  auto x = variable_from({2, 2, 2}, {1, 0, 0, 1, 1, 2, 2, 4});
  expect_error(
      [&] { F::batch_inv(x)->forward(); },
      {"[batch_inv] matrix 1 of x is singular (numerical rank 1 of 2): it "
       "has no inverse"});
}

TEST(BatchDet, HandComputedDeterminantAndTheGradAtASingularMatrix) {
  auto x = variable_from({2, 2, 2}, {4, 7, 2, 6, 1, 2, 2, 4}, true);
  auto y = F::batch_det(x);
  y->forward();
  expect_near(to_doubles(y), {10, 0}, 1e-6, 1e-6, "det");
  x->grad()->zero();
  y->backward(1.0f);
  // adj(x)^T: (d, -c; -b, a), also where det = 0 (NNabla's det x^-T is
  // nan there).
  expect_near(grad_doubles(x), {6, -2, -7, 4, 4, -2, -2, 1}, 1e-5, 1e-6, "dx");
}

TEST(BatchLogdet, HandComputedAndSingular) {
  auto x = variable_from({2, 2, 2}, {4, 7, 2, 6, -1, 0, 0, 3}, true);
  auto y = F::batch_logdet(x);
  y->forward();
  expect_near(to_doubles(y), {std::log(10.0), std::log(3.0)}, 1e-6, 1e-6,
              "log |det|");
  x->grad()->zero();
  y->backward(1.0f);  // x^-T
  expect_near(grad_doubles(x), {0.6, -0.2, -0.7, 0.4, -1, 0, 0, 1.0 / 3}, 1e-6,
              1e-6, "dx");

  auto s = variable_from({1, 2, 2}, {1, 2, 2, 4}, true);
  auto ys = F::batch_logdet(s);
  ys->forward();
  EXPECT_EQ(to_doubles(ys)[0], -std::numeric_limits<double>::infinity());
  expect_error([&] { ys->backward(1.0f); },
               {"[batch_logdet] matrix 0 of x is singular (numerical rank 1 "
                "of 2): log |det| is -inf and has no grad"});
}

TEST(BatchLogdet, PastTheRangeOfTheDeterminant) {
  // diag(1e30, 1e30): det 1e60 overflows fp32, its log does not.
  auto y = F::batch_logdet(variable_from({1, 2, 2}, {1e30f, 0, 0, 1e30f}));
  y->forward();
  expect_near(to_doubles(y), {60 * std::log(10.0)}, 1e-4, 1e-6, "log |det|");
}

TEST(BatchCholesky, HandComputedFactors) {
  // The classic example: L = (2 0 0; 6 1 0; -8 5 3).
  const std::vector<float> a = {4, 12, -16, 12, 37, -43, -16, -43, 98};
  auto lower = F::batch_cholesky(variable_from({1, 3, 3}, a));
  auto upper = F::batch_cholesky(variable_from({1, 3, 3}, a), true);
  lower->forward();
  upper->forward();
  expect_near(to_doubles(lower), {2, 0, 0, 6, 1, 0, -8, 5, 3}, 1e-5, 1e-6, "L");
  expect_near(to_doubles(upper), {2, 6, -8, 0, 1, 5, 0, 0, 3}, 1e-5, 1e-6, "U");
}

TEST(BatchCholesky, GradIsNNablasSymmetricOne) {
  // For x = (4), L = (2): dL/dx = 1 / (2 L) = 0.25.
  auto x = variable_from({1, 1, 1}, {4}, true);
  auto y = F::batch_cholesky(x);
  y->forward();
  x->grad()->zero();
  y->backward(1.0f);
  expect_near(grad_doubles(x), {0.25}, 1e-7, 1e-7, "dx");
  // On a 2x2 the grad is symmetric: dx01 = dx10.
  auto x2 = variable_from({1, 2, 2}, {4, 2, 2, 5}, true);
  auto y2 = F::batch_cholesky(x2);
  y2->forward();
  x2->grad()->zero();
  y2->backward(1.0f);
  const Doubles g = grad_doubles(x2);
  EXPECT_NEAR(g[1], g[2], 1e-7);
}

TEST(BatchCholesky, NotPositiveDefiniteIsAnError) {
  auto x = variable_from({2, 2, 2}, {2, 0, 0, 2, 1, 2, 2, 1});
  expect_error([&] { F::batch_cholesky(x)->forward(); },
               {"[batch_cholesky] matrix 1 of x is not positive definite"});
}

TEST(BatchLinalg, ShapeErrors) {
  expect_error(
      [] {
        F::batch_inv(make_variable({2, 3, 4}));
      },
      {"[batch_inv] x with shape (2, 3, 4) must be a batch of "
       "square matrices (B, N, N)"});
  expect_error(
      [] {
        F::batch_det(make_variable({3, 3}));
      },
      {"[batch_det] x with shape (3, 3) must be a batch"});
  expect_error(
      [] {
        F::batch_logdet(make_variable({1, 2, 3, 3}));
      },
      {"[batch_logdet] x with shape (1, 2, 3, 3)"});
  expect_error(
      [] {
        F::batch_cholesky(make_variable({2, 2, 3}));
      },
      {"[batch_cholesky] x with shape (2, 2, 3)"});
}

}  // namespace
}  // namespace mg::test::batch_linalg_tests
