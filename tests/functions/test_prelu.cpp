// PReLU: harness cases (a slope per channel, one shared slope) against
// double references, the parametric builder, and argument errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::prelu_tests {
namespace {

// x (2, 3, 4) with w of w_shape along base_axis 1 (or shared).
harness::Case prelu_case(Shape w_shape, int base_axis) {
  const std::string label =
      "w " + shape_str(w_shape) + ", base_axis " + std::to_string(base_axis);
  return {label,
          [=] {
            FunctionCheck c;
            c.inputs = {{{2, 3, 4}, -2.0f, 2.0f}, {w_shape, -0.5f, 0.5f}};
            c.build = [base_axis](const std::vector<VariablePtr>& in) {
              return F::prelu(in[0], in[1], base_axis);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y(24);
              const int a = base_axis < 0 ? base_axis + 3 : base_axis;
              const int64_t inner = shape_size(Shape{2, 3, 4}, a + 1, 3);
              const int64_t channels = in[1].size() == 1 ? 1 : in[1].size();
              for (int64_t i = 0; i < 24; ++i) {
                const double w = in[1][(i / inner) % channels];
                y[i] = in[0][i] > 0 ? in[0][i] : w * in[0][i];
              }
              return y;
            };
            return c;
          },
          false, true,
          /*batch_inputs=*/{0}};
}

const bool kPReLU = harness::add(
    decl::PReLU, {prelu_case({3}, 1), prelu_case({4}, 2), prelu_case({4}, -1),
                  prelu_case({}, 1), prelu_case({1}, 1)});

TEST(PReLU, ParametricSlopeStartsAtAQuarter) {
  ParameterScope params;
  auto x = variable_from({1, 2, 2}, {-4, 4, -8, 8});
  auto y = PF::prelu(x, params["act"], 1, /*shared=*/false);
  y->forward();
  EXPECT_EQ(params.get("act/prelu/slope")->shape(), (Shape{2}));
  EXPECT_EQ(to_doubles(y), (Doubles{-1, 4, -2, 8}));
  auto shared = PF::prelu(x, params["shared"]);
  EXPECT_EQ(params.get("shared/prelu/slope")->shape(), (Shape{}));
}

TEST(PReLU, SlopeGradSumsOverItsChannel) {
  // dw[c] = sum of dy x over x <= 0 in channel c (dy = 1).
  auto x = variable_from({2, 2, 1}, {-1, 3, -2, -5}, true);
  auto w = variable_from({2}, {0.25f, 0.5f}, true);
  auto y = F::sum(F::prelu(x, w));
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(w), (Doubles{-3, -5}));
  EXPECT_EQ(grad_doubles(x), (Doubles{0.25, 1, 0.25, 0.5}));
}

TEST(PReLU, BadSlopeShape) {
  expect_error(
      [] {
        F::prelu(make_variable({2, 3, 4}), make_variable({4}));
      },
      {"[prelu] w with shape (4,) must be () or (1,) (one shared slope) or "
       "(3,) "
       "(a slope per channel of x with shape (2, 3, 4) along base_axis 1)"});
  expect_error(
      [] {
        F::prelu(make_variable({2, 3}), make_variable({3}), 2);
      },
      {"[prelu] base_axis 2 is out of range for x with shape (2, 3)"});
}

}  // namespace
}  // namespace mg::test::prelu_tests
