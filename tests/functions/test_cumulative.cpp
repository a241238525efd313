// CumSum and CumProd: harness cases over axes, exclusive and reverse
// against double references; 10^5 half values summed right to the end;
// zeros in CumProd's grads.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::cumulative_tests {
namespace {

// The cumulative fold of x (shape (outer, n, inner) around `axis`).
Doubles cumulative_ref(const Doubles& x, const Shape& shape, int axis,
                       bool exclusive, bool reverse, bool product) {
  const int nd = static_cast<int>(shape.size());
  const int a = axis < 0 ? axis + nd : axis;
  const int64_t outer = shape_size(shape, 0, a), n = shape[a],
                inner = shape_size(shape, a + 1, nd);
  Doubles y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      double acc = product ? 1 : 0;
      for (int64_t p = 0; p < n; ++p) {
        const int64_t k = reverse ? n - 1 - p : p;
        const int64_t e = (o * n + k) * inner + j;
        if (!exclusive) acc = product ? acc * x[e] : acc + x[e];
        y[e] = acc;
        if (exclusive) acc = product ? acc * x[e] : acc + x[e];
      }
    }
  }
  return y;
}

harness::Case cumulative_case(bool product, int axis, bool exclusive,
                              bool reverse) {
  const Shape shape{2, 5, 3};
  std::string label = "axis " + std::to_string(axis) +
                      (exclusive ? ", exclusive" : "") +
                      (reverse ? ", reverse" : "");
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {product ? InputSpec(shape, 0.5f, 1.5f)
                                : InputSpec(shape, -1.0f, 1.0f)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return product ? F::cumprod(in[0], axis, exclusive, reverse)
                             : F::cumsum(in[0], axis, exclusive, reverse);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return cumulative_ref(in[0], shape, axis, exclusive, reverse,
                                    product);
            };
            return c;
          }};
}

const bool kCumulative =
    harness::add(decl::CumSum, {cumulative_case(false, 1, false, false),
                                cumulative_case(false, 0, true, false),
                                cumulative_case(false, -1, false, true),
                                cumulative_case(false, 1, true, true)}) &&
    harness::add(decl::CumProd, {cumulative_case(true, 1, false, false),
                                 cumulative_case(true, 0, true, false),
                                 cumulative_case(true, -1, false, true),
                                 cumulative_case(true, 1, true, true)});

TEST(CumSum, HundredThousandHalfValuesAccumulateInDouble) {
  // 10^5 values of 1/16 in half: the running sum reaches 6250, and every
  // y is the exact prefix sum rounded once to half. An fp16 accumulator
  // stalls at 256 (where 1/16 is below half its spacing), an fp32 one is
  // exact here too; each y must be within half's rounding of k / 16.
  ContextGuard g(context("cpu", "half"));
  const int64_t n = 100000;
  auto y = F::cumsum(variable_from({n}, std::vector<float>(n, 0.0625f)));
  y->forward();
  const Doubles v = to_doubles(y);
  for (int64_t k = 0; k < n; k += 997) {
    const double exact = (k + 1) / 16.0;
    ASSERT_LE(std::abs(v[k] - exact), exact * std::ldexp(1.0, -11))
        << "at " << k;
  }
  EXPECT_EQ(v[n - 1], 6248.0);  // 6250 rounded to half (a tie, to even)
}

TEST(CumProd, ZerosGiveTheRightGrads) {
  // y = (2, 0, 0): dy = 1 each. dx0 = 1 + 0 + 0 = 1; dx1 = 2 + 2 x2 = 8;
  // dx2 = 2 x1 = 0.
  auto x = variable_from({3}, {2, 0, 3}, true);
  auto y = F::cumprod(x);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{2, 0, 0}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 8, 0}));
}

TEST(CumSum, BadAxis) {
  expect_error(
      [] {
        F::cumsum(make_variable({2, 3}), 2);
      },
      {"[cumsum] axis 2 is out of range for x with shape (2, 3)"});
}

}  // namespace
}  // namespace mg::test::cumulative_tests
