// BroadcastTo and Meshgrid: harness cases against double references (int32
// data moves through both exactly) and errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::broadcast_to_tests {
namespace {

// z[o, m, i] = y[m] for x seen as (outer, y's size, inner) from axis start.
Doubles spread_ref(const Doubles& y, const Shape& xs, int start, int yd) {
  const int nd = static_cast<int>(xs.size());
  const int64_t outer = shape_size(xs, 0, start);
  const int64_t mid = shape_size(xs, start, start + yd);
  const int64_t inner = shape_size(xs, start + yd, nd);
  Doubles z;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t m = 0; m < mid; ++m)
      for (int64_t i = 0; i < inner; ++i) z.push_back(y[m]);
  return z;
}

FunctionCheck broadcast_to_check(Shape xs, Shape ys, int axis) {
  FunctionCheck c;
  c.inputs = {{xs, -1.0f, 1.0f, /*need_grad=*/false}, {ys}};
  c.build = [axis](const std::vector<VariablePtr>& in) {
    return F::broadcast_to(in[0], in[1], axis);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    const int yd = static_cast<int>(ys.size());
    const int start = axis < 0 ? static_cast<int>(xs.size()) - yd : axis;
    return spread_ref(in[1], xs, start, yd);
  };
  return c;
}

harness::Case broadcast_to_case(Shape xs, Shape ys, int axis,
                                std::vector<int> batch_inputs = {}) {
  harness::Case k{"x " + shape_str(xs) + " y " + shape_str(ys) + " axis " +
                      std::to_string(axis),
                  [=] { return broadcast_to_check(xs, ys, axis); }};
  k.batch_inputs = std::move(batch_inputs);
  return k;
}

// The output k of meshgrid on inputs of `lengths`.
harness::Case meshgrid_case(std::vector<int64_t> lengths, bool ij, int k) {
  return {std::string(ij ? "ij" : "xy") + " " + shape_str(lengths) +
              " output " + std::to_string(k),
          [=] {
            FunctionCheck c;
            for (int64_t n : lengths) c.inputs.push_back({{n}});
            c.build = [ij, k](const std::vector<VariablePtr>& in) {
              return F::meshgrid(in, ij).at(k);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int n = static_cast<int>(lengths.size());
              auto axis_of = [&](int j) {
                return !ij && n > 1 && j < 2 ? 1 - j : j;
              };
              Shape s(n);
              for (int j = 0; j < n; ++j) s[axis_of(j)] = lengths[j];
              return spread_ref(in[k], s, axis_of(k), 1);
            };
            return c;
          }};
}

const bool kBroadcastTo =
    harness::add(decl::BroadcastTo,
                 {broadcast_to_case({2, 3, 4}, {3, 4}, -1),
                  broadcast_to_case({2, 3, 4}, {2, 3}, 0, {0, 1}),
                  broadcast_to_case({2, 3, 4, 5}, {3}, 1),
                  broadcast_to_case({3, 4}, {3, 4}, -1, {0, 1})}) &&
    harness::add(
        decl::Meshgrid,
        {meshgrid_case({2, 3, 4}, false, 0), meshgrid_case({2, 3, 4}, false, 1),
         meshgrid_case({2, 3, 4}, true, 2), meshgrid_case({3, 2}, true, 0),
         meshgrid_case({5}, false, 0)});

TEST(BroadcastTo, NNablasExample) {
  // NNabla's docstring: x (2, 3, 4), y (2, 3), axis 0.
  auto x = make_variable({2, 3, 4});
  auto y = variable_from({2, 3}, {1, 2, 3, 4, 5, 6}, true);
  auto z = F::broadcast_to(x, y, 0);
  z->forward();
  ASSERT_EQ(z->shape(), (Shape{2, 3, 4}));
  const Doubles d = to_doubles(z);
  for (int64_t e = 0; e < 24; ++e) EXPECT_EQ(d[e], 1 + e / 4);
  z->backward(1.0f);
  EXPECT_EQ(grad_doubles(y), Doubles(6, 4.0));
}

TEST(BroadcastTo, HalfGradSumsInFloat) {
  // 4096 copies of one element add 4096 grads of 1: exact only in fp32.
  ContextGuard guard(context("cpu", "half"));
  auto y = variable_from({1}, {1.0f}, true);
  auto z = F::broadcast_to(make_variable({4096, 1}), y);
  z->forward();
  z->backward(1.0f);
  EXPECT_EQ(grad_doubles(y), (Doubles{4096}));
}

TEST(BroadcastTo, BadShapes) {
  expect_error(
      [] {
        F::broadcast_to(make_variable({3}), make_variable({2, 3}));
      },
      {"[broadcast_to] y with shape (2, 3) has more axes than x with shape "
       "(3,)"});
  expect_error(
      [] {
        F::broadcast_to(make_variable({2, 3, 4}), make_variable({3, 5}));
      },
      {"[broadcast_to] y with shape (3, 5) does not fit x with shape (2, 3, "
       "4) from axis 1: axis 2 of x has size 4, axis 1 of y 5"});
  expect_error(
      [] {
        F::broadcast_to(make_variable({2, 3, 4}), make_variable({3, 4}), 2);
      },
      {"[broadcast_to] axis 2 puts y with shape (3, 4) past the last axis of "
       "x with shape (2, 3, 4)"});
}

TEST(Meshgrid, NNablasExample) {
  auto a = variable_from({3}, {0, 1, 2});
  auto b = variable_from({2}, {0, 1});
  auto xy = F::meshgrid({a, b});
  auto ij = F::meshgrid({a, b}, true);
  for (auto& v : xy) v->forward();
  for (auto& v : ij) v->forward();
  ASSERT_EQ(xy[0]->shape(), (Shape{2, 3}));
  EXPECT_EQ(to_doubles(xy[0]), (Doubles{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(to_doubles(xy[1]), (Doubles{0, 0, 0, 1, 1, 1}));
  ASSERT_EQ(ij[0]->shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(ij[0]), (Doubles{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(to_doubles(ij[1]), (Doubles{0, 1, 0, 1, 0, 1}));
}

TEST(Meshgrid, EveryInputGetsItsGrad) {
  auto a = variable_from({2}, {1, 2}, true);
  auto b = variable_from({3}, {1, 2, 3}, true);
  auto c = variable_from({4}, {1, 2, 3, 4}, true);
  auto ys = F::meshgrid({a, b, c});
  auto loss = F::add2(F::add2(F::sum(ys[0]), F::sum(ys[1])), F::sum(ys[2]));
  loss->forward();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(a), Doubles(2, 12.0));
  EXPECT_EQ(grad_doubles(b), Doubles(3, 8.0));
  EXPECT_EQ(grad_doubles(c), Doubles(4, 6.0));
}

TEST(Meshgrid, BadInputs) {
  expect_error([] { F::meshgrid({}); }, {"[meshgrid] needs at least 1 input"});
  expect_error(
      [] {
        F::meshgrid({make_variable({2}), make_variable({2, 2})});
      },
      {"[meshgrid] input 1 with shape (2, 2) must be 1-D (inputs have shapes "
       "(2,), (2, 2))"});
}

// NNabla's Meshgrid has no num_outputs: one output per input.
TEST(Meshgrid, NNablasArgumentListInfersTheOutputCount) {
  auto a = variable_from({2}, {1, 2});
  auto b = variable_from({3}, {10, 20, 30});
  auto xy = apply_from_args("Meshgrid", {{"ij_indexing", false}}, {a, b});
  ASSERT_EQ(xy.size(), 2u);
  EXPECT_EQ(xy[0]->shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(xy[0]), (Doubles{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(to_doubles(xy[1]), (Doubles{10, 10, 20, 20, 30, 30}));
  auto three = apply_from_args("Meshgrid", {}, {a, b, a});
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[2]->shape(), (Shape{3, 2, 2}));
}

}  // namespace
}  // namespace mg::test::broadcast_to_tests
