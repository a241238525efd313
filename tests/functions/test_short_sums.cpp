// Short sums and products in half and bfloat16 are accumulated in fp32 and
// rounded once: with inputs exact in the type (whose partial sums are not),
// every output and grad is within one rounding of the exact double result.
// The harness's half-against-float check at 1e-2 relative would pass a
// kernel that summed 3-8 values in fp16; this one fails it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../support/function_tester.hpp"

namespace mg::test::short_sums_tests {
namespace {

// k / 2^s with |k| < 2^p for the type's p significand bits: exact in it,
// while the sum of two or more needs more bits than it has.
struct Grid {
  int bits;     // significand bits of the type
  double unit;  // the rounding error bound, 2^-bits
};

Grid grid_of(const std::string& type) {
  return type == "half" ? Grid{11, std::ldexp(1.0, -11)}
                        : Grid{8, std::ldexp(1.0, -8)};
}

// n values k / 2^(p-1): in (-2, 2) for sums; for products |k| >= 2^(p-1),
// so that magnitudes stay in [1, 2) and no product leaves the range.
std::vector<float> grid_values(int64_t n, const Grid& g, uint32_t seed,
                               bool product = false) {
  std::mt19937 rng(seed);
  const int top = (1 << g.bits) - 1;
  std::uniform_int_distribution<int> k(product ? top / 2 + 1 : -top, top);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(n);
  for (float& x : v) {
    int m = k(rng);
    if (product && negative(rng)) m = -m;
    x = std::ldexp(static_cast<float>(m), 1 - g.bits);
  }
  return v;
}

// f in `type` on grid inputs: y within one rounding of `ref`, and the grads
// (for output weights on the grid) within one rounding of central
// differences of `ref` with step 1, which are exact for functions linear in
// each input element (sums, means, products).
void expect_rounded_once(
    const std::string& type, const std::vector<Shape>& shapes, bool product,
    const std::function<VariablePtr(const std::vector<VariablePtr>&)>& f,
    const std::function<Doubles(const std::vector<Doubles>&)>& ref,
    bool grads = true) {
  SCOPED_TRACE(type);
  const Grid g = grid_of(type);
  ContextGuard guard(context("cpu", type));
  std::vector<VariablePtr> in;
  std::vector<Doubles> x;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto v = grid_values(shape_size(shapes[i]), g, 7 + i, product);
    in.push_back(variable_from(shapes[i], v, grads));
    x.emplace_back(v.begin(), v.end());
  }
  auto y = f(in);
  y->forward();
  // 1e-6 of slack, relative and absolute: fp32's own roundings in a product
  // of up to 8 values, or in a sum of products that nearly cancels.
  const double rtol = g.unit * (1 + 1e-3) + 1e-6, atol = 1e-6;
  expect_near(to_doubles(y), ref(x), atol, rtol,
              type + " y against double: one rounding");
  if (!grads) return;
  const auto w = grid_values(y->size(), g, 99, product);
  auto seed = make_ndarray(y->shape());
  std::copy(w.begin(), w.end(), seed->cast<float>(true));
  y->backward(seed);
  for (size_t i = 0; i < in.size(); ++i) {
    Doubles numeric(x[i].size());
    for (size_t j = 0; j < x[i].size(); ++j) {
      const double v = x[i][j];
      double d = 0;
      for (int s : {1, -1}) {
        x[i][j] = v + s;
        const Doubles fy = ref(x);
        for (size_t k = 0; k < fy.size(); ++k) d += s * fy[k] * w[k];
      }
      x[i][j] = v;
      numeric[j] = d / 2;
    }
    expect_near(grad_doubles(in[i]), numeric, atol, rtol,
                type + " grad of input " + std::to_string(i) +
                    " against double: one rounding");
  }
}

// x (a, k, b) reduced over its middle axis with `op` from `init`.
Doubles reduce_middle(const Doubles& x, const Shape& s, double init,
                      const std::function<double(double, double)>& op) {
  Doubles y(s[0] * s[2], init);
  for (int64_t i = 0; i < s[0]; ++i) {
    for (int64_t j = 0; j < s[1]; ++j) {
      for (int64_t l = 0; l < s[2]; ++l) {
        double& e = y[i * s[2] + l];
        e = op(e, x[(i * s[1] + j) * s[2] + l]);
      }
    }
  }
  return y;
}

// Along the middle axis of (a, k, b): running sums or products.
Doubles scan_middle(const Doubles& x, const Shape& s, bool product) {
  Doubles y(x.size());
  for (int64_t i = 0; i < s[0]; ++i) {
    for (int64_t l = 0; l < s[2]; ++l) {
      double acc = product ? 1 : 0;
      for (int64_t j = 0; j < s[1]; ++j) {
        const int64_t e = (i * s[1] + j) * s[2] + l;
        acc = product ? acc * x[e] : acc + x[e];
        y[e] = acc;
      }
    }
  }
  return y;
}

class ShortSums : public ::testing::TestWithParam<std::string> {};

TEST_P(ShortSums, SumMeanAndProdOverThreeToEightValues) {
  for (int64_t k : {3, 5, 8}) {
    SCOPED_TRACE("k " + std::to_string(k));
    const Shape s{6, k, 7};
    auto plus = [](double a, double b) { return a + b; };
    auto times = [](double a, double b) { return a * b; };
    expect_rounded_once(
        GetParam(), {s}, false,
        [](const auto& in) { return F::sum(in[0], {1}); },
        [&](const auto& x) { return reduce_middle(x[0], s, 0, plus); });
    expect_rounded_once(
        GetParam(), {s}, false,
        [](const auto& in) { return F::mean(in[0], {1}); },
        [&](const auto& x) {
          Doubles y = reduce_middle(x[0], s, 0, plus);
          for (double& e : y) e /= static_cast<double>(k);
          return y;
        });
    expect_rounded_once(
        GetParam(), {s}, true,
        [](const auto& in) { return F::prod(in[0], {1}); },
        [&](const auto& x) { return reduce_middle(x[0], s, 1, times); });
  }
}

TEST_P(ShortSums, CumSumAndCumProd) {
  const Shape s{4, 6, 5};
  expect_rounded_once(
      GetParam(), {s}, false,
      [](const auto& in) { return F::cumsum(in[0], 1); },
      [&](const auto& x) { return scan_middle(x[0], s, false); });
  expect_rounded_once(
      GetParam(), {s}, true,
      [](const auto& in) { return F::cumprod(in[0], 1); },
      [&](const auto& x) { return scan_middle(x[0], s, true); });
}

TEST_P(ShortSums, AddNAndMulN) {
  const Shape s{5, 8};
  auto nary = [](bool product) {
    return [product](const std::vector<Doubles>& x) {
      Doubles y(x[0].size(), product ? 1.0 : 0.0);
      for (const auto& xi : x) {
        for (size_t j = 0; j < y.size(); ++j) {
          y[j] = product ? y[j] * xi[j] : y[j] + xi[j];
        }
      }
      return y;
    };
  };
  expect_rounded_once(
      GetParam(), {s, s, s, s, s}, false,
      [](const auto& in) { return F::add_n(in); }, nary(false));
  expect_rounded_once(
      GetParam(), {s, s, s, s}, true,
      [](const auto& in) { return F::mul_n(in); }, nary(true));
}

TEST_P(ShortSums, BatchMatmulOverSixTerms) {
  const int64_t b = 2, m = 5, k = 6, n = 4;
  expect_rounded_once(
      GetParam(), {{b, m, k}, {b, k, n}}, false,
      [](const auto& in) { return F::batch_matmul(in[0], in[1]); },
      [&](const auto& x) {
        Doubles y(b * m * n, 0.0);
        for (int64_t p = 0; p < b; ++p)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
              for (int64_t l = 0; l < k; ++l)
                y[(p * m + i) * n + j] +=
                    x[0][(p * m + i) * k + l] * x[1][(p * k + l) * n + j];
        return y;
      });
}

TEST_P(ShortSums, SumAndAveragePoolingOverNineValues) {
  const Shape s{2, 3, 6, 6};
  for (bool average : {false, true}) {
    SCOPED_TRACE(average ? "average" : "sum");
    expect_rounded_once(
        GetParam(), {s}, false,
        [average](const auto& in) {
          return average ? F::average_pooling(in[0], {3, 3})
                         : F::sum_pooling(in[0], {3, 3});
        },
        [&](const auto& x) {
          Doubles y(2 * 3 * 2 * 2, 0.0);
          for (int64_t c = 0; c < 6; ++c)
            for (int64_t i = 0; i < 6; ++i)
              for (int64_t j = 0; j < 6; ++j)
                y[(c * 2 + i / 3) * 2 + j / 3] +=
                    x[0][(c * 6 + i) * 6 + j] / (average ? 9.0 : 1.0);
          return y;
        });
  }
}

INSTANTIATE_TEST_SUITE_P(ReducedTypes, ShortSums,
                         ::testing::Values("half", "bfloat16"));

}  // namespace
}  // namespace mg::test::short_sums_tests
