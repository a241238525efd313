// TopKData and TopKGrad: harness cases against a double reference (values,
// grads, int32 indices), NNabla's documented shapes, ties, the
// straight-through grad without reduce, TopKGrad's sparse backward, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::top_k_tests {
namespace {

// Distinct magnitudes (i + 1) / 8 with random signs, shuffled: exact in half
// and bfloat16, no ties by value or by |x|, and 1/8 apart, so a
// finite-difference step keeps the order.
std::vector<float> distinct_values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = 0.125f * static_cast<float>(i + 1) * (rng() % 2 ? 1.0f : -1.0f);
  }
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// The positions of the k best keys of one sample, best first, ties by
// position (std::stable_sort).
std::vector<int64_t> top_ref(const double* x, int64_t n, int64_t k, bool abs,
                             bool largest) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  auto key = [&](int64_t i) { return abs ? std::fabs(x[i]) : x[i]; };
  std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
    return largest ? key(a) > key(b) : key(a) < key(b);
  });
  p.resize(static_cast<size_t>(k));
  return p;
}

enum class Out { values, indices };

harness::Case top_k_case(Shape xs, int k, bool abs, bool reduce, int base_axis,
                         bool largest, Out out = Out::values) {
  std::string label =
      shape_str(xs) + " k " + std::to_string(k) + (abs ? " abs" : "") +
      (reduce ? "" : " no reduce") + " base_axis " + std::to_string(base_axis) +
      (largest ? "" : " smallest") + (out == Out::indices ? " indices" : "");
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {InputSpec::fixed(xs, distinct_values(shape_size(xs), 5),
                                         /*need_grad=*/true)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              if (out == Out::indices) {
                return F::top_k_data_with_index(in[0], k, abs, base_axis,
                                                largest)
                    .at(1);
              }
              return F::top_k_data(in[0], k, abs, reduce, base_axis, largest);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(xs.size());
              const int a = base_axis < 0 ? base_axis + nd : base_axis;
              const int64_t n = shape_size(xs, a, nd);
              const int64_t samples = shape_size(xs, 0, a);
              Doubles y(static_cast<size_t>(samples * (reduce ? k : n)), 0.0);
              for (int64_t s = 0; s < samples; ++s) {
                const double* x = in[0].data() + s * n;
                const auto p = top_ref(x, n, k, abs, largest);
                for (int64_t j = 0; j < k; ++j) {
                  const double v =
                      out == Out::indices ? static_cast<double>(p[j]) : x[p[j]];
                  if (reduce) {
                    y[s * k + j] = v;
                  } else {
                    y[s * n + p[j]] = v;
                  }
                }
              }
              return y;
            };
            // Without reduce NNabla's grad is dy everywhere (straight
            // through), not the derivative of the masking:
            // TopKData.WithoutReduceTheGradPassesStraightThrough checks it.
            c.check_grad = reduce && out == Out::values;
            return c;
          }};
}

harness::Case top_k_grad_case(Shape xs, int k, bool abs, int base_axis) {
  return {shape_str(xs) + " k " + std::to_string(k) + (abs ? " abs" : "") +
              " base_axis " + std::to_string(base_axis),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::top_k_grad(in[0], k, abs, base_axis);
            };
            c.reference = [](const std::vector<Doubles>& in) { return in[0]; };
            // The backward keeps the k largest grads of each sample by
            // design, where the numerical grad of y = x is dy everywhere:
            // TopKGrad.PassesTheKLargestGrads checks it.
            c.check_grad = false;
            return c;
          }};
}

const bool kTopK =
    harness::add(decl::TopKData,
                 {top_k_case({3, 4, 5}, 3, false, true, 1, true),
                  top_k_case({3, 4, 5}, 4, true, true, 2, false),
                  top_k_case({2, 3, 4}, 5, false, true, 0, true),
                  top_k_case({3, 4, 5}, 2, true, true, -1, true, Out::indices),
                  top_k_case({3, 4, 5}, 6, false, false, 1, true)}) &&
    harness::add(decl::TopKGrad, {top_k_grad_case({3, 4, 5}, 3, false, 1),
                                  top_k_grad_case({3, 4, 5}, 2, true, 2)});

TEST(TopKData, NNablasDocumentedShapes) {
  auto x = make_variable({4, 5, 6});
  EXPECT_EQ(F::top_k_data(x, 3, false, false)->shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(F::top_k_data(x, 3, false, true)->shape(), (Shape{4, 3}));
  EXPECT_EQ(F::top_k_data(x, 3, false, true, 2)->shape(), (Shape{4, 5, 3}));
}

TEST(TopKData, HandComputedValuesIndicesAndTies) {
  // Sample 0: 3 and 1 tie by |x| with -3 and -1; the earlier position wins.
  auto x = variable_from({2, 5}, {1, -3, 3, 0, -1, 2, 7, -7, 5, 2}, true);
  auto yi = F::top_k_data_with_index(x, 3, /*abs=*/true);
  yi[0]->forward();
  EXPECT_EQ(to_doubles(yi[0]), (Doubles{-3, 3, 1, 7, -7, 5}));
  EXPECT_EQ(yi[1]->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(to_doubles(yi[1]), (Doubles{1, 2, 0, 1, 2, 3}));
  // The smallest, by value: ties (2 and 2) in position order.
  auto low = F::top_k_data(x, 2, false, true, 1, /*largest=*/false);
  low->forward();
  EXPECT_EQ(to_doubles(low), (Doubles{-3, -1, -7, 2}));
  // dx gets dy where the values came from.
  auto dy = make_ndarray({2, 3});
  float* w = dy->cast<float>(true);
  for (int i = 0; i < 6; ++i) w[i] = static_cast<float>(i + 1);
  yi[0]->backward(dy);
  EXPECT_EQ(grad_doubles(x), (Doubles{3, 1, 2, 0, 0, 0, 4, 5, 6, 0}));
}

TEST(TopKData, WithoutReduceTheGradPassesStraightThrough) {
  auto x = variable_from({1, 4}, {4, -1, 2, 3}, true);
  auto y = F::top_k_data(x, 2, false, /*reduce=*/false);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4, 0, 0, 3}));
  auto dy = make_ndarray({1, 4});
  float* w = dy->cast<float>(true);
  for (int i = 0; i < 4; ++i) w[i] = static_cast<float>(10 * (i + 1));
  x->grad()->zero();
  y->backward(dy);
  EXPECT_EQ(grad_doubles(x), (Doubles{10, 20, 30, 40}));  // NNabla's rule
}

TEST(TopKData, NaNIsNeverPickedBeforeANumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = variable_from({1, 4}, {nan, 1, nan, 2});
  for (bool largest : {true, false}) {
    auto yi = F::top_k_data_with_index(x, 3, false, 1, largest);
    yi[0]->forward();
    EXPECT_EQ(to_doubles(yi[1]),
              largest ? (Doubles{3, 1, 0}) : (Doubles{1, 3, 0}));
  }
}

TEST(TopKData, Int32IndicesUnderHalfPast2048) {
  ContextGuard guard(context("cpu", "half"));
  std::vector<float> v(5000, 0.0f);
  v[4321] = 1.0f;
  v[2049] = 0.5f;
  auto yi = F::top_k_data_with_index(variable_from({1, 5000}, v), 2);
  yi[0]->forward();
  EXPECT_EQ(yi[0]->parent()->function().dtype(), Dtype::f16);
  EXPECT_EQ(to_doubles(yi[1]), (Doubles{4321, 2049}));
  EXPECT_EQ(to_doubles(yi[0]), (Doubles{1.0, 0.5}));
}

TEST(TopKGrad, PassesTheKLargestGrads) {
  auto x = variable_from({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  for (bool abs : {false, true}) {
    auto y = F::top_k_grad(x, 2, abs);
    y->forward();
    EXPECT_EQ(to_doubles(y), to_doubles(x));
    auto dy = make_ndarray({2, 4});
    float* w = dy->cast<float>(true);
    const float g[8] = {0.5f, -4, 2, 1, -1, -1, 3, -2};
    std::copy(g, g + 8, w);
    x->grad()->zero();
    y->backward(dy);
    // By value: 2 and 1 | 3 and -1 (the first of the tied -1s); by |dy|:
    // -4 and 2 | 3 and -2.
    EXPECT_EQ(grad_doubles(x), abs ? (Doubles{0, -4, 2, 0, 0, 0, 3, -2})
                                   : (Doubles{0, 0, 2, 1, -1, 0, 3, 0}))
        << abs;
    // A second backward adds the same sparse grad.
    const Doubles once = grad_doubles(x);
    y->backward(dy);
    Doubles twice = once;
    for (double& v : twice) v *= 2;
    EXPECT_EQ(grad_doubles(x), twice);
  }
}

TEST(TopK, BadArgumentsNameTheFunction) {
  expect_error(
      [] {
        F::top_k_data(make_variable({2, 3}), 4);
      },
      {"k 4 must be in [1, 3]", "(2, 3)"}, "[top_k_data] ");
  expect_error(
      [] {
        F::top_k_data(make_variable({2, 3}), 0);
      },
      {"k 0 must be in [1, 3]"}, "[top_k_data] ");
  expect_error(
      [] {
        F::top_k_data(make_variable({2, 3}), 1, false, true, 2);
      },
      {"base_axis 2 is out of range for x with shape (2, 3)"}, "[top_k_data] ");
  expect_error(
      [] {
        apply_function(decl::TopKData,
                       TopKDataOptions{1, false, false, 1, true, true},
                       {make_variable({2, 3})});
      },
      {"with_index needs reduce"}, "[top_k_data] ");
  expect_error(
      [] {
        F::top_k_grad(make_variable({2, 3}), 7);
      },
      {"k 7 must be in [1, 3]"}, "[top_k_grad] ");
}

}  // namespace
}  // namespace mg::test::top_k_tests
