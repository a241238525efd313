// ClipGradByValue and ClipGradByNorm: the identity forward, the clipped and
// rescaled grads by hand, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::clip_grad_tests {
namespace {

// A loss whose grad at y is k: sum(y * k).
VariablePtr weighted_sum(const VariablePtr& y, const Shape& s,
                         const std::vector<float>& k) {
  return F::sum(F::mul2(y, variable_from(s, k)));
}

const bool kClipGradByValue = harness::add(
    decl::ClipGradByValue,
    {{"(3, 4), bounds wide enough to leave the checker's grads alone", [] {
        FunctionCheck c;
        const Shape s{3, 4};
        c.inputs = {{s},
                    InputSpec::fixed(s, std::vector<float>(12, -100.0f)),
                    InputSpec::fixed(s, std::vector<float>(12, 100.0f))};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::clip_grad_by_value(in[0], in[1], in[2]);
        };
        c.reference = [](const std::vector<Doubles>& in) { return in[0]; };
        return c;
      }}});

const bool kClipGradByNorm = harness::add(
    decl::ClipGradByNorm, {{"(2, 3, 4) axes 1", [] {
                              FunctionCheck c;
                              c.inputs = {{{2, 3, 4}}};
                              c.build = [](const std::vector<VariablePtr>& in) {
                                ClipGradByNormOptions o;
                                o.axes = {1};
                                return F::clip_grad_by_norm(in[0], o);
                              };
                              c.reference = [](const std::vector<Doubles>& in) {
                                return in[0];
                              };
                              // The grad is rescaled to a fixed norm, which is
                              // no derivative of the identity: checked by hand
                              // below.
                              c.check_grad = false;
                              return c;
                            }}});

TEST(ClipGradByValue, ClipsEachGradToItsBounds) {
  const Shape s{2, 3};
  auto x = variable_from(s, {1, 2, 3, 4, 5, 6}, true);
  auto lo = variable_from(s, {-1, -1, -1, -2, -2, -2});
  auto hi = variable_from(s, {1, 1, 1, 0.5f, 0.5f, 0.5f});
  auto y = F::clip_grad_by_value(x, lo, hi);
  auto loss = weighted_sum(y, s, {3, -3, 0.25f, 1, -5, 0.5f});
  loss->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 3, 4, 5, 6}));
  x->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{1, -1, 0.25, 0.5, -2, 0.5}));
}

// A bound computed in the graph from a weight: its port has no grad, so
// the bound's grad is zero (written, not left as whatever memory held),
// and the weight gets only what its other use sends.
TEST(ClipGradByValue, ABoundFromTheGraphGetsAZeroGrad) {
  const Shape s{2, 3};
  auto x = variable_from(s, {1, 2, 3, 4, 5, 6}, true);
  auto m = variable_from(s, {-1, -1, -1, -2, -2, -2}, true);
  auto lo = F::identity(m);
  auto other = F::identity(lo);  // before the clip: its backward runs after
  auto hi = variable_from(s, {1, 1, 1, 1, 1, 1});
  auto y = F::add2(F::clip_grad_by_value(x, lo, hi), other);
  auto loss = weighted_sum(y, s, {1, 1, 1, 1, 1, 1});
  loss->forward();
  x->grad()->zero();
  m->grad()->zero();
  loss->backward(1.0f, /*clear_buffer=*/true);
  EXPECT_EQ(grad_doubles(m), (Doubles{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 1, 1, 1, 1, 1}));
}

TEST(ClipGradByNorm, RescalesTheGradToClipNormOverAxes) {
  // dy rows (3, 4) and (0.6, 0.8) over axis 1: norms 5 and 1; clip_norm 2.
  const Shape s{2, 2};
  auto x = variable_from(s, {0, 0, 0, 0}, true);
  ClipGradByNormOptions o;
  o.clip_norm = 2.0f;
  o.axes = {1};
  auto y = F::clip_grad_by_norm(x, o);
  auto loss = weighted_sum(y, s, {3, 4, 0.6f, 0.8f});
  loss->forward();
  x->grad()->zero();
  loss->backward(1.0f);
  expect_near(grad_doubles(x), {1.2, 1.6, 1.2, 1.6}, 1e-6, 1e-6, "dx");
  // Every axis (the default): the norm of all four is sqrt(26).
  auto x2 = variable_from(s, {0, 0, 0, 0}, true);
  auto loss2 = weighted_sum(F::clip_grad_by_norm(x2), s, {3, 4, 0.6f, 0.8f});
  loss2->forward();
  x2->grad()->zero();
  loss2->backward(1.0f);
  const double n = std::sqrt(26.0);
  expect_near(grad_doubles(x2), {3 / n, 4 / n, 0.6 / n, 0.8 / n}, 1e-6, 1e-6,
              "dx over every axis");
}

TEST(ClipGradByNorm, HalfSumsTheSquaresInFp32) {
  // 4096 grads of 100: their squares sum to 4.1e7, far past half's 65504.
  ContextGuard g(context("cpu", "half"));
  const Shape s{4096};
  auto x = variable_from(s, std::vector<float>(4096, 0.0f), true);
  auto loss = weighted_sum(F::clip_grad_by_norm(x), s,
                           std::vector<float>(4096, 100.0f));
  loss->forward();
  x->grad()->zero();
  loss->backward(1.0f);
  const Doubles dx = grad_doubles(x);
  expect_near(dx, Doubles(4096, 1.0 / 64.0), 1e-5, 1e-3, "dx");
}

TEST(ClipGradByValue, BoundsMustHaveXsShape) {
  expect_error(
      [] {
        F::clip_grad_by_value(make_variable({2, 3}), make_variable({1, 3}),
                              make_variable({2, 3}));
      },
      {"[clip_grad_by_value] min with shape (1, 3) must have x's shape (2, "
       "3)"});
  expect_error(
      [] {
        F::clip_grad_by_value(make_variable({2, 3}), make_variable({2, 3}),
                              make_variable({3}));
      },
      {"[clip_grad_by_value] max with shape (3,) must have x's shape"});
}

TEST(ClipGradByNorm, AxesMustBeInRangeAndDistinct) {
  ClipGradByNormOptions o;
  o.axes = {2};
  expect_error(
      [&] {
        F::clip_grad_by_norm(make_variable({2, 3}), o);
      },
      {"[clip_grad_by_norm] axes (2,) has axis 2, out of range for x with "
       "shape (2, 3)"});
  o.axes = {1, -1};
  expect_error(
      [&] {
        F::clip_grad_by_norm(make_variable({2, 3}), o);
      },
      {"[clip_grad_by_norm] axes (1, -1) names axis 1 twice for x with "
       "shape (2, 3)"});
}

}  // namespace
}  // namespace mg::test::clip_grad_tests
