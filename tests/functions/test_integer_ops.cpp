// Mod2 and BitShift: harness cases against double references (broadcast
// shapes, whole values fed as int32 too), NumPy's mod and fmod examples on
// int32 data, ONNX's BitShift example, unsigned shifts of int32, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::integer_ops_tests {
namespace {

// Broadcast reference: y[j] = f(x0[i0], x1[i1]) for x1 of shape (n,) under
// x0 of shape (m, n).
Doubles rowwise(const Doubles& a, const Doubles& b,
                const std::function<double(double, double)>& f) {
  Doubles y(a.size());
  for (size_t j = 0; j < a.size(); ++j) y[j] = f(a[j], b[j % b.size()]);
  return y;
}

harness::Case mod2_case(std::string label, std::vector<float> x0,
                        std::vector<float> x1, bool fmod) {
  harness::Case k{
      label, [=] {
        FunctionCheck c;
        const int64_t n = static_cast<int64_t>(x1.size());
        const int64_t m = static_cast<int64_t>(x0.size()) / n;
        c.inputs = {InputSpec::fixed({m, n}, x0), InputSpec::fixed({n}, x1)};
        c.build = [=](const std::vector<VariablePtr>& in) {
          return F::mod2(in[0], in[1], fmod);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          return rowwise(in[0], in[1],
                         [](double a, double b) { return std::fmod(a, b); });
        };
        c.check_grad = false;
        return c;
      }};
  k.int32_layout = false;  // arithmetic, not a layout
  k.batch_inputs = {0};
  return k;
}

// Values exact in half and bfloat16 (at most 8 significant bits), so the
// reduced runs see the same numbers and no remainder jumps.
const bool kMod2 = harness::add(
    decl::Mod2,
    {mod2_case("floating (3, 4) by (4)",
               {5.5f, -5.5f, 7.25f, -3.0f, 0.75f, 6.0f, -0.5f, 9.5f, -7.75f,
                1.0f, 2.25f, -4.5f},
               {2.0f, -1.5f, 0.5f, 3.0f}, false),
     // Whole values: also fed as int32, where fmod is C's %.
     mod2_case("whole (2, 4) by (4) fmod", {7, -7, 9, -9, 100, -100, 5, 0},
               {3, 3, -4, -4}, true),
     mod2_case("whole nonnegative (2, 3) by (3)", {7, 9, 100, 5, 0, 11},
               {3, 4, 7}, false)});

harness::Case shift_case(std::string direction, std::vector<float> shifts) {
  harness::Case k{
      direction + " (3, 4) by (4)", [=] {
        FunctionCheck c;
        c.inputs = {InputSpec::fixed({3, 4}, {16, 4, 1, 200, 0, 255, 3, 7, 96,
                                              1000, 12, 65280}),
                    InputSpec::fixed({4}, shifts)};
        c.build = [=](const std::vector<VariablePtr>& in) {
          return F::bit_shift(in[0], in[1], direction);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return rowwise(in[0], in[1], [&](double a, double s) {
            if (s < 0 || s >= 32) return 0.0;
            const uint32_t v = static_cast<uint32_t>(a);
            const int k = static_cast<int>(s);
            return static_cast<double>(
                static_cast<int32_t>(direction == "LEFT" ? v << k : v >> k));
          });
        };
        c.check_grad = false;
        return c;
      }};
  k.batch_inputs = {0};
  return k;
}

const bool kBitShift = harness::add(
    decl::BitShift,
    {shift_case("LEFT", {1, 2, 3, 7}), shift_case("RIGHT", {1, 2, -1, 32})});

VariablePtr int32_from(const Shape& s, std::vector<int32_t> v) {
  auto x = make_variable(s);
  std::copy(v.begin(), v.end(), x->data()->cast<int32_t>(true));
  return x;
}

std::vector<int32_t> int32s(const VariablePtr& y) {
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  const int32_t* p = y->data()->get<const int32_t>();
  return std::vector<int32_t>(p, p + y->size());
}

TEST(Mod2, NumPysModAndFmodOnInt32) {
  auto a = int32_from({4}, {-7, 7, -7, 7});
  auto b = int32_from({4}, {3, 3, -3, -3});
  auto mod = F::mod2(a, b);
  auto fmod = F::mod2(a, b, /*fmod=*/true);
  mod->forward();
  fmod->forward();
  EXPECT_EQ(int32s(mod), (std::vector<int32_t>{2, 1, -1, -2}));   // np.mod
  EXPECT_EQ(int32s(fmod), (std::vector<int32_t>{-1, 1, -1, 1}));  // np.fmod
}

TEST(Mod2, Int32StaysExactUnderHalf) {
  ContextGuard g(context("cpu", "half"));
  auto a = int32_from({2}, {2147483647, -2147483647 - 1});
  auto b = int32_from({2}, {1000, -1});
  auto y = F::mod2(a, b);
  y->forward();
  EXPECT_EQ(int32s(y), (std::vector<int32_t>{647, 0}));
}

TEST(Mod2, FloatingDataIsAlwaysFmod) {
  auto y = F::mod2(variable_from({2}, {-7.5f, 7.5f}), variable_from({1}, {2}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{-1.5, 1.5}));
}

TEST(Mod2, Errors) {
  expect_error(
      [] {
        auto y = F::mod2(int32_from({2}, {5, 6}), int32_from({2}, {2, 0}));
        y->forward();
      },
      {"[mod2] x1 is 0 at element 1: an integer remainder by zero"});
  expect_error(
      [] {
        F::mod2(make_variable({2, 3}), make_variable({2}));
      },
      {"[mod2] x0 with shape (2, 3) and x1 with shape (2,) cannot "
       "broadcast"});
}

TEST(BitShift, OnnxsExample) {
  auto x = int32_from({3}, {16, 4, 1});
  auto s = int32_from({3}, {1, 2, 3});
  auto right = F::bit_shift(x, s, "RIGHT");
  auto left = F::bit_shift(x, s, "LEFT");
  right->forward();
  left->forward();
  EXPECT_EQ(int32s(right), (std::vector<int32_t>{8, 1, 0}));
  EXPECT_EQ(int32s(left), (std::vector<int32_t>{32, 16, 8}));
}

TEST(BitShift, Int32ShiftsAsUnsignedAndOutOfRangeGivesZero) {
  auto x = int32_from({4}, {-1, -1, 1, 1 << 30});
  auto s = int32_from({4}, {28, 32, -1, 1});
  auto right = F::bit_shift(x, s, "RIGHT");
  auto left = F::bit_shift(x, s, "LEFT");
  right->forward();
  left->forward();
  EXPECT_EQ(int32s(right), (std::vector<int32_t>{15, 0, 0, 1 << 29}));
  EXPECT_EQ(int32s(left),
            (std::vector<int32_t>{-268435456, 0, 0, -2147483647 - 1}));
}

TEST(BitShift, Errors) {
  expect_error(
      [] { F::bit_shift(int32_from({1}, {1}), int32_from({1}, {1}), "UP"); },
      {"[bit_shift] direction is 'UP'; expected 'LEFT' or 'RIGHT'"});
  expect_error(
      [] {
        auto y = F::bit_shift(variable_from({2}, {1.5f, 2}),
                              variable_from({1}, {1}));
        y->forward();
      },
      {"[bit_shift]", "x"});
}

}  // namespace
}  // namespace mg::test::integer_ops_tests
