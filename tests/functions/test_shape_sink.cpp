// Shape and Sink: harness cases, NNabla's start/end rules, int32 sizes
// past half's integers, Sink's ones (accumulated), one_input_grad = false
// keeping grads set by hand, errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::shape_sink_tests {
namespace {

harness::Case shape_case(Shape xs, int64_t start, int64_t end, Doubles want) {
  return {"x " + shape_str(xs) + " start " + std::to_string(start) + " end " +
              std::to_string(end),
          [=] {
            FunctionCheck c;
            c.inputs = {InputSpec(xs, -1.0f, 1.0f, /*need_grad=*/false)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::shape(in[0], start, end);
            };
            c.reference = [=](const std::vector<Doubles>&) { return want; };
            c.check_grad = false;
            return c;
          }};
}

harness::Case sink_case() {
  return {"x (2, 3), (4)", [] {
            FunctionCheck c;
            c.inputs = {InputSpec(Shape{2, 3}), InputSpec(Shape{4})};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::sink({in[0], in[1]});
            };
            c.reference = [](const std::vector<Doubles>&) {
              return Doubles{0.0};
            };
            // y is a constant 0 whose grads NNabla defines as ones: finite
            // differences cannot see them (checked below).
            c.check_grad = false;
            return c;
          }};
}

const bool kShape =
    harness::add(decl::Shape, {shape_case({2, 3, 4}, 0, 0, {2, 3, 4}),
                               shape_case({5, 3, 4}, 1, 3, {3, 4}),
                               shape_case({4, 3, 2, 6}, -2, 0, {2, 6}),
                               shape_case({3, 2, 7}, 0, -1, {3, 2})});
const bool kSink = harness::add(decl::Sink, {sink_case()});

TEST(Shape, NNablasStartAndEndRules) {
  auto x = make_variable({2, 3, 4, 5});
  auto run = [&](int64_t s, int64_t e) {
    auto y = F::shape(x, s, e);
    y->forward();
    EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
    return to_doubles(y);
  };
  EXPECT_EQ(run(0, 0), (Doubles{2, 3, 4, 5}));
  EXPECT_EQ(run(1, 3), (Doubles{3, 4}));
  EXPECT_EQ(run(-3, -1), (Doubles{3, 4}));
  EXPECT_EQ(run(2, 100), (Doubles{4, 5}));  // end clamps to ndim
  EXPECT_EQ(run(7, 0), Doubles{});          // start clamps: empty
  EXPECT_EQ(run(3, 2), Doubles{});          // end before start: empty
  EXPECT_EQ(run(0, -9), Doubles{});
}

TEST(Shape, SizesStayExactUnderHalf) {
  ContextGuard g(context("cpu", "half"));
  auto x = make_variable({4097, 3});  // 4097 is no half
  auto y = F::shape(x);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(y->data()->get<const int32_t>()[0], 4097);
}

TEST(Shape, Errors) {
  expect_error([] { F::shape(make_variable({})); },
               {"[shape] x is a scalar (shape ())"});
  expect_error(
      [] {
        F::shape(make_variable({2, 3}), -3);
      },
      {"[shape] start -3 is before axis 0 of x with shape (2, 3)"});
}

TEST(Sink, ForwardRunsEveryInputAndBackwardGivesOnes) {
  auto a = variable_from({3}, {1, 2, 3}, true);
  auto b = variable_from({2}, {4, 5}, true);
  auto ya = F::mul_scalar(a, 2.0f);
  auto yb = F::exp(b);
  auto s = F::sink({ya, yb});
  EXPECT_EQ(s->shape(), Shape{});
  s->forward();
  EXPECT_EQ(to_doubles(ya), (Doubles{2, 4, 6}));
  a->grad()->zero();
  b->grad()->zero();
  s->backward(5.0f);  // dy is ignored, as NNabla's
  EXPECT_EQ(grad_doubles(a), (Doubles{2, 2, 2}));
  expect_near(grad_doubles(b), {std::exp(4.0), std::exp(5.0)}, 1e-4, 1e-6,
              "db");
}

TEST(Sink, OnesAddToAGradThatAccumulates) {
  auto a = variable_from({2}, {1, 2}, true);
  auto s = F::sink({a, F::mul_scalar(a, 3.0f)});
  s->forward();
  a->grad()->zero();
  s->backward(1.0f);
  EXPECT_EQ(grad_doubles(a), (Doubles{4, 4}));  // 1 + 3
}

TEST(Sink, WithoutOneInputGradTheGradsSetByHandFlow) {
  auto a = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(a, 3.0f);
  auto s = F::sink({y}, /*one_input_grad=*/false);
  s->forward();
  a->grad()->zero();
  float* g = y->grad()->cast<float>(true);
  g[0] = 2.0f, g[1] = -1.0f;  // an external grad for y
  s->backward(1.0f);
  EXPECT_EQ(grad_doubles(a), (Doubles{6, -3}));
}

}  // namespace
}  // namespace mg::test::shape_sink_tests
