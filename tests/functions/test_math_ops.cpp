// SoftPlus, Swish, HardTanh, ClipByValue, Sqrt, Rsqrt, Abs, Erf, Maximum2
// and Minimum2 through the shared checker.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::math_ops_tests {
namespace {

const bool kSoftPlusAll = harness::add(
    decl::unary<ops::SoftPlus>,
    {{"default", [] {
        return unary_check([](auto x) { return F::softplus(x); },
                           [](double x) { return std::log1p(std::exp(x)); });
      }}});

const bool kSoftPlusBeta = harness::add(
    decl::unary<ops::SoftPlus>,
    {{"beta", [] {
        return unary_check(
            [](auto x) { return F::softplus(x, 2.0f); },
            [](double x) { return std::log1p(std::exp(2 * x)) / 2; });
      }}});

TEST(SoftPlus, LargeInputsDoNotOverflow) {
  auto x = variable_from({3}, {100.0f, -100.0f, 0.0f});
  auto y = F::softplus(x);
  y->forward();
  const Doubles v = to_doubles(y);
  EXPECT_NEAR(v[0], 100.0, 1e-4);
  EXPECT_NEAR(v[1], 0.0, 1e-6);
  EXPECT_NEAR(v[2], std::log(2.0), 1e-6);
}

const bool kSwishAll = harness::add(
    decl::unary<ops::Swish>,
    {{"default", [] {
        return unary_check([](auto x) { return F::swish(x); },
                           [](double x) { return x / (1 + std::exp(-x)); });
      }}});

const bool kHardTanhAll = harness::add(
    decl::unary<ops::HardTanh>,
    {{"default", [] {
        return unary_check(
            [](auto x) { return F::hard_tanh(x); },
            [](double x) { return std::max(-1.0, std::min(1.0, x)); });
      }}});

const bool kClipByValueAll = harness::add(
    decl::unary<ops::ClipByValue>,
    {{"default", [] {
        return unary_check(
            [](auto x) { return F::clip_by_value(x, -0.5f, 1.2f); },
            [](double x) { return std::max(-0.5, std::min(1.2, x)); });
      }}});

TEST(ClipByValue, MinAboveMaxIsRejected) {
  try {
    F::clip_by_value(make_variable({2}), 1.0f, -1.0f);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[clip_by_value] min 1"),
              std::string::npos)
        << e.what();
  }
}

const bool kSqrtAll = harness::add(
    decl::unary<ops::Sqrt>,
    {{"default", [] {
        return unary_check([](auto x) { return F::sqrt(x); },
                           [](double x) { return std::sqrt(x); }, 0.5f, 3.0f);
      }}});

const bool kRsqrtAll =
    harness::add(decl::unary<ops::Rsqrt>,
                 {{"default", [] {
                     return unary_check(
                         [](auto x) { return F::rsqrt(x); },
                         [](double x) { return 1 / std::sqrt(x); }, 0.5f, 3.0f);
                   }}});

const bool kAbsAll =
    harness::add(decl::unary<ops::Abs>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::abs(x); },
                                        [](double x) { return std::fabs(x); });
                   }}});

TEST(Abs, GradAtZeroIsZero) {
  auto x = variable_from({3}, {-1.0f, 0.0f, 2.0f}, true);
  auto y = F::abs(x);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{-1, 0, 1}));
}

const bool kErfAll =
    harness::add(decl::unary<ops::Erf>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::erf(x); },
                                        [](double x) { return std::erf(x); });
                   }}});

const bool kSin = harness::add(
    decl::unary<ops::Sin>,
    {{"(3, 4, 5) in [-4, 4)", [] {
        return unary_check([](auto x) { return F::sin(x); },
                           [](double x) { return std::sin(x); }, -4.0f, 4.0f);
      }}});

// ---- binary, with broadcasting ----

using BinaryRef = std::function<double(double, double)>;
using BinaryFn =
    std::function<VariablePtr(const VariablePtr&, const VariablePtr&)>;

// b broadcast along a's leading axes: a (2, 3, 4), b (3, 1) or equal shapes.
FunctionCheck binary_check(BinaryFn f, BinaryRef ref, bool broadcast) {
  FunctionCheck c;
  const Shape sb = broadcast ? Shape{3, 1} : Shape{2, 3, 4};
  c.inputs = {{{2, 3, 4}, -2.0f, 2.0f}, {sb, -2.0f, 2.0f}};
  c.build = [f](const std::vector<VariablePtr>& in) { return f(in[0], in[1]); };
  c.reference = [=](const std::vector<Doubles>& in) {
    Doubles y(24);
    for (int i = 0; i < 24; ++i) {
      const int j = broadcast ? (i / 4) % 3 : i;
      y[i] = ref(in[0][i], in[1][j]);
    }
    return y;
  };
  return c;
}

const bool kMaximum2 = [] {
  BinaryRef ref = [](double a, double b) { return std::max(a, b); };
  BinaryFn f = [](auto a, auto b) { return F::maximum2(a, b); };
  return harness::add(
      decl::binary<ops::Maximum2>,
      {{"same shape", [=] { return binary_check(f, ref, false); }},
       {"broadcast", [=] { return binary_check(f, ref, true); }}});
}();

const bool kMinimum2 = [] {
  BinaryRef ref = [](double a, double b) { return std::min(a, b); };
  BinaryFn f = [](auto a, auto b) { return F::minimum2(a, b); };
  return harness::add(
      decl::binary<ops::Minimum2>,
      {{"same shape", [=] { return binary_check(f, ref, false); }},
       {"broadcast", [=] { return binary_check(f, ref, true); }}});
}();

TEST(Maximum2, TieSendsTheGradToTheFirstInput) {
  auto a = variable_from({2}, {1.0f, 2.0f}, true);
  auto b = variable_from({2}, {1.0f, 3.0f}, true);
  auto y = F::maximum2(a, b);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(a), (Doubles{1, 0}));
  EXPECT_EQ(grad_doubles(b), (Doubles{0, 1}));
}

TEST(Minimum2, ShapesThatDoNotBroadcastAreRejected) {
  try {
    F::minimum2(make_variable({2, 3}), make_variable({4}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[minimum2] x0 with shape (2, 3)"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("cannot broadcast"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace mg::test::math_ops_tests
