// AdaptiveSeparableConvolution: against double, a hand-worked value,
// errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::adaptive_separable_convolution_tests {
namespace {

Doubles asc_ref(const Doubles& x, const Doubles& kv, const Doubles& kh,
                const Shape& xs, const Shape& vs, const Shape& hs) {
  const int64_t oh = xs[2] - vs[1] + 1, ow = xs[3] - hs[1] + 1;
  Doubles y;
  for (int64_t b = 0; b < xs[0]; ++b)
    for (int64_t c = 0; c < xs[1]; ++c)
      for (int64_t h = 0; h < oh; ++h)
        for (int64_t w = 0; w < ow; ++w) {
          double s = 0;
          for (int64_t j = 0; j < vs[1]; ++j)
            for (int64_t i = 0; i < hs[1]; ++i)
              s += kv[((b * vs[1] + j) * vs[2] + h) * vs[3] + w] *
                   kh[((b * hs[1] + i) * hs[2] + h) * hs[3] + w] *
                   x[((b * xs[1] + c) * xs[2] + h + j) * xs[3] + w + i];
          y.push_back(s);
        }
  return y;
}

harness::Case asc_case(const std::string& label, Shape xs, Shape vs, Shape hs) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}, {vs}, {hs}};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::adaptive_separable_convolution(in[0], in[1], in[2]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return asc_ref(in[0], in[1], in[2], xs, vs, hs);
            };
            return c;
          }};
}

const bool kAdaptiveSeparableConvolution =
    harness::add(decl::AdaptiveSeparableConvolution,
                 {asc_case("kernels at output size", {2, 3, 5, 6}, {2, 2, 4, 4},
                           {2, 3, 4, 4}),
                  asc_case("kernels at input size", {2, 2, 4, 5}, {2, 3, 4, 5},
                           {2, 2, 4, 5})});

// 51 x 51 = 2601 products in [0, 1) per output (sums near 325, where an
// fp16 accumulator's spacing is 0.25): against double in half and bfloat16.
const bool kAdaptiveSeparableConvolutionLong = harness::add(
    decl::AdaptiveSeparableConvolution,
    {{"2601-term sums",
      [] {
        FunctionCheck c =
            asc_case("", {1, 2, 51, 52}, {1, 51, 1, 2}, {1, 51, 1, 2}).make();
        for (auto& in : c.inputs) in.low = 0.0f;
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3, c.bf16_rtol = 1e-2;
        c.check_grad = false;
        return c;
      },
      /*long_sum=*/true}});

TEST(AdaptiveSeparableConvolution, HandWorked) {
  // One 2x2 kernel kv (1, 2) x kh (3, 1) over a 2x2 image: one output.
  auto x = variable_from({1, 1, 2, 2}, {1, 2, 3, 4});
  auto kv = variable_from({1, 2, 1, 1}, {1, 2});
  auto kh = variable_from({1, 2, 1, 1}, {3, 1});
  auto y = F::adaptive_separable_convolution(x, kv, kh);
  y->forward();
  // 1*3*1 + 1*1*2 + 2*3*3 + 2*1*4 = 31.
  EXPECT_EQ(to_doubles(y), (Doubles{31}));
}

TEST(AdaptiveSeparableConvolution, Errors) {
  expect_error(
      [] {
        F::adaptive_separable_convolution(make_variable({1, 1, 4, 4}),
                                          make_variable({2, 2, 3, 3}),
                                          make_variable({1, 2, 3, 3}));
      },
      {"[adaptive_separable_convolution] x with shape (1, 1, 4, 4), "
       "vertical_kernel with shape (2, 2, 3, 3) and horizontal_kernel with "
       "shape (1, 2, 3, 3) must have one batch size"});
  expect_error(
      [] {
        F::adaptive_separable_convolution(make_variable({1, 1, 4, 4}),
                                          make_variable({1, 5, 3, 3}),
                                          make_variable({1, 2, 3, 3}));
      },
      {"[adaptive_separable_convolution] x with shape (1, 1, 4, 4) is "
       "smaller than the kernels"});
  expect_error(
      [] {
        F::adaptive_separable_convolution(make_variable({1, 1, 4, 4}),
                                          make_variable({1, 2, 2, 3}),
                                          make_variable({1, 2, 3, 3}));
      },
      {"[adaptive_separable_convolution] vertical_kernel with shape (1, 2, "
       "2, 3): its height must be in [3, 4] and its width in [3, 4]"});
  expect_error(
      [] {
        F::adaptive_separable_convolution(make_variable({1, 4, 4}),
                                          make_variable({1, 2, 2, 3}),
                                          make_variable({1, 2, 3, 3}));
      },
      {"[adaptive_separable_convolution] x with shape (1, 4, 4) must be 4-D"});
}

}  // namespace
}  // namespace mg::test::adaptive_separable_convolution_tests
