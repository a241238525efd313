// Sort: harness cases (values with their grads, int32 indices) against a
// double reference; ties, NaN, int32 indices under half, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::sort_tests {
namespace {

// Distinct multiples of 1/8 in [-2, 2): exact in half and bfloat16, and far
// enough apart that a finite-difference step keeps the order.
std::vector<float> distinct_values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = -2.0f + 0.125f * static_cast<float>(i);
  std::mt19937 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The stable order along axis of x (shape xs), as positions per element of y.
std::vector<int64_t> order_ref(const Doubles& x, const Shape& xs, int axis,
                               bool reverse) {
  const int nd = static_cast<int>(xs.size());
  const int64_t outer = shape_size(xs, 0, axis), n = xs[axis];
  const int64_t inner = shape_size(xs, axis + 1, nd);
  std::vector<int64_t> idx(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> p(n);
      std::iota(p.begin(), p.end(), 0);
      auto at = [&](int64_t k) { return x[(o * n + k) * inner + i]; };
      std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
        return reverse ? at(a) > at(b) : at(a) < at(b);
      });
      for (int64_t k = 0; k < n; ++k) idx[(o * n + k) * inner + i] = p[k];
    }
  }
  return idx;
}

enum class Out { values, indices_of_pair, only_indices };

harness::Case sort_case(Shape xs, int axis, bool reverse, Out out) {
  const char* what = out == Out::values            ? "values"
                     : out == Out::indices_of_pair ? "with_index: indices"
                                                   : "only_index";
  return {"x " + shape_str(xs) + " axis " + std::to_string(axis) +
              (reverse ? " reverse " : " ") + what,
          [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed(xs, distinct_values(shape_size(xs), 3),
                                         /*need_grad=*/true)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              switch (out) {
                case Out::values:
                  return F::sort(in[0], axis, reverse);
                case Out::indices_of_pair:
                  return F::sort_with_index(in[0], axis, reverse).at(1);
                case Out::only_indices:
                  break;
              }
              return F::sort_index(in[0], axis, reverse);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(xs.size());
              const int a = axis < 0 ? axis + nd : axis;
              const auto idx = order_ref(in[0], xs, a, reverse);
              const int64_t n = xs[a], inner = shape_size(xs, a + 1, nd);
              Doubles y(in[0].size());
              for (size_t e = 0; e < y.size(); ++e) {
                const int64_t i = e % inner, o = e / (n * inner);
                y[e] = out == Out::values ? in[0][(o * n + idx[e]) * inner + i]
                                          : static_cast<double>(idx[e]);
              }
              return y;
            };
            c.check_grad = out == Out::values;
            return c;
          }};
}

const bool kSort = harness::add(
    decl::Sort, {sort_case({3, 5}, -1, false, Out::values),
                 sort_case({2, 4, 3}, 1, true, Out::values),
                 sort_case({2, 4, 3}, 1, false, Out::indices_of_pair),
                 sort_case({3, 6}, -1, true, Out::only_indices)});

TEST(Sort, ValuesAndInt32IndicesUnderHalf) {
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({2, 3}, {3, 1, 2, -1, 5, 0}, true);
  auto yi = F::sort_with_index(x);
  ASSERT_EQ(yi.size(), 2u);
  yi[0]->forward();
  EXPECT_EQ(to_doubles(yi[0]), (Doubles{1, 2, 3, -1, 0, 5}));
  EXPECT_EQ(yi[1]->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(to_doubles(yi[1]), (Doubles{1, 2, 0, 0, 2, 1}));
  // dy = (10, 20, 30 | 40, 50, 60) goes back to where each value came from.
  auto dy = make_ndarray({2, 3});
  float* w = dy->cast<float>(true);
  for (int i = 0; i < 6; ++i) w[i] = 10.0f * (i + 1);
  yi[0]->backward(dy);
  EXPECT_EQ(grad_doubles(x), (Doubles{30, 10, 20, 40, 60, 50}));
}

TEST(Sort, StableTiesAndNaNLast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = variable_from({6}, {2, nan, 1, 2, 1, 0});
  auto up = F::sort_index(x);
  auto down = F::sort_index(x, -1, true);
  up->forward();
  down->forward();
  EXPECT_EQ(to_doubles(up), (Doubles{5, 2, 4, 0, 3, 1}));
  EXPECT_EQ(to_doubles(down), (Doubles{0, 3, 2, 4, 5, 1}));
}

TEST(Sort, LongAxisIndicesStayExact) {
  // 5000 positions: past half's 2048, every index exact in int32.
  ContextGuard guard(context("cpu", "half"));
  std::vector<float> v(5000);
  for (int i = 0; i < 5000; ++i) v[i] = static_cast<float>(4999 - i);
  auto idx = F::sort_index(variable_from({5000}, v));
  idx->forward();
  const Doubles got = to_doubles(idx);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(got[i], 4999 - i) << i;
}

TEST(Sort, Int32DataSortsByItsExactValues) {
  // 3001 and 3002 are one value in half: read as int32 they stay apart.
  ContextGuard guard(context("cpu", "half"));
  auto x = make_variable({3});
  int32_t* p = x->data()->cast<int32_t>(true);
  p[0] = 3002, p[1] = 3001, p[2] = -7;
  auto idx = F::sort_index(x);
  idx->forward();
  EXPECT_EQ(to_doubles(idx), (Doubles{2, 1, 0}));
}

TEST(Sort, BadAxis) {
  expect_error(
      [] {
        F::sort(make_variable({2, 3}), 2);
      },
      {"[sort] axis 2 is out of range for x with shape (2, 3)"});
  expect_error(
      [] {
        F::sort_index(make_variable({2, 3}), -3);
      },
      {"[sort] axis -3 is out of range for x with shape (2, 3)"});
}

}  // namespace
}  // namespace mg::test::sort_tests
