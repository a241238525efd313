// BcAdd2, Pow2, ATan2 and the elementwise losses AbsoluteError, HuberLoss,
// EpsilonInsensitiveLoss and BinaryCrossEntropy: harness cases against
// double references (the losses run in fp32 under half and bfloat16), and
// their edge cases.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::binary_math_tests {
namespace {

using BinaryRef = std::function<double(double, double)>;
using BinaryFn =
    std::function<VariablePtr(const VariablePtr&, const VariablePtr&)>;

// x0 (2, 3, 4) in [lo0, hi0) against x1 in [lo1, hi1), either (2, 3, 4) or
// (3, 1) broadcast.
harness::Case binary_case(BinaryFn f, BinaryRef ref, bool broadcast,
                          float lo0 = -2.0f, float hi0 = 2.0f,
                          float lo1 = -2.0f, float hi1 = 2.0f) {
  return {broadcast ? "x1 (3, 1) broadcast" : "same shape", [=] {
            FunctionCheck c;
            const Shape s1 = broadcast ? Shape{3, 1} : Shape{2, 3, 4};
            c.inputs = {{{2, 3, 4}, lo0, hi0}, {s1, lo1, hi1}};
            c.build = [f](const std::vector<VariablePtr>& in) {
              return f(in[0], in[1]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y(24);
              for (int i = 0; i < 24; ++i) {
                y[i] = ref(in[0][i], in[1][broadcast ? (i / 4) % 3 : i]);
              }
              return y;
            };
            return c;
          }};
}

double huber(double a, double b, double delta) {
  const double d = a - b;
  return std::abs(d) < delta ? d * d : delta * (2 * std::abs(d) - delta);
}

const bool kArithmetic =
    harness::add(
        decl::binary<ops::BcAdd2>,
        {binary_case(
            F::bc_add2, [](double a, double b) { return a + b; }, true)}) &&
    harness::add(
        decl::binary<ops::Pow2>,
        {binary_case(
             F::pow2, [](double a, double b) { return std::pow(a, b); }, false,
             0.5f, 2.0f),
         binary_case(
             F::pow2, [](double a, double b) { return std::pow(a, b); }, true,
             0.5f, 2.0f)}) &&
    harness::add(
        decl::binary<ops::ATan2>,
        {binary_case(
            F::atan2, [](double a, double b) { return std::atan2(a, b); },
            false, 0.5f, 2.0f)});

const bool kLosses =
    harness::add(
        decl::binary<ops::AbsoluteError>,
        {binary_case(
            F::absolute_error,
            [](double a, double b) { return std::abs(a - b); }, false)}) &&
    harness::add(
        decl::binary<ops::HuberLoss>,
        {binary_case([](auto a, auto b) { return F::huber_loss(a, b); },
                     [](double a, double b) { return huber(a, b, 1); }, false),
         binary_case([](auto a, auto b) { return F::huber_loss(a, b, 0.5f); },
                     [](double a, double b) { return huber(a, b, 0.5); },
                     true)}) &&
    harness::add(decl::binary<ops::EpsilonInsensitiveLoss>,
                 {binary_case(
                     [](auto a, auto b) {
                       return F::epsilon_insensitive_loss(a, b, 0.3f);
                     },
                     [](double a, double b) {
                       return std::max(std::abs(a - b) - 0.3, 0.0);
                     },
                     false)}) &&
    harness::add(decl::binary<ops::BinaryCrossEntropy>,
                 {binary_case(
                     F::binary_cross_entropy,
                     [](double x, double t) {
                       return -(t * std::log(x) + (1 - t) * std::log(1 - x));
                     },
                     false, 0.05f, 0.95f, 0.0f, 1.0f)});

TEST(ElementwiseLosses, AreFp32UnderHalfAndBFloat16) {
  for (const char* type_config : {"half", "bfloat16"}) {
    ContextGuard guard(context("cpu", type_config));
    auto a = variable_from({2}, {1.0f, 2.0f});
    auto b = variable_from({2}, {0.0f, 0.5f});
    for (auto y : {F::absolute_error(a, b), F::huber_loss(a, b),
                   F::epsilon_insensitive_loss(a, b, 0.1f)}) {
      y->forward();
      EXPECT_EQ(y->data()->array().dtype(), Dtype::f32) << type_config;
    }
  }
}

TEST(BinaryCrossEntropy, CertainWrongPredictionsAreLargeButFinite) {
  auto x = variable_from({2}, {0.0f, 1.0f}, true);
  auto t = variable_from({2}, {1.0f, 0.0f});
  auto y = F::binary_cross_entropy(x, t);
  y->forward();
  for (double v : to_doubles(y)) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GT(v, 20.0);
  }
}

TEST(HuberLoss, IsNNablasTwiceTheTextbookLoss) {
  auto y = F::huber_loss(variable_from({2}, {0.5f, 3.0f}),
                         variable_from({2}, {0.0f, 0.0f}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0.25, 5.0}));  // d^2; 1 (2 3 - 1)
}

TEST(Losses, BadArgumentsAreRejected) {
  auto a = make_variable({2});
  expect_error([&] { F::huber_loss(a, a, 0.0f); },
               {"[huber_loss] delta 0 must be positive"});
  expect_error(
      [&] { F::epsilon_insensitive_loss(a, a, -0.5f); },
      {"[epsilon_insensitive_loss] epsilon -0.5 must not be negative"});
}

}  // namespace
}  // namespace mg::test::binary_math_tests
