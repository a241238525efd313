// Prod, Norm, ReduceSum and ReduceMean: harness cases against double
// references over several axes, zeros in Prod's grads, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::prod_norm_tests {
namespace {

// For each element of a `shape` array, the flat index of its output when
// `axes` (all when empty) are reduced.
std::vector<int64_t> output_index(const Shape& shape, std::vector<int> axes) {
  const int nd = static_cast<int>(shape.size());
  if (axes.empty()) {
    for (int a = 0; a < nd; ++a) axes.push_back(a);
  }
  std::vector<bool> reduced(nd, false);
  for (int a : axes) reduced[a < 0 ? a + nd : a] = true;
  std::vector<int64_t> out(shape_size(shape));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    for (int a = nd - 1; a >= 0; --a) {
      const int64_t idx = rem % shape[a];
      rem /= shape[a];
      if (reduced[a]) continue;
      o += idx * stride;
      stride *= shape[a];
    }
    out[i] = o;
  }
  return out;
}

using Builder = std::function<VariablePtr(const VariablePtr&)>;

// y[o] = finish(fold of x over the elements reducing into o).
harness::Case fold_case(const std::string& label, const Shape& shape,
                        std::vector<int> axes, Builder f, double init,
                        std::function<double(double, double)> fold,
                        std::function<double(double, int64_t)> finish,
                        float lo = -1.0f, float hi = 1.0f) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{shape, lo, hi}};
            c.build = [f](const std::vector<VariablePtr>& in) {
              return f(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const auto map = output_index(shape, axes);
              int64_t n_out = 0;
              for (int64_t o : map) n_out = std::max(n_out, o + 1);
              Doubles y(n_out, init);
              std::vector<int64_t> count(n_out, 0);
              for (size_t i = 0; i < map.size(); ++i) {
                y[map[i]] = fold(y[map[i]], in[0][i]);
                ++count[map[i]];
              }
              for (int64_t o = 0; o < n_out; ++o) y[o] = finish(y[o], count[o]);
              return y;
            };
            return c;
          }};
}

double mul(double a, double b) { return a * b; }
double add(double a, double b) { return a + b; }
double same(double y, int64_t) { return y; }

const bool kProdNorm =
    harness::add(decl::Prod, {fold_case(
                                  "axis 1 of (2, 3, 4)", {2, 3, 4}, {1},
                                  [](auto x) { return F::prod(x, {1}); }, 1,
                                  mul, same, 0.5f, 1.5f),
                              fold_case(
                                  "axes 0, 2 kept", {2, 3, 4}, {0, 2},
                                  [](auto x) {
                                    return F::prod(x, {0, 2}, true);
                                  },
                                  1, mul, same, -1.5f, 1.5f)}) &&
    harness::add(
        decl::Norm,
        {fold_case(
             "p 2 over axis -1", {3, 5}, {-1},
             [](auto x) { return F::norm(x, 2, {-1}); }, 0,
             [](double s, double x) { return s + x * x; },
             [](double s, int64_t) { return std::sqrt(s); }),
         fold_case(
             "p 3 over axes 0, 1", {3, 4, 2}, {0, 1},
             [](auto x) {
               return F::norm(x, 3, {0, 1});
             },
             0, [](double s, double x) { return s + std::pow(std::abs(x), 3); },
             [](double s, int64_t) { return std::cbrt(s); }),
         fold_case(
             "p 1 over everything", {4, 5}, {},
             [](auto x) { return F::norm(x, 1); }, 0,
             [](double s, double x) { return s + std::abs(x); }, same)}) &&
    harness::add(decl::ReduceSum,
                 {fold_case(
                     "(3, 4, 5)", {3, 4, 5}, {},
                     [](auto x) { return F::reduce_sum(x); }, 0, add, same)}) &&
    harness::add(decl::ReduceMean,
                 {fold_case(
                     "(3, 4, 5)", {3, 4, 5}, {},
                     [](auto x) { return F::reduce_mean(x); }, 0, add,
                     [](double s, int64_t n) { return s / n; })});

TEST(Prod, ZerosGiveTheRightGrads) {
  // One zero: its grad is the product of the others, the others' 0. Two
  // zeros: every grad is 0.
  auto x = variable_from({2, 3}, {2, 0, 3, 0, 4, 0}, true);
  auto y = F::prod(x, {1});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0, 0}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 6, 0, 0, 0, 0}));
}

TEST(Norm, HalfSquaresBeyondHalfRangeStillGiveTheNorm) {
  // 1000 elements of 300: each square (90000) overflows half, the norm
  // (9486.8) does not; the sum is in double.
  ContextGuard g(context("cpu", "half"));
  auto y = F::norm(variable_from({1000}, std::vector<float>(1000, 300.0f)));
  y->forward();
  EXPECT_NEAR(to_doubles(y)[0], 300.0 * std::sqrt(1000.0), 8.0);
}

TEST(Norm, BadOrder) {
  expect_error([] { F::norm(make_variable({3}), 0.0f); },
               {"[norm] p 0 must be a finite number above 0"});
}

TEST(ReduceSum, IsSumOfEverything) {
  auto x = variable_from({2, 2}, {1, 2, 3, 4});
  auto y = F::reduce_sum(x);
  y->forward();
  EXPECT_EQ(y->shape(), Shape{});
  EXPECT_EQ(to_doubles(y), (Doubles{10}));
}

}  // namespace
}  // namespace mg::test::prod_norm_tests
