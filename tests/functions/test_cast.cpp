// Cast: the dtype y is stored in, rounding as Half and BFloat16 do, and
// the grad going back in x's dtype.
//
// Tolerances: the checker's defaults for the reduced runs (half 1e-2,
// bfloat16 5e-2); a cast to float is exact in every context, a cast to half
// rounds by at most 2^-12 relative, which forward_rtol 1e-3 covers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::cast_tests {
namespace {

FunctionCheck cast_check(Dtype dtype) {
  FunctionCheck c;
  c.inputs = {{{3, 4, 5}}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    return F::cast(in[0], dtype);
  };
  c.reference = [](const std::vector<Doubles>& in) { return in[0]; };
  return c;
}

const bool kCastToFloat = harness::add(
    decl::Cast, {{"to float", [] { return cast_check(Dtype::f32); }}});

const bool kCastToHalf = harness::add(
    decl::Cast, {{"to half", [] {
                    auto c = cast_check(Dtype::f16);
                    c.forward_atol =
                        1e-4;  // half rounding: 2^-12 relative, 2^-25 near 0
                    c.forward_rtol = 1e-3;
                    return c;
                  }}});

const bool kCastToBFloat16 = harness::add(
    decl::Cast, {{"to b float16", [] {
                    auto c = cast_check(Dtype::bf16);
                    c.forward_atol = 1e-4;  // bfloat16 rounding: 2^-9 relative
                    c.forward_rtol = 4e-3;
                    return c;
                  }}});

// Values that exercise rounding: ties to even, overflow, subnormals, nan.
const std::vector<float> kValues = {
    1.0f,
    1.0f + std::ldexp(1.0f, -11),      // half tie: rounds to 1 (even)
    1.0f + 3 * std::ldexp(1.0f, -11),  // half tie: rounds up
    1.0f + std::ldexp(1.0f, -8),       // bfloat16 tie
    65504.0f,
    65520.0f,  // half max; rounds to inf
    1e-7f,
    3e-8f,  // half subnormals
    -2.5f,
    1e30f,
    std::numeric_limits<float>::infinity(),
    std::numeric_limits<float>::quiet_NaN()};

template <class U>
void expect_rounds_like(Dtype dtype) {
  for (const char* config : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(config);
    ContextGuard guard(context("cpu", config));
    auto x = variable_from({static_cast<int64_t>(kValues.size())}, kValues);
    auto y = F::cast(x, dtype);
    y->forward();
    // y's head is the requested dtype, whatever the context.
    EXPECT_EQ(y->data()->array().dtype(), dtype);
    const U* p = static_cast<const U*>(y->data()->array().get(dtype));
    for (size_t i = 0; i < kValues.size(); ++i) {
      EXPECT_EQ(p[i].bits, U(kValues[i]).bits) << "value " << kValues[i];
    }
  }
}

TEST(Cast, ToHalfRoundsAsHalfDoes) { expect_rounds_like<Half>(Dtype::f16); }
TEST(Cast, ToBFloat16RoundsAsBFloat16Does) {
  expect_rounds_like<BFloat16>(Dtype::bf16);
}

TEST(Cast, ToFloatInAHalfContextKeepsFloatPrecision) {
  // x is read as it is held, not through the context's half.
  ContextGuard guard(context("cpu", "half"));
  const float v = 1.0f + std::ldexp(1.0f, -20);
  auto x = variable_from({1}, {v});
  auto y = F::cast(x, Dtype::f32);
  EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f32);
  EXPECT_EQ(y->data()->get<const float>()[0], v);
}

TEST(Cast, HalfToFloatIsExact) {
  auto x = make_variable({3}, true);
  Half* h = x->data()->cast<Half>(true);
  h[0] = Half(0.1f), h[1] = Half(-3.0f), h[2] = Half(1e-7f);
  auto y = F::cast(x, Dtype::f32);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f32);
  const float* f = y->data()->get<const float>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f[i], static_cast<float>(h[i]));
  // The grad goes back in x's dtype: half.
  y->backward(2.0f);
  EXPECT_EQ(x->grad()->array().dtype(), Dtype::f16);
  EXPECT_EQ(grad_doubles(x), (Doubles{2, 2, 2}));
}

TEST(Cast, GradOfAFloatInputStaysFloatInAHalfContext) {
  ContextGuard guard(context("cpu", "half"));
  const float g = 1.0f + std::ldexp(1.0f, -20);  // not representable in half
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::cast(x, Dtype::f16);
  y->forward();
  auto dy = make_ndarray({2});
  std::fill_n(dy->cast<float>(true), 2, g);
  y->backward(dy);
  EXPECT_EQ(x->grad()->array().dtype(), Dtype::f32);
  EXPECT_EQ(x->grad()->get<const float>()[0], g);
}

TEST(Cast, RegisteredForEveryFloatType) {
  const auto backends = FunctionRegistry::instance().backends("Cast");
  EXPECT_EQ(backends.size(), 3u);
  for (const char* config : {"half", "bfloat16"}) {
    ContextGuard guard(context("cpu", config));
    auto y = F::cast(make_variable({2}), Dtype::f32);
    EXPECT_EQ(y->parent()->function().dtype(),
              context("cpu", config).type_config());
  }
}

}  // namespace
}  // namespace mg::test::cast_tests
