// CategoricalCrossEntropy, KLMultinomial, ConfusionMatrix, BinaryError and
// SearchSorted: harness cases against double references, label and shape
// errors, and the properties the metrics rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::loss_metrics_tests {
namespace {

// x (outer, C, inner) probabilities in [0.05, 1), t (outer, 1, inner).
harness::Case categorical_case(const Shape& xs, int axis) {
  const int nd = static_cast<int>(xs.size());
  const int a = axis < 0 ? axis + nd : axis;
  Shape ts = xs;
  ts[a] = 1;
  const int64_t outer = shape_size(xs, 0, a), size = xs[a],
                inner = shape_size(xs, a + 1, nd);
  return {
      "axis " + std::to_string(axis),
      [=] {
        FunctionCheck c;
        c.inputs = {{xs, 0.05f, 1.0f},
                    InputSpec::fixed(ts, cycling_labels(outer * inner, size))};
        c.build = [axis](const std::vector<VariablePtr>& in) {
          return F::categorical_cross_entropy(in[0], in[1], axis);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          Doubles y(outer * inner);
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t j = 0; j < inner; ++j) {
              const auto l = static_cast<int64_t>(in[1][o * inner + j]);
              y[o * inner + j] = -std::log(in[0][(o * size + l) * inner + j]);
            }
          }
          return y;
        };
        return c;
      },
      false, true,
      /*batch_inputs=*/{0, 1}};
}

harness::Case kl_case(const Shape& s, int base_axis) {
  return {"base_axis " + std::to_string(base_axis), [=] {
            FunctionCheck c;
            c.inputs = {{s, 0.05f, 1.0f}, {s, 0.05f, 1.0f}};
            c.build = [base_axis](const std::vector<VariablePtr>& in) {
              return F::kl_multinomial(in[0], in[1], base_axis);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t rows = shape_size(s, 0, base_axis);
              const int64_t k = shape_size(s) / rows;
              Doubles y(rows, 0.0);
              for (int64_t i = 0; i < shape_size(s); ++i) {
                const double p = in[0][i], q = in[1][i];
                y[i / k] += p * (std::log(p + 1e-8) - std::log(q + 1e-8));
              }
              return y;
            };
            return c;
          }};
}

// Distinct scores (no ties in any type) and labels cycling through classes.
harness::Case confusion_case() {
  return {"(12, 4)",
          [] {
            FunctionCheck c;
            std::vector<float> x(48);
            for (int i = 0; i < 48; ++i) {
              x[i] = static_cast<float>((i * 7) % 48) * 0.25f;
            }
            c.inputs = {InputSpec::fixed({12, 4}, x),
                        InputSpec::fixed({12, 1}, cycling_labels(12, 4))};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::confusion_matrix(in[0], in[1]);
            };
            c.reference = [](const std::vector<Doubles>& in) {
              const int64_t rows = static_cast<int64_t>(in[1].size());
              Doubles y(16, 0.0);
              for (int64_t r = 0; r < rows; ++r) {
                const auto row = in[0].begin() + r * 4;
                const auto best = std::max_element(row, row + 4) - row;
                y[static_cast<int64_t>(in[1][r]) * 4 + best] += 1;
              }
              return y;
            };
            c.check_grad = false;
            c.half_atol = c.half_rtol = c.bf16_atol = c.bf16_rtol = 0;
            return c;
          },
          false,
          true,
          {},
          "y is (C, C) whatever the batch: its rows count classes"};
}

// Values from {0, 0.25, 0.5, 0.75, 1}: ties with 0.5 occur and every type
// holds them exactly.
harness::Case binary_error_case() {
  return {
      "(3, 4) with ties at 0.5", [] {
        FunctionCheck c;
        std::vector<float> a(12), b(12);
        for (int i = 0; i < 12; ++i) {
          a[i] = 0.25f * static_cast<float>(i % 5);
          b[i] = 0.25f * static_cast<float>((i * 3 + 1) % 5);
        }
        c.inputs = {InputSpec::fixed({3, 4}, a), InputSpec::fixed({3, 4}, b)};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::binary_error(in[0], in[1]);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y(12);
          for (int i = 0; i < 12; ++i) {
            y[i] = (in[0][i] >= 0.5) != (in[1][i] >= 0.5) ? 1 : 0;
          }
          return y;
        };
        c.check_grad = false;
        c.half_atol = c.half_rtol = c.bf16_atol = c.bf16_rtol = 0;
        return c;
      }};
}

harness::Case search_case(bool right) {
  return {right ? "right" : "left", [=] {
            FunctionCheck c;
            // Rows sorted, with repeats, and values on and between them.
            c.inputs = {InputSpec::fixed({2, 5}, {-1, 0, 0, 0.5, 2,  //
                                                  0, 0.25, 0.5, 0.75, 1}),
                        InputSpec::fixed({2, 4}, {0, -2, 0.5, 3,  //
                                                  0.5, 0.6, -1, 1})};
            c.build = [right](const std::vector<VariablePtr>& in) {
              return F::searchsorted(in[0], in[1], right);
            };
            c.reference = [right](const std::vector<Doubles>& in) {
              Doubles y(8);
              for (int r = 0; r < 2; ++r) {
                const auto row = in[0].begin() + r * 5;
                for (int k = 0; k < 4; ++k) {
                  const double v = in[1][r * 4 + k];
                  y[r * 4 + k] = (right ? std::upper_bound(row, row + 5, v)
                                        : std::lower_bound(row, row + 5, v)) -
                                 row;
                }
              }
              return y;
            };
            c.check_grad = false;
            c.half_atol = c.half_rtol = c.bf16_atol = c.bf16_rtol = 0;
            return c;
          }};
}

const bool kLossMetrics =
    harness::add(
        decl::CategoricalCrossEntropy,
        {categorical_case({6, 5}, -1), categorical_case({3, 4, 2}, 1)}) &&
    harness::add(decl::KLMultinomial,
                 {kl_case({4, 5}, 1), kl_case({2, 3, 4}, 2)}) &&
    harness::add(decl::ConfusionMatrix, {confusion_case()}) &&
    harness::add(decl::binary<ops::BinaryError>, {binary_error_case()}) &&
    harness::add(decl::SearchSorted, {search_case(false), search_case(true)});

TEST(CategoricalCrossEntropy, BadLabelsAndAZeroProbability) {
  expect_error(
      [] {
        auto y = F::categorical_cross_entropy(
            variable_from({2, 3}, {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f}),
            variable_from({2, 1}, {0, 3}));
        y->forward();
      },
      {"[categorical_cross_entropy] t holds label 3 at flat index 1"});
  auto y = F::categorical_cross_entropy(variable_from({1, 2}, {0, 1}),
                                        variable_from({1, 1}, {0}));
  y->forward();
  EXPECT_NEAR(to_doubles(y)[0], -std::log(1e-12), 1e-3);  // clamped, finite
}

TEST(ConfusionMatrix, CountsInFloatUnderHalf) {
  // 3000 right answers of class 0: half would stop counting at 2048.
  ContextGuard g(context("cpu", "half"));
  std::vector<float> x(6000);
  for (int i = 0; i < 3000; ++i) x[2 * i] = 1.0f;
  auto y = F::confusion_matrix(
      variable_from({3000, 2}, x),
      variable_from({3000, 1}, std::vector<float>(3000, 0)));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{3000, 0, 0, 0}));
}

TEST(SearchSorted, ShapesMustShareTheLeadingAxes) {
  expect_error(
      [] {
        F::searchsorted(make_variable({2, 5}), make_variable({3, 4}));
      },
      {"[searchsorted] sorted_sequence with shape (2, 5) and values with "
       "shape (3, 4) must be (..., N) and (..., M) with the same leading "
       "axes"});
}

TEST(KLMultinomial, IsZeroForEqualDistributions) {
  auto p = variable_from({1, 4}, {0.1f, 0.2f, 0.3f, 0.4f});
  auto y = F::kl_multinomial(p, p);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 1}));
  EXPECT_NEAR(to_doubles(y)[0], 0.0, 1e-9);
}

// NNabla's default class axis is the last (len(x.shape) - 1), not 1: on
// (N, K, C) scores the rows are the K positions of each sample.
TEST(ConfusionMatrix, NNablasDefaultAxisIsTheLast) {
  auto x = variable_from({1, 2, 3}, {0.1f, 0.9f, 0, 0.8f, 0.1f, 0.1f});
  auto t = variable_from({1, 2, 1}, {1, 2});
  auto y = apply_from_args("ConfusionMatrix", {}, {x, t});
  EXPECT_EQ(y[0]->shape(), (Shape{3, 3}));
  EXPECT_EQ(to_doubles(y[0]), (Doubles{0, 0, 0, 0, 1, 0, 1, 0, 0}));
}

}  // namespace
}  // namespace mg::test::loss_metrics_tests
