// Constant, Arange and Linspace: harness cases (no inputs, no grads), the
// edges of their ranges, fp32 positions under half, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::generators_tests {
namespace {

// A check of a function with no inputs: y against `expected`.
FunctionCheck generator_check(std::function<VariablePtr()> make,
                              Doubles expected) {
  FunctionCheck c;
  c.build = [make](const std::vector<VariablePtr>&) { return make(); };
  c.reference = [expected](const std::vector<Doubles>&) { return expected; };
  c.check_grad = false;
  return c;
}

Doubles arange_ref(float start, float stop, float step) {
  Doubles y;
  for (int64_t i = 0;; ++i) {
    const double v = static_cast<double>(start) + static_cast<double>(i) * step;
    if (step > 0 ? v >= stop : v <= stop) break;
    y.push_back(v);
  }
  return y;
}

const bool kGenerators =
    harness::add(decl::Constant, {{"2.5 in (2, 3)",
                                   [] {
                                     return generator_check(
                                         [] {
                                           return F::constant(2.5f, {2, 3});
                                         },
                                         Doubles(6, 2.5));
                                   }},
                                  {"a scalar",
                                   [] {
                                     return generator_check(
                                         [] { return F::constant(-3.0f, {}); },
                                         {-3.0});
                                   }}}) &&
    harness::add(decl::Arange,
                 {{"0 to 10",
                   [] {
                     return generator_check([] { return F::arange(0, 10); },
                                            arange_ref(0, 10, 1));
                   }},
                  {"5 down to -3 by -2",
                   [] {
                     return generator_check([] { return F::arange(5, -3, -2); },
                                            arange_ref(5, -3, -2));
                   }},
                  {"0 to 1 by 0.1",
                   [] {
                     return generator_check(
                         [] { return F::arange(0, 1, 0.1f); },
                         arange_ref(0, 1, 0.1f));
                   }}}) &&
    harness::add(
        decl::Linspace,
        {{"-1 to 1 in 5",
          [] {
            return generator_check([] { return F::linspace(-1, 1, 5); },
                                   {-1, -0.5, 0, 0.5, 1});
          }},
         {"one point", [] {
            return generator_check([] { return F::linspace(3, 7, 1); }, {3});
          }}});

TEST(Arange, CountsAsNumpyDoes) {
  EXPECT_EQ(F::arange(0, 10)->shape(), (Shape{10}));
  EXPECT_EQ(F::arange(0, 10, 3)->shape(), (Shape{4}));  // 0 3 6 9
  EXPECT_EQ(F::arange(0, 1, 0.1f)->shape(), (Shape{10}));
  EXPECT_EQ(F::arange(3, 3)->shape(), (Shape{0}));
  EXPECT_EQ(F::arange(3, 0)->shape(), (Shape{0}));  // empty, not an error
  EXPECT_EQ(F::arange(3, 0, -1)->shape(), (Shape{3}));
}

TEST(Arange, PositionsStayExactUnderHalfAndBfloat16) {
  // 4096 positions: half holds integers exactly only up to 2048, bfloat16
  // up to 256. Arange runs in fp32 under both (its declaration), so every
  // position is its own; what reads y converts at its edge.
  for (const char* type : {"half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto y = F::arange(0, 4096);
    y->forward();
    const Doubles v = to_doubles(y);
    ASSERT_EQ(v.size(), 4096u);
    for (int i = 0; i < 4096; ++i) ASSERT_EQ(v[i], i) << "at " << i;
  }
}

TEST(Linspace, EndsExactlyAtStopAndHandlesZeroPoints) {
  auto y = F::linspace(0.1f, 0.7f, 7);
  y->forward();
  EXPECT_EQ(to_doubles(y).back(), static_cast<double>(0.7f));
  EXPECT_EQ(to_doubles(y).front(), static_cast<double>(0.1f));
  EXPECT_EQ(F::linspace(0, 1, 0)->shape(), (Shape{0}));
}

TEST(Constant, MakesAnAdditiveMaskInHalf) {
  ContextGuard guard(context("cpu", "half"));
  auto y = F::constant(-std::numeric_limits<float>::infinity(), {2, 2});
  y->forward();
  for (double v : to_doubles(y)) EXPECT_TRUE(std::isinf(v) && v < 0);
}

TEST(Generators, GiveNoGradAndNeedNone) {
  // A graph whose one leaf is an Arange: backward runs and changes nothing.
  auto x = variable_from({3}, {1, 2, 3}, true);
  auto loss = F::sum(F::mul2(x, F::arange(0, 3)));
  loss->forward();
  loss->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 1, 2}));
}

TEST(Generators, BadArguments) {
  expect_error([] { F::arange(0, 1, 0); },
               {"[arange] start 0, stop 1 and step 0 must be finite, with a "
                "step other than 0"});
  expect_error([] { F::arange(0, std::numeric_limits<float>::infinity()); },
               {"[arange]", "must be finite"});
  expect_error([] { F::linspace(0, 1, -2); },
               {"[linspace] start 0 and stop 1 must be finite and num -2 0 "
                "or more"});
  expect_error(
      [] {
        F::constant(1, {2, -1});
      },
      {"[constant] shape (2, -1) has a negative size"});
}

}  // namespace
}  // namespace mg::test::generators_tests
