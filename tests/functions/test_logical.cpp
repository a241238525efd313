// NNabla's comparisons and logical ops (and their Scalar forms), IsNaN,
// IsInf, ResetNaN and ResetInf: harness cases against double references on
// values with ties and zeros, and the properties a mask relies on (1 and 0
// in the context's type, zero grads, nan and inf handled).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::logical_tests {
namespace {

// Values from {-1, -0.5, 0, 0.5, 1}, exact in every type, so that ties and
// zeros occur and every type compares the same numbers.
std::vector<float> small_values(int n, int seed) {
  static const float kSet[] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f};
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = kSet[(i * 7 + seed * 3 + i / 5) % 5];
  return v;
}

using BinaryRef = bool (*)(double, double);
using BinaryFn = VariablePtr (*)(const VariablePtr&, const VariablePtr&);

// x0 (2, 3, 4) against x1 (2, 3, 4), or x1 (3, 1) broadcast.
harness::Case binary_case(BinaryFn f, BinaryRef ref, bool broadcast) {
  return {broadcast ? "x1 (3, 1) broadcast" : "same shape", [=] {
            FunctionCheck c;
            const Shape s1 = broadcast ? Shape{3, 1} : Shape{2, 3, 4};
            c.inputs = {InputSpec::fixed({2, 3, 4}, small_values(24, 1)),
                        InputSpec::fixed(s1, small_values(shape_size(s1), 2))};
            c.build = [f](const std::vector<VariablePtr>& in) {
              return f(in[0], in[1]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y(24);
              for (int i = 0; i < 24; ++i) {
                const int j = broadcast ? (i / 4) % 3 : i;
                y[i] = ref(in[0][i], in[1][j]) ? 1.0 : 0.0;
              }
              return y;
            };
            c.check_grad = false;
            return c;
          }};
}

bool truth(double v) { return v != 0.0; }

const bool kComparisons =
    harness::add(
        decl::binary<ops::Equal>,
        {binary_case(
             F::equal, [](double a, double b) { return a == b; }, false),
         binary_case(
             F::equal, [](double a, double b) { return a == b; }, true)}) &&
    harness::add(
        decl::binary<ops::NotEqual>,
        {binary_case(
            F::not_equal, [](double a, double b) { return a != b; }, true)}) &&
    harness::add(
        decl::binary<ops::Greater>,
        {binary_case(
            F::greater, [](double a, double b) { return a > b; }, true)}) &&
    harness::add(decl::binary<ops::GreaterEqual>,
                 {binary_case(
                     F::greater_equal,
                     [](double a, double b) { return a >= b; }, true)}) &&
    harness::add(
        decl::binary<ops::Less>,
        {binary_case(
            F::less, [](double a, double b) { return a < b; }, false)}) &&
    harness::add(
        decl::binary<ops::LessEqual>,
        {binary_case(
            F::less_equal, [](double a, double b) { return a <= b; }, true)}) &&
    harness::add(
        decl::binary<ops::LogicalAnd>,
        {binary_case(
            F::logical_and,
            [](double a, double b) { return truth(a) && truth(b); }, true)}) &&
    harness::add(
        decl::binary<ops::LogicalOr>,
        {binary_case(
            F::logical_or,
            [](double a, double b) { return truth(a) || truth(b); }, true)}) &&
    harness::add(
        decl::binary<ops::LogicalXor>,
        {binary_case(
            F::logical_xor,
            [](double a, double b) { return truth(a) != truth(b); }, false)});

// One input (3, 4, 5) of small values; `f` and `ref` take the scalar.
harness::Case unary_case(std::string label,
                         std::function<VariablePtr(const VariablePtr&)> f,
                         std::function<bool(double)> ref) {
  return {std::move(label), [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed({3, 4, 5}, small_values(60, 3))};
            c.build = [f](const std::vector<VariablePtr>& in) {
              return f(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y(in[0].size());
              for (size_t i = 0; i < y.size(); ++i) y[i] = ref(in[0][i]);
              return y;
            };
            c.check_grad = false;
            return c;
          }};
}

const bool kScalarComparisons =
    harness::add(decl::unary<ops::EqualScalar>,
                 {unary_case(
                     "val 0.5", [](auto x) { return F::equal_scalar(x, 0.5f); },
                     [](double x) { return x == 0.5; })}) &&
    harness::add(
        decl::unary<ops::NotEqualScalar>,
        {unary_case(
            "val 0", [](auto x) { return F::not_equal_scalar(x, 0.0f); },
            [](double x) { return x != 0; })}) &&
    harness::add(decl::unary<ops::GreaterScalar>,
                 {unary_case(
                     "val 0", [](auto x) { return F::greater_scalar(x, 0.0f); },
                     [](double x) { return x > 0; })}) &&
    harness::add(
        decl::unary<ops::GreaterEqualScalar>,
        {unary_case(
            "val 0.5", [](auto x) { return F::greater_equal_scalar(x, 0.5f); },
            [](double x) { return x >= 0.5; })}) &&
    harness::add(
        decl::unary<ops::LessScalar>,
        {unary_case(
            "val -0.5", [](auto x) { return F::less_scalar(x, -0.5f); },
            [](double x) { return x < -0.5; })}) &&
    harness::add(
        decl::unary<ops::LessEqualScalar>,
        {unary_case(
            "default val 1", [](auto x) { return F::less_equal_scalar(x); },
            [](double x) { return x <= 1; })}) &&
    harness::add(
        decl::unary<ops::LogicalAndScalar>,
        {unary_case(
             "val true", [](auto x) { return F::logical_and_scalar(x, true); },
             [](double x) { return truth(x); }),
         unary_case(
             "val false",
             [](auto x) { return F::logical_and_scalar(x, false); },
             [](double) { return false; })}) &&
    harness::add(
        decl::unary<ops::LogicalOrScalar>,
        {unary_case(
            "val false", [](auto x) { return F::logical_or_scalar(x, false); },
            [](double x) { return truth(x); })}) &&
    harness::add(
        decl::unary<ops::LogicalXorScalar>,
        {unary_case(
            "val true", [](auto x) { return F::logical_xor_scalar(x, true); },
            [](double x) { return !truth(x); })}) &&
    harness::add(
        decl::unary<ops::LogicalNot>,
        {unary_case(
            "zeros and nonzeros", [](auto x) { return F::logical_not(x); },
            [](double x) { return x == 0; })});

// nan and inf among finite values: the cases the tests below check exactly;
// in the harness, finite inputs (all zeros out, x passes through).
const bool kNanInf =
    harness::add(decl::unary<ops::IsNaN>,
                 {unary_case(
                     "finite", [](auto x) { return F::isnan(x); },
                     [](double) { return false; })}) &&
    harness::add(decl::unary<ops::IsInf>,
                 {unary_case(
                     "finite", [](auto x) { return F::isinf(x); },
                     [](double) { return false; })}) &&
    harness::add(decl::unary<ops::ResetNaN>,
                 {{"finite",
                   [] {
                     return unary_check(
                         [](auto x) { return F::reset_nan(x, 3.0f); },
                         [](double x) { return x; });
                   }}}) &&
    harness::add(decl::unary<ops::ResetInf>,
                 {{"finite", [] {
                     return unary_check(
                         [](auto x) { return F::reset_inf(x, 3.0f); },
                         [](double x) { return x; });
                   }}});

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(NanInf, AreFoundAndResetInEveryType) {
  for (const char* type_config : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type_config);
    ContextGuard guard(context("cpu", type_config));
    const std::vector<float> v = {1.5f, kNan, -kInf, kInf, 0.0f};
    auto run = [&](auto f) {
      auto x = variable_from({5}, v, true);
      auto y = f(x);
      y->forward();
      return std::make_pair(to_doubles(y), x);
    };
    EXPECT_EQ(run([](auto x) { return F::isnan(x); }).first,
              (Doubles{0, 1, 0, 0, 0}));
    EXPECT_EQ(run([](auto x) { return F::isinf(x); }).first,
              (Doubles{0, 0, 1, 1, 0}));
    auto [reset, x] = run([](auto x) { return F::reset_nan(x, -2.0f); });
    EXPECT_EQ(reset[0], 1.5);
    EXPECT_EQ(reset[1], -2.0);
    EXPECT_EQ(reset[2], -std::numeric_limits<double>::infinity());
    auto x2 = variable_from({5}, v, true);
    auto y2 = F::reset_inf(x2, 7.0f);
    y2->forward();
    const Doubles r2 = to_doubles(y2);
    EXPECT_TRUE(std::isnan(r2[1]));
    EXPECT_EQ(r2[2], 7.0);
    EXPECT_EQ(r2[3], 7.0);
    // The grad passes where the value was kept, not where it was replaced.
    x2->grad()->zero();
    y2->backward();
    EXPECT_EQ(grad_doubles(x2), (Doubles{1, 1, 0, 0, 1}));
  }
}

// A mask from comparisons multiplies into data; the comparison has a zero
// grad and the data's grad is the mask.
TEST(Comparisons, MakeMasksWithZeroGrads) {
  for (const char* type_config : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type_config);
    ContextGuard guard(context("cpu", type_config));
    auto a = variable_from({4}, {0.0f, 1.0f, 2.0f, 3.0f}, true);
    auto b = variable_from({1}, {1.5f}, true);
    auto mask = F::greater(a, b);
    auto y = F::mul2(a, mask);
    y->forward();
    EXPECT_EQ(to_doubles(mask), (Doubles{0, 0, 1, 1}));
    EXPECT_EQ(mask->data()->array().dtype(),
              std::string(type_config) == "float"  ? Dtype::f32
              : std::string(type_config) == "half" ? Dtype::f16
                                                   : Dtype::bf16);
    a->grad()->zero();
    b->grad()->zero();
    y->backward();
    EXPECT_EQ(grad_doubles(a), (Doubles{0, 0, 1, 1}));
    EXPECT_EQ(grad_doubles(b), (Doubles{0}));
  }
}

TEST(Comparisons, ShapesThatDoNotBroadcastAreRejected) {
  expect_error(
      [] {
        F::less(make_variable({2, 3}), make_variable({4}));
      },
      {"x0 with shape (2, 3)", "x1 with shape (4,)"}, "[less]");
}

}  // namespace
}  // namespace mg::test::logical_tests
