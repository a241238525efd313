// Split, Stack, Broadcast, Pad and Flip through the shared checker.
#include <gtest/gtest.h>

#include <mixgraph/functions/builder.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::array_ops_tests {
namespace {

// Element (i0, i1, i2) of a row-major (d0, d1, d2) array.
int64_t at(const Shape& s, int64_t i0, int64_t i1, int64_t i2) {
  return (i0 * s[1] + i1) * s[2] + i2;
}

TEST(Split, OutputsAreTheSlicesWithTheAxisRemoved) {
  auto x = variable_from({2, 3}, {0, 1, 2, 3, 4, 5});
  auto ys = F::split(x, 1);
  ASSERT_EQ(ys.size(), 3u);
  for (auto& y : ys) EXPECT_EQ(y->shape(), (Shape{2}));
  ys[2]->forward();
  EXPECT_EQ(to_doubles(ys[0]), (Doubles{0, 3}));
  EXPECT_EQ(to_doubles(ys[2]), (Doubles{2, 5}));
}

// y = 2 y_0 - y_2 (y_1 unused: its grad is zero) checks every output's grad.
FunctionCheck split_check() {
  FunctionCheck c;
  c.inputs = {{{2, 3, 4}}};
  c.build = [](const std::vector<VariablePtr>& in) {
    auto ys = F::split(in[0], 1);
    return F::sub2(F::mul_scalar(ys[0], 2.0f), ys[2]);
  };
  c.reference = [](const std::vector<Doubles>& in) {
    const Shape s{2, 3, 4};
    Doubles y(8);
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) {
        y[i * 4 + k] = 2 * in[0][at(s, i, 0, k)] - in[0][at(s, i, 2, k)];
      }
    }
    return y;
  };
  return c;
}

// The last slice alone: int32 data passes through.
FunctionCheck split_last_check() {
  FunctionCheck c;
  c.inputs = {{{2, 3, 4}}};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::split(in[0], 1)[2];
  };
  c.reference = [](const std::vector<Doubles>& in) {
    Doubles y(8);
    for (int i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) y[i * 4 + k] = in[0][at({2, 3, 4}, i, 2, k)];
    }
    return y;
  };
  return c;
}

const bool kSplit = harness::add(
    decl::Split, {{"2 y_0 - y_2 along axis 1", split_check, false, false},
                  {"the last slice along axis 1", split_last_check}});

TEST(Split, NumOutputsMustMatchTheAxis) {
  expect_error(
      [] {
        F::split(make_variable({2, 3}), 2);
      },
      {"[split] axis 2 is out of range for x with shape (2, 3)"});
  expect_error(
      [] {
        apply_function(decl::Split, SplitOptions{0, 3},
                       {make_variable({2, 3})});
      },
      {"[split] x with shape (2, 3) has 2 slices along axis 0, but "
       "num_outputs is 3"});
}

FunctionCheck stack_check(int axis) {
  FunctionCheck c;
  c.inputs = {{{2, 3}}, {{2, 3}}, {{2, 3}}};
  c.build = [axis](const std::vector<VariablePtr>& in) {
    return F::stack(in, axis);
  };
  c.reference = [axis](const std::vector<Doubles>& in) {
    Doubles y(18);
    for (int k = 0; k < 3; ++k) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 3; ++j) {
          const int64_t o = axis == 0   ? at({3, 2, 3}, k, i, j)
                            : axis == 1 ? at({2, 3, 3}, i, k, j)
                                        : at({2, 3, 3}, i, j, k);
          y[o] = in[k][i * 3 + j];
        }
      }
    }
    return y;
  };
  return c;
}

const bool kStack =
    harness::add(decl::Stack, {{"axis 0", [] { return stack_check(0); }},
                               {"axis 1", [] { return stack_check(1); }},
                               {"axis -1", [] { return stack_check(-1); }}});

TEST(Stack, SplitUndoesStack) {
  auto a = variable_from({2}, {1, 2}), b = variable_from({2}, {3, 4});
  auto y = F::stack({a, b}, 1);
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  auto parts = F::split(y, 1);
  parts[1]->forward();
  EXPECT_EQ(to_doubles(parts[1]), (Doubles{3, 4}));
}

TEST(Stack, ShapesMustMatch) {
  expect_error(
      [] {
        F::stack({make_variable({2, 3}), make_variable({3, 2})});
      },
      {"[stack] input 1 with shape (3, 2) differs from input 0 with "
       "shape (2, 3)"});
  expect_error([] { F::stack({make_variable({2})}, 2); },
               {"[stack] axis 2 is out of range"});
}

FunctionCheck broadcast_check(const Shape& from) {
  FunctionCheck c;
  c.inputs = {{from}};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::broadcast(in[0], {2, 3, 4});
  };
  c.reference = [](const std::vector<Doubles>& in) {
    Doubles y(24);
    for (int i = 0; i < 24; ++i) y[i] = in[0][(i / 4) % 3];
    return y;
  };
  return c;
}

// The grad sums 8 copies (a long sum of 4096 is HalfGradSumsInFloat).
const bool kBroadcast =
    harness::add(decl::Broadcast, {{"(3, 1) to (2, 3, 4)",
                                    [] {
                                      return broadcast_check({3, 1});
                                    }},
                                   {"(1, 3, 1) to (2, 3, 4)", [] {
                                      return broadcast_check({1, 3, 1});
                                    }}});

TEST(Broadcast, HalfGradSumsInFloat) {
  // 4096 copies of one value: the grad (4096) is exact only with fp32 sums.
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({1}, {0.5f}, true);
  auto y = F::broadcast(x, {4096});
  y->forward();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{4096}));
}

TEST(Broadcast, BadShapes) {
  expect_error(
      [] {
        F::broadcast(make_variable({3, 2}), {3, 4});
      },
      {"[broadcast] x with shape (3, 2) cannot broadcast to shape "
       "(3, 4): axis 1 is 2 against 4"});
  expect_error(
      [] {
        F::broadcast(make_variable({2, 3}), {3});
      },
      {"it has more dimensions"});
}

// Pads a (2, 3) array by (1, 2) on axis 1 (and by `rows` on axis 0).
Doubles pad_ref(const Doubles& x, const std::string& mode, bool rows) {
  auto src = [&](int64_t j, int64_t n, int64_t before) -> int64_t {
    int64_t i = j - before;
    if (i >= 0 && i < n) return i;
    if (mode == "constant") return -1;
    if (mode == "reflect") return i < 0 ? -i : 2 * (n - 1) - i;
    return i < 0 ? 0 : n - 1;
  };
  const int64_t r0 = rows ? 1 : 0, r1 = rows ? 1 : 0;
  const int64_t h = 2 + r0 + r1, w = 6;
  Doubles y(h * w);
  for (int64_t a = 0; a < h; ++a) {
    for (int64_t b = 0; b < w; ++b) {
      const int64_t i = src(a, 2, r0), j = src(b, 3, 1);
      y[a * w + b] = (i < 0 || j < 0) ? 0.5 : x[i * 3 + j];
    }
  }
  return y;
}

FunctionCheck pad_check(const std::string& mode, bool rows) {
  FunctionCheck c;
  c.inputs = {{{2, 3}}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    std::vector<int> pw =
        rows ? std::vector<int>{1, 1, 1, 2} : std::vector<int>{1, 2};
    return F::pad(in[0], pw, mode, 0.5f);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return pad_ref(in[0], mode, rows);
  };
  return c;
}

std::vector<harness::Case> pad_cases() {
  std::vector<harness::Case> out;
  for (std::string mode : {"constant", "reflect", "repeat"}) {
    for (bool rows : {false, true}) {
      out.push_back({mode + (rows ? " on both axes" : " on the last axis"),
                     [=] { return pad_check(mode, rows); }});
    }
  }
  return out;
}

const bool kPad = harness::add(decl::Pad, pad_cases());

TEST(Pad, BadArguments) {
  expect_error(
      [] {
        F::pad(make_variable({2, 3}), {1, 1, 1});
      },
      {"[pad] pad_width (1, 1, 1) must hold (before, after) pairs"});
  expect_error(
      [] {
        F::pad(make_variable({2, 3}), {1, 1}, "wrap");
      },
      {"[pad] mode 'wrap' is not one of constant, reflect, repeat"});
  expect_error(
      [] {
        F::pad(make_variable({2, 3}), {3, 0}, "reflect");
      },
      {"[pad] reflect padding (3, 0) on axis 1 of x with shape "
       "(2, 3) must be less than its size 3"});
  expect_error(
      [] {
        F::pad(make_variable({2, 3}), {-1, 0});
      },
      {"negative entry"});
}

FunctionCheck flip_check(const std::vector<int>& axes) {
  FunctionCheck c;
  c.inputs = {{{2, 3, 4}}};
  c.build = [axes](const std::vector<VariablePtr>& in) {
    return F::flip(in[0], axes);
  };
  c.reference = [axes](const std::vector<Doubles>& in) {
    const Shape s{2, 3, 4};
    Doubles y(24);
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        for (int64_t k = 0; k < 4; ++k) {
          int64_t idx[3] = {i, j, k};
          for (int a : axes) {
            const int n = a < 0 ? a + 3 : a;
            idx[n] = s[n] - 1 - idx[n];
          }
          y[at(s, i, j, k)] = in[0][at(s, idx[0], idx[1], idx[2])];
        }
      }
    }
    return y;
  };
  return c;
}

const bool kFlip =
    harness::add(decl::Flip, {{"axis -1", [] { return flip_check({-1}); }},
                              {"axis 0", [] { return flip_check({0}); }},
                              {"axes 0 and 2", [] {
                                 return flip_check({0, 2});
                               }}});

TEST(Flip, BadAxes) {
  expect_error(
      [] {
        F::flip(make_variable({2, 3}), {2});
      },
      {"[flip] axes (2,) has axis 2, out of range for x with shape (2, 3)"});
  expect_error(
      [] {
        F::flip(make_variable({2, 3}), {1, -1});
      },
      {"[flip] axes (1, -1) names axis 1 twice for x with shape (2, 3)"});
}

// NNabla's Split has no num_outputs: the count is x.shape[axis], found when
// the function is linked to x (axis left out: NNabla's 0).
TEST(Split, NNablasArgumentListInfersTheOutputCount) {
  auto x = variable_from({2, 3}, {1, 5, 2, 7, 0, 7});
  auto along1 = apply_from_args("Split", {{"axis", int64_t{1}}}, {x});
  ASSERT_EQ(along1.size(), 3u);
  EXPECT_EQ(to_doubles(along1[0]), (Doubles{1, 7}));
  EXPECT_EQ(to_doubles(along1[2]), (Doubles{2, 7}));
  auto along0 = apply_from_args("Split", {}, {x});
  ASSERT_EQ(along0.size(), 2u);
  EXPECT_EQ(to_doubles(along0[1]), (Doubles{7, 0, 7}));
}

}  // namespace
}  // namespace mg::test::array_ops_tests
