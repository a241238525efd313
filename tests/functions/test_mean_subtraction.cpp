// MeanSubtraction: inference through the checker; training's running mean
// and count by hand (fp32 and exact under half), NNabla's approximate grad,
// the parametric layer, errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::mean_subtraction_tests {
namespace {

const bool kMeanSubtraction =
    harness::add(decl::MeanSubtraction,
                 {{"inference (4, 3, 2) base_axis 1", [] {
                     // Training changes rmean and t at every forward (checked
                     // below).
                     FunctionCheck c;
                     c.inputs = {{{4, 3, 2}}, {{3, 2}, -1.0f, 1.0f, false}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       MeanSubtractionOptions o;
                       o.update_running_mean = false;
                       return F::mean_subtraction(in[0], in[1], nullptr, o);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y = in[0];
                       for (size_t i = 0; i < y.size(); ++i)
                         y[i] -= in[1][i % 6];
                       return y;
                     };
                     return c;
                   }}});

TEST(MeanSubtraction, TrainingUpdatesTheRunningMeanAndCount) {
  // x rows (1, 2), (3, 6): batch mean (2, 4). t = 1 and rmean (0, 1):
  // rmean += (mean - rmean) / 2 = (1, 2.5), t = 2, y = x - rmean.
  auto x = variable_from({2, 2}, {1, 2, 3, 6}, true);
  auto rm = variable_from({2}, {0, 1});
  auto t = make_variable({1});
  t->data()->cast<int32_t>()[0] = 1;
  auto y = F::mean_subtraction(x, rm, t);
  auto loss = F::sum(y);
  loss->forward();
  EXPECT_EQ(to_doubles(rm), (Doubles{1, 2.5}));
  EXPECT_EQ(t->data()->get<const int32_t>()[0], 2);
  EXPECT_EQ(to_doubles(y), (Doubles{0, -0.5, 2, 3.5}));
  // NNabla's grad: dy (1 - 1 / (t M)) with t = 2 and M = 2.
  x->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{0.75, 0.75, 0.75, 0.75}));
  // The first batch (t = 0) sets the running mean to its own mean.
  auto rm0 = variable_from({2}, {5, 5});
  auto t0 = variable_from({1}, {0});
  F::mean_subtraction(variable_from({2, 2}, {1, 2, 3, 6}), rm0, t0)->forward();
  EXPECT_EQ(to_doubles(rm0), (Doubles{2, 4}));
  EXPECT_EQ(to_doubles(t0), (Doubles{1}));
}

TEST(MeanSubtraction, TheCountSaturatesAtInt32Max) {
  // Held as int32 it stays exact under half; at 2^31 - 1 it stops.
  ContextGuard g(context("cpu", "half"));
  auto t = make_variable({1});
  t->data()->cast<int32_t>()[0] = 2147483646;
  auto rm = variable_from({2}, {0, 0});
  auto y = F::mean_subtraction(variable_from({1, 2}, {1, 2}), rm, t);
  y->forward();
  EXPECT_EQ(t->data()->get<const int32_t>()[0], 2147483647);
  y->forward();
  EXPECT_EQ(t->data()->get<const int32_t>()[0], 2147483647);
  EXPECT_EQ(t->data()->array().dtype(), Dtype::i32);
}

TEST(MeanSubtraction, HalfKeepsTheRunningMeanInFp32) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope scope;
  // Batches of 2048 and 2050: the running mean 2049 is no half value.
  auto x = make_variable({2, 1});
  auto y = PF::mean_subtraction(x, scope);
  const float batches[2][2] = {{2048, 2048}, {2050, 2050}};
  for (const auto& b : batches) {
    float* d = x->data()->cast<float>(true);
    d[0] = b[0], d[1] = b[1];
    y->forward();
  }
  auto mean = scope["mean_subtraction"].get("mean");
  auto t = scope["mean_subtraction"].get("t");
  EXPECT_EQ(mean->data()->array().dtype(), Dtype::f32);
  EXPECT_EQ(to_doubles(mean), (Doubles{2049}));
  EXPECT_EQ(to_doubles(t), (Doubles{2}));
  EXPECT_EQ(mean->shape(), (Shape{1}));
}

TEST(MeanSubtraction, ShapesAndTheCount) {
  expect_error(
      [] {
        F::mean_subtraction(make_variable({4, 3}), make_variable({4}),
                            make_variable({1}));
      },
      {"[mean_subtraction] rmean with shape (4,) must have x's shape from "
       "base_axis 1: (3,)"});
  expect_error(
      [] {
        MeanSubtractionOptions o;
        o.base_axis = 2;
        F::mean_subtraction(make_variable({4, 3}), make_variable({3}),
                            make_variable({1}), o);
      },
      {"[mean_subtraction] base_axis 2 must be in [0, 2)"});
  expect_error(
      [] {
        F::mean_subtraction(make_variable({4, 3}), make_variable({3}),
                            make_variable({2}));
      },
      {"[mean_subtraction] t with shape (2,) must hold one value"});
  expect_error(
      [] {
        F::mean_subtraction(make_variable({4, 3}), make_variable({3}), nullptr);
      },
      {"[mean_subtraction] t (the batch count) is needed with "
       "update_running_mean"});
  expect_error(
      [] {
        auto t = variable_from({1}, {-1});
        F::mean_subtraction(make_variable({4, 3}), make_variable({3}), t)
            ->forward();
      },
      {"[mean_subtraction] t holds -1"});
}

}  // namespace
}  // namespace mg::test::mean_subtraction_tests
