// NNabla's trigonometric and hyperbolic functions, the rounding functions
// and Sign (straight-through grads), the activations SELU, ReLU6,
// HardSigmoid, LogSigmoid, SoftSign, TanhShrink, Sinc and Mish, and the
// scalar forms RSubScalar, RDivScalar, RPowScalar, MaximumScalar and
// MinimumScalar: harness cases against double references, and the tests the
// harness cannot express (straight-through grads, values at the edges).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::unary_math_tests {
namespace {

using UnaryFn = VariablePtr (*)(const VariablePtr&);

// One harness case of a plain unary function on inputs in [low, high).
harness::Case unary_case(UnaryFn f, double (*ref)(double), float low,
                         float high) {
  return {mg::msg("(3, 4, 5) in [", low, ", ", high, ")"), [=] {
            return unary_check([f](const VariablePtr& x) { return f(x); }, ref,
                               low, high);
          }};
}

double sinc_ref(double x) { return x == 0 ? 1 : std::sin(x) / x; }
double softplus_ref(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

// Domains keep clear of the poles and the edges of the inverse functions,
// where a finite difference (or fp16's 3 digits) means nothing.
const bool kTrig =
    harness::add(
        decl::unary<ops::Cos>,
        {unary_case(
            F::cos, [](double x) { return std::cos(x); }, -4.0f, 4.0f)}) &&
    harness::add(
        decl::unary<ops::Tan>,
        {unary_case(
            F::tan, [](double x) { return std::tan(x); }, -1.2f, 1.2f)}) &&
    harness::add(
        decl::unary<ops::ASin>,
        {unary_case(
            F::asin, [](double x) { return std::asin(x); }, -0.9f, 0.9f)}) &&
    harness::add(
        decl::unary<ops::ACos>,
        {unary_case(
            F::acos, [](double x) { return std::acos(x); }, -0.9f, 0.9f)}) &&
    harness::add(
        decl::unary<ops::ATan>,
        {unary_case(
            F::atan, [](double x) { return std::atan(x); }, -3.0f, 3.0f)}) &&
    harness::add(
        decl::unary<ops::Sinh>,
        {unary_case(
            F::sinh, [](double x) { return std::sinh(x); }, -3.0f, 3.0f)}) &&
    harness::add(
        decl::unary<ops::Cosh>,
        {unary_case(
            F::cosh, [](double x) { return std::cosh(x); }, -3.0f, 3.0f)}) &&
    harness::add(
        decl::unary<ops::ASinh>,
        {unary_case(
            F::asinh, [](double x) { return std::asinh(x); }, -3.0f, 3.0f)}) &&
    harness::add(
        decl::unary<ops::ACosh>,
        {unary_case(
            F::acosh, [](double x) { return std::acosh(x); }, 1.2f, 4.0f)}) &&
    harness::add(
        decl::unary<ops::ATanh>,
        {unary_case(
            F::atanh, [](double x) { return std::atanh(x); }, -0.8f, 0.8f)});

const bool kActivations =
    harness::add(decl::unary<ops::ReLU6>,
                 {unary_case(
                     F::relu6, [](double x) { return std::clamp(x, 0.0, 6.0); },
                     -3.0f, 9.0f)}) &&
    harness::add(
        decl::unary<ops::HardSigmoid>,
        {unary_case(
            F::hard_sigmoid,
            [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }, -4.0f,
            4.0f)}) &&
    harness::add(decl::unary<ops::LogSigmoid>,
                 {unary_case(
                     F::log_sigmoid, [](double x) { return -softplus_ref(-x); },
                     -6.0f, 6.0f)}) &&
    harness::add(
        decl::unary<ops::SoftSign>,
        {unary_case(
            F::softsign, [](double x) { return x / (1 + std::abs(x)); }, -4.0f,
            4.0f)}) &&
    harness::add(decl::unary<ops::TanhShrink>,
                 {unary_case(
                     F::tanh_shrink, [](double x) { return x - std::tanh(x); },
                     -3.0f, 3.0f)}) &&
    harness::add(decl::unary<ops::Sinc>,
                 {unary_case(F::sinc, sinc_ref, -6.0f, 6.0f)}) &&
    harness::add(
        decl::unary<ops::Mish>,
        {unary_case(
            F::mish, [](double x) { return x * std::tanh(softplus_ref(x)); },
            -4.0f, 4.0f)}) &&
    harness::add(
        decl::unary<ops::SELU>,
        {{"defaults",
          [] {
            return unary_check([](const VariablePtr& x) { return F::selu(x); },
                               [](double x) {
                                 const double s = 1.05070098735548,
                                              a = 1.673263242354377;
                                 return x > 0 ? s * x : s * a * std::expm1(x);
                               },
                               -3.0f, 3.0f);
          }},
         {"scale 2, alpha 0.5", [] {
            return unary_check(
                [](const VariablePtr& x) { return F::selu(x, 2.0f, 0.5f); },
                [](double x) { return x > 0 ? 2 * x : std::expm1(x); }, -3.0f,
                3.0f);
          }}});

const bool kScalars =
    harness::add(
        decl::unary<ops::RSubScalar>,
        {{"val 2.5",
          [] {
            return unary_check(
                [](const VariablePtr& x) { return F::r_sub_scalar(x, 2.5f); },
                [](double x) { return 2.5 - x; });
          }}}) &&
    harness::add(
        decl::unary<ops::RDivScalar>,
        {{"val 3, x in [0.5, 2)",
          [] {
            return unary_check(
                [](const VariablePtr& x) { return F::r_div_scalar(x, 3.0f); },
                [](double x) { return 3 / x; }, 0.5f, 2.0f);
          }}}) &&
    harness::add(
        decl::unary<ops::RPowScalar>,
        {{"val 2",
          [] {
            return unary_check(
                [](const VariablePtr& x) { return F::r_pow_scalar(x, 2.0f); },
                [](double x) { return std::pow(2.0, x); });
          }}}) &&
    harness::add(decl::unary<ops::MaximumScalar>,
                 {{"val 0.25",
                   [] {
                     return unary_check(
                         [](const VariablePtr& x) {
                           return F::maximum_scalar(x, 0.25f);
                         },
                         [](double x) { return std::max(x, 0.25); });
                   }}}) &&
    harness::add(decl::unary<ops::MinimumScalar>,
                 {{"val -0.5", [] {
                     return unary_check(
                         [](const VariablePtr& x) {
                           return F::minimum_scalar(x, -0.5f);
                         },
                         [](double x) { return std::min(x, -0.5); });
                   }}});

// Rounding and Sign: the inputs are multiples of 1/8 that are not halves,
// exact in half and bfloat16 and away from every rounding boundary, so each
// type rounds the same values. Their grads pass straight through (dx = dy),
// which a finite difference cannot see: checked below instead.
harness::Case rounding_case(VariablePtr (*f)(const VariablePtr&),
                            double (*ref)(double)) {
  return {
      "(40) multiples of 1/8", [=] {
        std::vector<float> values;
        for (int i = -20; i < 20; ++i) {
          const float v = static_cast<float>(i) / 8.0f + 1.0f / 16.0f;
          values.push_back(v * 2.0f == std::round(v * 2.0f) ? v + 0.125f : v);
        }
        FunctionCheck c =
            unary_check([f](const VariablePtr& x) { return f(x); }, ref);
        c.inputs = {InputSpec::fixed({40}, values, /*need_grad=*/true)};
        c.check_grad = false;
        return c;
      }};
}

VariablePtr sign_default(const VariablePtr& x) { return F::sign(x); }

const bool kRounding =
    harness::add(
        decl::unary<ops::Round>,
        {rounding_case(F::round, [](double x) { return std::round(x); })}) &&
    harness::add(
        decl::unary<ops::Ceil>,
        {rounding_case(F::ceil, [](double x) { return std::ceil(x); })}) &&
    harness::add(
        decl::unary<ops::Floor>,
        {rounding_case(F::floor, [](double x) { return std::floor(x); })}) &&
    harness::add(decl::unary<ops::Sign>,
                 {rounding_case(sign_default, [](double x) {
                   return x > 0 ? 1.0 : (x < 0 ? -1.0 : 1.0);
                 })});

// dx = dy for the straight-through functions, in every type_config.
TEST(StraightThrough, RoundingAndSignPassTheGradUnchanged) {
  for (const char* type_config : {"float", "half", "bfloat16"}) {
    ContextGuard guard(context("cpu", type_config));
    for (auto f : {F::round, F::ceil, F::floor, sign_default}) {
      auto x = variable_from({4}, {-1.3f, -0.2f, 0.0f, 2.7f}, true);
      auto y = f(x);
      y->forward();
      auto seed = make_ndarray({4});
      float* dy = seed->cast<float>();
      for (int i = 0; i < 4; ++i) dy[i] = 0.5f * static_cast<float>(i + 1);
      x->grad()->zero();
      y->backward(seed);
      const Doubles dx = grad_doubles(x);
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(dx[i], 0.5 * (i + 1)) << type_config << " element " << i;
      }
    }
  }
}

TEST(Sign, ZeroGivesAlpha) {
  auto x = variable_from({3}, {-2.0f, 0.0f, 3.0f});
  auto y = F::sign(x, 0.25f);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{-1.0, 0.25, 1.0}));
}

TEST(Sinc, IsOneAtZeroWithAZeroGrad) {
  auto x = variable_from({1}, {0.0f}, true);
  auto y = F::sinc(x);
  y->forward();
  EXPECT_EQ(to_doubles(y)[0], 1.0);
  x->grad()->zero();
  y->backward();
  EXPECT_EQ(grad_doubles(x)[0], 0.0);
}

TEST(LogSigmoid, LargeInputsDoNotOverflow) {
  auto x = variable_from({3}, {-100.0f, 100.0f, 0.0f});
  auto y = F::log_sigmoid(x);
  y->forward();
  const Doubles v = to_doubles(y);
  EXPECT_NEAR(v[0], -100.0, 1e-4);
  EXPECT_NEAR(v[1], 0.0, 1e-6);
  EXPECT_NEAR(v[2], -std::log(2.0), 1e-6);
}

TEST(RPowScalar, ANonPositiveBaseIsRejected) {
  expect_error([] { F::r_pow_scalar(make_variable({2}), -2.0f); },
               {"[r_pow_scalar] val -2 must be positive"});
}

}  // namespace
}  // namespace mg::test::unary_math_tests
