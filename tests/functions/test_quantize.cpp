// The quantizers (BinarySigmoid, BinaryTanh, FixedPointQuantize,
// Pow2Quantize, Prune) and Unlink: values against double references on inputs
// kept off the steps (a finite difference cannot see a straight-through grad,
// so the grads are checked by hand below), argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::quantize_tests {
namespace {

// Values in (-2, 2) that no quantizer here rounds near a tie or a step,
// even after half or bfloat16 rounded x (by at most 2^-8 of its size):
// j / 16 + 1 / 64 lies 1/64 from the ties of delta 1/16 and 1/4, and those
// within 3% (in log2) of a power-of-two midpoint 2^(k + 1/2) are left out.
std::vector<float> off_step_values() {
  std::vector<float> v;
  for (int j = -31; j < 32; ++j) {
    const double x = j / 16.0 + 1 / 64.0, l = std::log2(std::abs(x));
    if (std::abs(l - std::floor(l) - 0.5) > 0.03) {
      v.push_back(static_cast<float>(x));
    }
  }
  return v;
}

harness::Case quantize_case(const std::string& label,
                            VariablePtr (*f)(const VariablePtr&),
                            double (*ref)(double)) {
  return {label, [=] {
            FunctionCheck c = unary_check(f, ref);
            const std::vector<float> values = off_step_values();
            c.inputs = {InputSpec::fixed({static_cast<int64_t>(values.size())},
                                         values, true)};
            c.check_grad = false;
            // Values on a coarse grid: half and bf16 round x first, which
            // can move a value across a step only if it is within 2^-8 of
            // one; the inputs are not.
            c.half_atol = c.bf16_atol = 1e-6;
            c.half_rtol = c.bf16_rtol = 1e-2;
            return c;
          }};
}

double fixed_ref(double x) {
  const double hi = 127 * 0.0625;
  if (x > hi) return hi;
  if (x < -hi) return -hi;
  const double q = std::floor(std::abs(x) / 0.0625 + 0.5) * 0.0625;
  return x < 0 ? -q : q;
}

double pow2_ref(double x) {  // sign, with_zero, n 8, m 1
  const double a = std::abs(x), hi = 2, lo = std::ldexp(1.0, 1 - 63);
  double q = std::exp2(std::round(std::log2(a)));
  if (q > hi) q = hi;
  if (q < lo) q = a < lo / std::sqrt(2.0) ? 0 : lo;
  return x < 0 ? -q : q;
}

VariablePtr fixed_default(const VariablePtr& x) {
  return F::fixed_point_quantize(x);
}
VariablePtr fixed_unsigned_4(const VariablePtr& x) {
  return F::fixed_point_quantize(x, false, 4, 0.25f);
}
VariablePtr pow2_default(const VariablePtr& x) { return F::pow2_quantize(x); }
VariablePtr pow2_unsigned(const VariablePtr& x) {
  return F::pow2_quantize(x, false, false, 4, 0);
}

const bool kQuantize =
    harness::add(decl::unary<ops::BinarySigmoid>,
                 {quantize_case("steps", F::binary_sigmoid,
                                [](double x) { return x > 0 ? 1.0 : 0.0; })}) &&
    harness::add(
        decl::unary<ops::BinaryTanh>,
        {quantize_case("steps", F::binary_tanh,
                       [](double x) { return x > 0 ? 1.0 : -1.0; })}) &&
    harness::add(
        decl::unary<ops::FixedPointQuantize>,
        {quantize_case("sign, 8 bits, delta 1/16", fixed_default, fixed_ref),
         quantize_case("unsigned, 4 bits, delta 1/4", fixed_unsigned_4,
                       [](double x) {
                         if (x < 0) return 0.0;
                         if (x > 15 * 0.25) return 15 * 0.25;
                         return std::floor(x / 0.25 + 0.5) * 0.25;
                       })}) &&
    harness::add(
        decl::unary<ops::Pow2Quantize>,
        {quantize_case("sign, with zero, 8 bits, m 1", pow2_default, pow2_ref),
         quantize_case("unsigned, no zero, 4 bits, m 0", pow2_unsigned,
                       [](double x) {
                         // 4 exponent bits: powers 2^-15 .. 1.
                         const double lo = std::ldexp(1.0, -15);
                         if (x < 0) return lo;
                         double q = std::exp2(std::round(std::log2(x)));
                         return std::min(1.0, std::max(lo, q));
                       })});

// Prune at rate r against a sort in double: magnitudes below the one at
// sorted position floor((n - 1) r) become 0.
harness::Case prune_case(float rate) {
  return {
      "rate " + std::to_string(rate),
      [=] {
        FunctionCheck c;
        // Distinct magnitudes 1/16 apart (exact in bfloat16 below 2): no
        // tie, and rounding x cannot reorder them.
        std::vector<float> v;
        for (int i = 0; i < 30; ++i) {
          v.push_back((i % 2 ? -1.0f : 1.0f) * (1 + ((i * 7) % 30)) / 16.0f);
        }
        c.inputs = {InputSpec::fixed({5, 6}, v, true)};
        c.build = [rate](const std::vector<VariablePtr>& in) {
          return F::prune(in[0], rate);
        };
        c.reference = [rate](const std::vector<Doubles>& in) {
          Doubles mag;
          for (double x : in[0]) mag.push_back(std::abs(x));
          std::sort(mag.begin(), mag.end());
          const double t =
              mag[static_cast<size_t>((mag.size() - 1) * double(rate))];
          Doubles y = in[0];
          for (double& x : y) x = std::abs(x) < t ? 0.0 : x;
          return y;
        };
        c.check_grad = false;  // straight through: checked below
        return c;
      },
      false,
      true,
      {},
      "the threshold is over the whole array: a new batch moves it"};
}

const bool kPruneAndUnlink =
    harness::add(decl::Prune,
                 {prune_case(0.9f), prune_case(0.5f), prune_case(0.0f)}) &&
    harness::add(decl::unary<ops::Unlink>,
                 {{"identity", [] {
                     FunctionCheck c = unary_check(
                         [](const VariablePtr& x) { return F::unlink(x); },
                         [](double x) { return x; });
                     c.check_grad = false;
                     return c;
                   }}});

TEST(Prune, ZeroesTheSmallestAndPassesTheGrad) {
  auto x = variable_from({5}, {0.1f, -3.0f, 0.5f, -0.2f, 2.0f}, true);
  auto y = F::prune(x, 0.5f);  // threshold: sorted |x|[2] = 0.5
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0, -3, 0.5, 0, 2}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), Doubles(5, 1.0));
  auto all = F::prune(x, 1.0f);
  all->forward();
  EXPECT_EQ(to_doubles(all), Doubles(5, 0.0));
  expect_error([&] { F::prune(x, 1.5f); },
               {"[prune] rate 1.5 must be in [0, 1]"});
}

TEST(Unlink, PassesValuesAndCutsTheGrad) {
  auto x = variable_from({3}, {1, 2, 3}, true);
  auto w = variable_from({3}, {4, 5, 6}, true);
  // y = unlink(x) * w + x: x's grad comes from the second term alone.
  auto y = F::sum(F::add2(F::mul2(F::unlink(x), w), x));
  y->forward();
  EXPECT_EQ(to_doubles(y)[0], 4 + 10 + 18 + 6.0);
  y->backward();
  EXPECT_EQ(grad_doubles(x), Doubles(3, 1.0));
  EXPECT_EQ(grad_doubles(w), (Doubles{1, 2, 3}));
}

// The grads each quantizer passes for x = (-1.5, -0.5, 0.25, 0.75, 3, 10)
// and dy = 1, in every type_config.
TEST(Quantize, StraightThroughGrads) {
  const std::vector<float> xs{-1.5f, -0.5f, 0.25f, 0.75f, 3.0f, 10.0f};
  struct Want {
    VariablePtr (*f)(const VariablePtr&);
    Doubles dx;
  };
  const std::vector<Want> wants{
      {F::binary_sigmoid, {0, 0.5, 0.5, 0.5, 0, 0}},
      {F::binary_tanh, {0, 1, 1, 1, 0, 0}},
      // Bounds +-7.9375: 10 is outside.
      {fixed_default, {1, 1, 1, 1, 1, 0}},
      // Unsigned: negatives are outside [0, 3.75], 10 too.
      {fixed_unsigned_4, {0, 0, 1, 1, 1, 0}},
      // 2^round(log2 10) = 8 > 2^1: outside.
      {pow2_default, {1, 1, 1, 1, 0, 0}},
      // Unsigned, m 0: negatives and 3 (-> 4 > 1) and 10 are outside.
      {pow2_unsigned, {0, 0, 1, 1, 0, 0}},
  };
  for (const char* type_config : {"float", "half", "bfloat16"}) {
    ContextGuard guard(context("cpu", type_config));
    for (size_t k = 0; k < wants.size(); ++k) {
      auto x = variable_from({6}, xs, true);
      auto y = wants[k].f(x);
      y->forward();
      y->backward();
      EXPECT_EQ(grad_doubles(x), wants[k].dx) << type_config << " case " << k;
    }
  }
  // Without ste_fine_grained the grad is dy everywhere.
  auto x = variable_from({6}, xs, true);
  auto y = F::fixed_point_quantize(x, true, 8, 0.0625f, false);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), Doubles(6, 1.0));
}

TEST(Quantize, BadArguments) {
  auto x = make_variable({3});
  expect_error([&] { F::fixed_point_quantize(x, true, 1); },
               {"[fixed_point_quantize] n 1 must be in [2, 31] (one bit holds "
                "the sign)"});
  expect_error([&] { F::fixed_point_quantize(x, true, 8, 0.0f); },
               {"[fixed_point_quantize] delta 0 must be positive"});
  expect_error([&] { F::pow2_quantize(x, true, true, 2); },
               {"[pow2_quantize] n 2 leaves 0 exponent bits after the sign "
                "and zero bits; 1 to 7 are supported"});
}

}  // namespace
}  // namespace mg::test::quantize_tests
