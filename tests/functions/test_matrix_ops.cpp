// MatrixDiag, MatrixDiagPart and EyeLike: harness cases against double
// references (the first two also move int32 data exactly) and errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::matrix_ops_tests {
namespace {

harness::Case diag_case(Shape xs) {
  return {"x " + shape_str(xs), [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::matrix_diag(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t m = xs.back(), rows = shape_size(xs) / m;
              Doubles y(rows * m * m, 0.0);
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < m; ++i)
                  y[(r * m + i) * m + i] = in[0][r * m + i];
              return y;
            };
            return c;
          }};
}

harness::Case diag_part_case(Shape xs) {
  return {"x " + shape_str(xs), [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::matrix_diag_part(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t m = xs.back(), rows = shape_size(xs) / (m * m);
              Doubles y(rows * m);
              for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < m; ++i)
                  y[r * m + i] = in[0][(r * m + i) * m + i];
              return y;
            };
            return c;
          }};
}

harness::Case eye_case(Shape xs, int k) {
  return {"x " + shape_str(xs) + " k " + std::to_string(k), [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [k](const std::vector<VariablePtr>& in) {
              return F::eye_like(in[0], k);
            };
            c.reference = [=](const std::vector<Doubles>&) {
              Doubles y(shape_size(xs));
              for (int64_t i = 0; i < xs[0]; ++i)
                for (int64_t j = 0; j < xs[1]; ++j)
                  y[i * xs[1] + j] = j - i == k ? 1.0 : 0.0;
              return y;
            };
            c.check_grad = false;
            return c;
          }};
}

const bool kMatrixOps =
    harness::add(decl::MatrixDiag, {diag_case({2, 3}), diag_case({2, 2, 4})}) &&
    harness::add(decl::MatrixDiagPart,
                 {diag_part_case({2, 3, 3}), diag_part_case({4, 4})}) &&
    harness::add(decl::EyeLike, {eye_case({3, 4}, 0), eye_case({4, 3}, 1),
                                 eye_case({3, 3}, -2)});

TEST(MatrixDiag, RoundTripsThroughMatrixDiagPart) {
  auto x = variable_from({2, 2}, {1, 2, 3, 4}, true);
  auto d = F::matrix_diag(x);
  auto y = F::matrix_diag_part(d);
  y->forward();
  EXPECT_EQ(d->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(to_doubles(d), (Doubles{1, 0, 0, 2, 3, 0, 0, 4}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 3, 4}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 1, 1, 1}));
}

TEST(MatrixOps, BadShapes) {
  expect_error([] { F::matrix_diag(make_variable({})); },
               {"[matrix_diag] x with shape () needs at least 1 axis"});
  expect_error(
      [] {
        F::matrix_diag_part(make_variable({2, 3, 4}));
      },
      {"[matrix_diag_part] x with shape (2, 3, 4) must end in two axes of one "
       "size (square matrices)"});
  expect_error(
      [] {
        F::eye_like(make_variable({2, 3, 4}));
      },
      {"[eye_like] x with shape (2, 3, 4) must be 2-D"});
}

}  // namespace
}  // namespace mg::test::matrix_ops_tests
