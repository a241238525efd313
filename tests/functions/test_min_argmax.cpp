// Min, ArgMax and ArgMin.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::min_argmax_tests {
namespace {

// (2, 3, 4) reduced over axis 1 by `pick` (returns the chosen index).
Doubles reduce_axis1(const Doubles& x, bool want_index, bool is_min) {
  Doubles y;
  for (int a = 0; a < 2; ++a) {
    for (int k = 0; k < 4; ++k) {
      int best = 0;
      for (int j = 1; j < 3; ++j) {
        const double v = x[(a * 3 + j) * 4 + k], b = x[(a * 3 + best) * 4 + k];
        if (is_min ? v < b : v > b) best = j;
      }
      y.push_back(want_index ? best : x[(a * 3 + best) * 4 + k]);
    }
  }
  return y;
}

const bool kMinAxis = harness::add(
    decl::Min, {{"axis", [] {
                   FunctionCheck c;
                   c.inputs = {{{2, 3, 4}}};
                   c.build = [](const std::vector<VariablePtr>& in) {
                     return F::min(in[0], {1});
                   };
                   c.reference = [](const std::vector<Doubles>& in) {
                     return reduce_axis1(in[0], false, true);
                   };
                   return c;
                 }}});

FunctionCheck min_all_axes_check() {
  FunctionCheck c;
  c.inputs = {{{3, 4}}};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::min(in[0], {}, true);
  };
  c.reference = [](const std::vector<Doubles>& in) {
    return Doubles{*std::min_element(in[0].begin(), in[0].end())};
  };
  return c;
}

const bool kMinAllAxes =
    harness::add(decl::Min, {{"all axes, keep_dims", min_all_axes_check}});

TEST(Min, AllAxesKeepDims) {
  auto y = F::min(make_variable({3, 4}), {}, true);
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
}

FunctionCheck arg_check(bool is_min) {
  FunctionCheck c;
  c.inputs = {{{2, 3, 4}}};
  c.build = [is_min](const std::vector<VariablePtr>& in) {
    return is_min ? F::argmin(in[0], {1}) : F::argmax(in[0], {1});
  };
  c.reference = [is_min](const std::vector<Doubles>& in) {
    return reduce_axis1(in[0], true, is_min);
  };
  c.check_grad = false;
  c.half_atol = c.bf16_atol = 0;  // the same index, or a tie broken alike
  c.half_rtol = c.bf16_rtol = 0;
  return c;
}

const bool kArgMax =
    harness::add(decl::ArgMax, {{"axis 1", [] { return arg_check(false); }}});
const bool kArgMin =
    harness::add(decl::ArgMin, {{"axis 1", [] { return arg_check(true); }}});

TEST(ArgMax, FlattenedAndFirstOfTies) {
  auto x = variable_from({2, 3}, {1, 5, 2, 5, 0, 3});
  auto y = F::argmax(x);
  auto z = F::argmax(x, {-1}, true);
  y->forward();
  z->forward();
  EXPECT_EQ(y->shape(), Shape{});
  EXPECT_EQ(to_doubles(y), (Doubles{1}));
  EXPECT_EQ(z->shape(), (Shape{2, 1}));
  EXPECT_EQ(to_doubles(z), (Doubles{1, 0}));
}

TEST(ArgMax, HalfIndicesBeyond2048AreExact) {
  // Half cannot hold 4097; ArgMax writes its indices as fp32.
  ContextGuard guard(context("cpu", "half"));
  std::vector<float> v(5000, 0.0f);
  v[4097] = 1.0f;
  auto y = F::argmax(variable_from({5000}, v));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4097}));
}

TEST(ArgMax, GivesAZeroGradient) {
  auto x = variable_from({3}, {1, 3, 2}, true);
  auto y = F::add2(F::argmax(x), F::sum(x));
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 1, 1}));
}

TEST(Min, EmptyAxisAndBadAxis) {
  for (auto f : {+[](const VariablePtr& x) { return F::min(x, {1}); },
                 +[](const VariablePtr& x) { return F::argmax(x, {1}); }}) {
    try {
      f(make_variable({2, 0}));
      FAIL() << "expected an exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(
          std::string(e.what()).find("x with shape (2, 0) has no elements "
                                     "on axis 1"),
          std::string::npos)
          << e.what();
    }
  }
  try {
    F::min(make_variable({2, 3}), {2});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[min] axes (2,) has axis 2, out of range for x with shape "
                  "(2, 3)"),
              std::string::npos)
        << e.what();
  }
}

// NNabla's Max and Min: with_index adds the indices (an integer output),
// only_index makes them the one output; an index counts within the reduced
// axes, row-major. axes left out reduce every axis (NNabla's default).
TEST(MaxMin, NNablasWithIndexAndOnlyIndex) {
  auto x = variable_from({2, 3}, {1, 5, 2, 7, 0, 7}, true);
  auto args = [](std::vector<int64_t> axes, bool with_index, bool only_index) {
    FunctionArgs a = {{"keep_dims", false},
                      {"with_index", with_index},
                      {"only_index", only_index}};
    if (!axes.empty()) a.emplace_back("axes", axes);
    return a;
  };
  auto max = apply_from_args("Max", args({1}, true, false), {x});
  ASSERT_EQ(max.size(), 2u);
  EXPECT_EQ(to_doubles(max[0]), (Doubles{5, 7}));
  EXPECT_EQ(to_doubles(max[1]), (Doubles{1, 0}));
  EXPECT_EQ(max[1]->shape(), (Shape{2}));
  max[0]->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 1, 0, 1, 0, 0}));
  auto min = apply_from_args("Min", args({1}, true, false), {x});
  EXPECT_EQ(to_doubles(min[0]), (Doubles{1, 0}));
  EXPECT_EQ(to_doubles(min[1]), (Doubles{0, 1}));
  auto only = apply_from_args("Max", args({1}, false, true), {x});
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(to_doubles(only[0]), (Doubles{1, 0}));
  auto all = apply_from_args("Max", args({}, true, false), {x});
  EXPECT_EQ(all[0]->shape(), Shape{});
  EXPECT_EQ(to_doubles(all[0]), (Doubles{7}));
  EXPECT_EQ(to_doubles(all[1]), (Doubles{3}));
  auto first_axis = apply_from_args("Min", args({0}, false, true), {x});
  EXPECT_EQ(to_doubles(first_axis[0]), (Doubles{0, 1, 0}));
  // The plain builders are as before: one output.
  auto plain = F::max(x, {1});
  plain->forward();
  EXPECT_EQ(to_doubles(plain), (Doubles{5, 7}));
}

}  // namespace
}  // namespace mg::test::min_argmax_tests
