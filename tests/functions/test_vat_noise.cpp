// VATNoise: the normalised noise against double, backward writing eps dy
// into w, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::vat_noise_tests {
namespace {

harness::Case vat_case(const std::string& label, Shape s, VATNoiseOptions o) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{s}, {s, -1.0f, 1.0f, false}};
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::vat_noise(in[0], in[1], o);
            };
            c.reference = [s, o](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(s.size());
              const int base = o.base_axis < 0 ? o.base_axis + nd : o.base_axis;
              const int64_t m = shape_size(s, base, nd);
              Doubles y = in[0];
              for (size_t i = 0; i < y.size(); i += m) {
                double sum = 1e-8;
                for (int64_t k = 0; k < m; ++k) sum += y[i + k] * y[i + k];
                for (int64_t k = 0; k < m; ++k)
                  y[i + k] *= o.eps / std::sqrt(sum);
              }
              return y;
            };
            // x's grad is 0 by NNabla's definition, not y's derivative;
            // checked below.
            c.check_grad = false;
            return c;
          }};
}

VATNoiseOptions vat_opts(int base_axis, float eps) {
  VATNoiseOptions o;
  o.base_axis = base_axis, o.eps = eps;
  return o;
}

const bool kVATNoise =
    harness::add(decl::VATNoise,
                 {vat_case("per sample", {3, 4, 5}, vat_opts(1, 1.0f)),
                  vat_case("base_axis 2 eps 2.5", {2, 3, 4}, vat_opts(2, 2.5f)),
                  vat_case("base_axis -1", {2, 3, 4}, vat_opts(-1, 0.5f))});

// Norms of 4096 values in [0.5, 1) (squared sums near 2390, where an fp16
// accumulator's spacing is 2; no output a half subnormal): against double in
// half and bfloat16.
const bool kVATNoiseLong = harness::add(
    decl::VATNoise,
    {{"4096-term norms",
      [] {
        FunctionCheck c = vat_case("", {2, 4096}, vat_opts(1, 1.0f)).make();
        c.inputs[0].low = 0.5f;
        // x's grad is NNabla's 0, not y's derivative: kept out of the
        // harness's long-sum grad check.
        c.inputs[0].need_grad = false;
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3, c.bf16_rtol = 1e-2;
        return c;
      },
      /*long_sum=*/true}});

TEST(VATNoise, ForwardNormalisesAndBackwardWritesTheGradIntoW) {
  auto x = variable_from({2, 2}, {3, 4, 0, 2}, true);
  auto w = variable_from({2, 2}, {0, 0, 0, 0});
  VATNoiseOptions o;
  o.eps = 2.0f;
  auto y = F::vat_noise(x, w, o);
  auto loss = F::sum(F::mul2(y, variable_from({2, 2}, {1, -1, 0.5f, 3})));
  loss->forward();
  expect_near(to_doubles(y), {1.2, 1.6, 0, 2}, 1e-6, 1e-6, "eps x / |x|");
  x->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(to_doubles(w), (Doubles{2, -2, 1, 6}));  // eps dy
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 0, 0, 0}));
}

TEST(VATNoise, Errors) {
  expect_error(
      [] {
        F::vat_noise(make_variable({2, 3}), make_variable({3, 2}));
      },
      {"[vat_noise] w with shape (3, 2) must have x's shape (2, 3)"});
  expect_error(
      [] {
        F::vat_noise(make_variable({2, 3}), make_variable({2, 3}),
                     vat_opts(0, 1.0f));
      },
      {"[vat_noise] base_axis 0 must leave x with shape (2, 3) a sample axis"});
  expect_error(
      [] {
        auto w = make_variable({2, 3});
        F::vat_noise(make_variable({2, 3}), F::relu(w));
      },
      {"[vat_noise] w is the output of ReLU: backward writes into w"});
}

}  // namespace
}  // namespace mg::test::vat_noise_tests
