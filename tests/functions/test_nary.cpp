// AddN and MulN: harness cases with two, three and one inputs against
// double references, zeros in MulN's grads, and the shape rule.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::nary_tests {
namespace {

using Fold = double (*)(double, double);

// n inputs (2, 3, 4) in [lo, hi), y = fold of them, in double.
harness::Case nary_case(VariablePtr (*make)(std::vector<VariablePtr>),
                        Fold fold, int n, float lo, float hi) {
  return {std::to_string(n) + " inputs", [=] {
            FunctionCheck c;
            for (int k = 0; k < n; ++k) c.inputs.push_back({{2, 3, 4}, lo, hi});
            c.build = [make](const std::vector<VariablePtr>& in) {
              return make(in);
            };
            c.reference = [fold](const std::vector<Doubles>& in) {
              Doubles y = in[0];
              for (size_t k = 1; k < in.size(); ++k) {
                for (size_t i = 0; i < y.size(); ++i) {
                  y[i] = fold(y[i], in[k][i]);
                }
              }
              return y;
            };
            return c;
          }};
}

double add(double a, double b) { return a + b; }
double mul(double a, double b) { return a * b; }

const bool kNary =
    harness::add(decl::AddN, {nary_case(F::add_n, add, 1, -1, 1),
                              nary_case(F::add_n, add, 2, -1, 1),
                              nary_case(F::add_n, add, 4, -1, 1)}) &&
    harness::add(decl::MulN, {nary_case(F::mul_n, mul, 1, 0.5f, 1.5f),
                              nary_case(F::mul_n, mul, 2, 0.5f, 1.5f),
                              nary_case(F::mul_n, mul, 3, -1.5f, 1.5f)});

TEST(MulN, AZeroInputGivesTheOtherGradsRight) {
  // y = a b c with b = 0: da = b c = 0, db = a c (not 0/0), dc = a b = 0.
  auto a = variable_from({1}, {2}, true), b = variable_from({1}, {0}, true),
       c = variable_from({1}, {3}, true);
  auto y = F::mul_n({a, b, c});
  y->forward();
  y->backward();
  EXPECT_EQ(to_doubles(y), (Doubles{0}));
  EXPECT_EQ(grad_doubles(a), (Doubles{0}));
  EXPECT_EQ(grad_doubles(b), (Doubles{6}));
  EXPECT_EQ(grad_doubles(c), (Doubles{0}));
}

TEST(AddN, SumsInFloatUnderHalf) {
  // 2048 + 1 + 1 in half: added pairwise in half each 1 is lost (2049 is
  // not a half); summed in fp32 and rounded once, 2050 is exact.
  ContextGuard guard(context("cpu", "half"));
  auto y = F::add_n({variable_from({1}, {2048}), variable_from({1}, {1}),
                     variable_from({1}, {1})});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{2050}));
}

TEST(AddN, InputsMustShareAShape) {
  expect_error(
      [] {
        F::add_n({make_variable({2, 3}), make_variable({3})});
      },
      {"[add_n] x1 with shape (3,) differs from x0 with shape (2, 3) (every "
       "input must have one shape)"});
  expect_error([] { F::mul_n({}); }, {"[mul_n] takes 1 to"});
}

}  // namespace
}  // namespace mg::test::nary_tests
