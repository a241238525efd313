#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::pooling_tests {
namespace {

// A pooling with 1 to 3 pooled axes as 3 (leading axes of size 1).
struct Geo {
  int64_t maps;
  int64_t in[3], out[3], k[3], s[3], p[3];
  bool ignore_border, including_pad;
};

int64_t floor_div(int64_t a, int64_t b) {
  return static_cast<int64_t>(std::floor(static_cast<double>(a) / b));
}

Geo geo(const Shape& xs, const std::vector<int64_t>& kernel,
        const PoolingOptions& o) {
  Geo g;
  const int axes = static_cast<int>(kernel.size());
  const int first = static_cast<int>(xs.size()) - axes;
  g.maps = shape_size(xs, 0, first);
  g.ignore_border = o.ignore_border;
  g.including_pad = o.including_pad;
  for (int a = 0; a < 3; ++a) {
    const int i = a - (3 - axes);
    const bool on = i >= 0;
    g.in[a] = on ? xs[first + i] : 1;
    g.k[a] = on ? kernel[i] : 1;
    g.s[a] = on ? (o.stride.empty() ? kernel[i] : o.stride[i]) : 1;
    g.p[a] = on && !o.pad.empty() ? o.pad[i] : 0;
    // NNabla's rule (refs.get_pool_out_size).
    g.out[a] =
        floor_div(g.in[a] + g.p[a] - (o.ignore_border ? g.k[a] - g.p[a] : 1),
                  g.s[a]) +
        1;
  }
  return g;
}

// Visits every output with the input positions of its window (in padded
// coordinates shifted back: j in [o * s - p, o * s - p + k)), the way
// NNabla's Python reference builds a padded array and a mask.
template <class Fn>
void each_window(const Geo& g, Fn&& fn) {
  for (int64_t m = 0; m < g.maps; ++m)
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          const int64_t o =
              ((m * g.out[0] + o0) * g.out[1] + o1) * g.out[2] + o2;
          const int64_t b0 = o0 * g.s[0] - g.p[0], b1 = o1 * g.s[1] - g.p[1],
                        b2 = o2 * g.s[2] - g.p[2];
          fn(m, o, b0, b1, b2);
        }
}

Doubles max_ref(const std::vector<Doubles>& in, const Geo& g) {
  const Doubles& x = in[0];
  Doubles y(g.maps * g.out[0] * g.out[1] * g.out[2]);
  each_window(g, [&](int64_t m, int64_t o, int64_t b0, int64_t b1, int64_t b2) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t j0 = b0; j0 < b0 + g.k[0]; ++j0)
      for (int64_t j1 = b1; j1 < b1 + g.k[1]; ++j1)
        for (int64_t j2 = b2; j2 < b2 + g.k[2]; ++j2) {
          if (j0 < 0 || j0 >= g.in[0] || j1 < 0 || j1 >= g.in[1] || j2 < 0 ||
              j2 >= g.in[2]) {
            continue;  // padding never wins
          }
          best = std::max(
              best, x[((m * g.in[0] + j0) * g.in[1] + j1) * g.in[2] + j2]);
        }
    y[o] = best;
  });
  return y;
}

// A position counts in the window's size when it is in the input, or with
// including_pad in the padded input [-p, in + p).
bool counts(const Geo& g, int a, int64_t j) {
  const int64_t lo = g.including_pad ? -g.p[a] : 0;
  const int64_t hi = g.including_pad ? g.in[a] + g.p[a] : g.in[a];
  return j >= lo && j < hi;
}

Doubles average_ref(const std::vector<Doubles>& in, const Geo& g) {
  const Doubles& x = in[0];
  Doubles y(g.maps * g.out[0] * g.out[1] * g.out[2]);
  each_window(g, [&](int64_t m, int64_t o, int64_t b0, int64_t b1, int64_t b2) {
    double sum = 0, count = 0;
    for (int64_t j0 = b0; j0 < b0 + g.k[0]; ++j0)
      for (int64_t j1 = b1; j1 < b1 + g.k[1]; ++j1)
        for (int64_t j2 = b2; j2 < b2 + g.k[2]; ++j2) {
          if (counts(g, 0, j0) && counts(g, 1, j1) && counts(g, 2, j2)) ++count;
          if (j0 >= 0 && j0 < g.in[0] && j1 >= 0 && j1 < g.in[1] && j2 >= 0 &&
              j2 < g.in[2]) {
            sum += x[((m * g.in[0] + j0) * g.in[1] + j1) * g.in[2] + j2];
          }
        }
    y[o] = sum / count;
  });
  return y;
}

Doubles sum_ref(const std::vector<Doubles>& in, const Geo& g) {
  const Doubles& x = in[0];
  Doubles y(g.maps * g.out[0] * g.out[1] * g.out[2]);
  each_window(g, [&](int64_t m, int64_t o, int64_t b0, int64_t b1, int64_t b2) {
    double sum = 0;
    for (int64_t j0 = std::max<int64_t>(b0, 0);
         j0 < std::min(b0 + g.k[0], g.in[0]); ++j0)
      for (int64_t j1 = std::max<int64_t>(b1, 0);
           j1 < std::min(b1 + g.k[1], g.in[1]); ++j1)
        for (int64_t j2 = std::max<int64_t>(b2, 0);
             j2 < std::min(b2 + g.k[2], g.in[2]); ++j2)
          sum += x[((m * g.in[0] + j0) * g.in[1] + j1) * g.in[2] + j2];
    y[o] = sum;
  });
  return y;
}

// n distinct values in [-1, 1), 2 / n apart, shuffled: no two elements of
// a window are within the finite-difference step or bf16 rounding of each
// other, so the argmax is the same in every check.
std::vector<float> distinct_values(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -1.0f + 2.0f * (i + 0.5f) / n;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// Half and bf16 against float: pooling adds no products, so the errors are
// the roundings of x, dy and the result (2^-11 and 2^-9 relative) and of
// the few grads summed where windows overlap; measured worst errors half
// 5.5e-4, bf16 4.3e-3, at values up to about 2. A wrong window errs by
// about the spacing of the values (>= 1e-2) or more.
void set_tolerances(FunctionCheck& c) {
  c.half_atol = 1e-3, c.half_rtol = 1e-3;
  c.bf16_atol = 1e-2, c.bf16_rtol = 1e-2;
}

FunctionCheck max_check(const Shape& xs, const std::vector<int64_t>& kernel,
                        const PoolingOptions& o) {
  FunctionCheck c;
  c.inputs = {InputSpec::fixed(xs, distinct_values(shape_size(xs), 7), true)};
  c.build = [kernel, o](const std::vector<VariablePtr>& in) {
    return F::max_pooling(in[0], kernel, o);
  };
  const Geo g = geo(xs, kernel, o);
  c.reference = [g](const std::vector<Doubles>& in) { return max_ref(in, g); };
  set_tolerances(c);
  return c;
}

FunctionCheck average_check(const Shape& xs, const std::vector<int64_t>& kernel,
                            const PoolingOptions& o) {
  FunctionCheck c;
  c.inputs = {{xs}};
  c.build = [kernel, o](const std::vector<VariablePtr>& in) {
    return F::average_pooling(in[0], kernel, o);
  };
  const Geo g = geo(xs, kernel, o);
  c.reference = [g](const std::vector<Doubles>& in) {
    return average_ref(in, g);
  };
  set_tolerances(c);
  return c;
}

FunctionCheck sum_check(const Shape& xs, const std::vector<int64_t>& kernel,
                        const PoolingOptions& o) {
  FunctionCheck c;
  c.inputs = {{xs}};
  c.build = [kernel, o](const std::vector<VariablePtr>& in) {
    return F::sum_pooling(in[0], kernel, o);
  };
  const Geo g = geo(xs, kernel, o);
  c.reference = [g](const std::vector<Doubles>& in) { return sum_ref(in, g); };
  set_tolerances(c);
  // Sums of up to 9 values in [-2, 2): the rounding of x and of the sum
  // grow with the sum's size.
  c.half_atol = 1e-2, c.bf16_atol = 6e-2;
  return c;
}

PoolingOptions opts(std::vector<int64_t> stride, std::vector<int64_t> pad,
                    bool ignore_border = true, bool including_pad = true) {
  PoolingOptions o;
  o.stride = std::move(stride);
  o.pad = std::move(pad);
  o.ignore_border = ignore_border;
  o.including_pad = including_pad;
  return o;
}

const bool kMaxPoolingDefault2x2 = harness::add(
    decl::MaxPooling, {{"default2x2", [] {
                          return max_check({2, 3, 6, 6}, {2, 2}, {});
                        }}});

// A row of 33 windows: two AVX-512 blocks of 16 and a masked one, with the
// last input column in no window (134 values: still distinct in bf16).
const bool kMaxPoolingWideRows2x2 = harness::add(
    decl::MaxPooling, {{"wide rows2x2", [] {
                          return max_check({1, 1, 2, 67}, {2, 2}, {});
                        }}});

// Windows that all lie inside the map (no padding) but are not 2x2: the
// inside path, in two and three dimensions.
const bool kMaxPoolingInsideWindows3x3Stride2 =
    harness::add(decl::MaxPooling,
                 {{"inside windows3x3 stride2", [] {
                     return max_check({2, 2, 9, 11}, {3, 3}, opts({2, 2}, {}));
                   }}});
const bool kMaxPoolingInsideWindows3d = harness::add(
    decl::MaxPooling, {{"inside windows3d", [] {
                          return max_check({2, 2, 4, 6, 6}, {2, 2, 2}, {});
                        }}});

const bool kMaxPoolingOverlappingStride2Pad1 = harness::add(
    decl::MaxPooling,
    {{"overlapping stride2 pad1", [] {
        return max_check({2, 2, 7, 6}, {3, 3}, opts({2, 2}, {1, 1}));
      }}});

const bool kMaxPoolingIgnoreBorderFalseKeepsPartialWindows = harness::add(
    decl::MaxPooling,
    {{"ignore border false keeps partial windows", [] {
        return max_check({2, 2, 5, 7}, {3, 2}, opts({2, 3}, {}, false));
      }}});

const bool kMaxPoolingIgnoreBorderFalseWithPad = harness::add(
    decl::MaxPooling,
    {{"ignore border false with pad", [] {
        return max_check({2, 2, 6, 5}, {3, 3}, opts({2, 2}, {1, 1}, false));
      }}});

const bool kMaxPoolingOneDimensional = harness::add(
    decl::MaxPooling, {{"one dimensional", [] {
                          return max_check({2, 3, 10}, {3}, opts({2}, {1}));
                        }}});

const bool kMaxPoolingThreeDimensional = harness::add(
    decl::MaxPooling,
    {{"three dimensional", [] {
        return max_check({2, 2, 4, 5, 4}, {2, 2, 2}, opts({}, {}, false));
      }}});

TEST(MaxPooling, NanPropagates) {
  std::vector<float> v(16, 0.5f);
  v[5] = std::nanf("");
  auto y = F::max_pooling(variable_from({1, 1, 4, 4}, v), {2, 2});
  y->forward();
  const Doubles d = to_doubles(y);
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_EQ(d[1], 0.5);
}

// Ties, nan and the grad's place in every window position of a wide row
// (the vector path), in every type.
TEST(MaxPooling, TiesAndNanInWideRows) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard g(context("cpu", type));
    const int64_t w = 2 * 20;  // 20 windows: a block of 16 and 4 more
    std::vector<float> v(2 * w, 0.0f);
    for (int64_t j = 0; j < 20; ++j) {
      const int64_t k = j % 4;  // which of the four holds the maximum
      v[(k / 2) * w + 2 * j + k % 2] = 1.0f;
      if (j % 5 == 0) v[w + 2 * j + 1] = 1.0f;  // a later tie loses
    }
    v[2 * 17] = std::nanf("");  // window 17: nan wins over its 1
    auto x = variable_from({1, 1, 2, w}, v, true);
    auto y = F::max_pooling(x, {2, 2});
    y->forward();
    y->backward();
    const Doubles out = to_doubles(y), g_x = grad_doubles(x);
    for (int64_t j = 0; j < 20; ++j) {
      if (j == 17) {
        EXPECT_TRUE(std::isnan(out[j]));
      } else {
        EXPECT_EQ(out[j], 1.0) << "window " << j;
      }
      const int64_t k = j == 17 ? 0 : j % 4;
      for (int64_t q = 0; q < 4; ++q) {
        EXPECT_EQ(g_x[(q / 2) * w + 2 * j + q % 2], q == k ? 1.0 : 0.0)
            << "window " << j << " position " << q;
      }
    }
  }
}

TEST(MaxPooling, GradGoesToTheFirstMaximumOfATie) {
  auto x = variable_from({1, 1, 2, 2}, {1, 3, 3, 2}, true);
  auto y = F::max_pooling(x, {2, 2});
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 1, 0, 0}));
}

const bool kAveragePoolingDefault2x2 = harness::add(
    decl::AveragePooling, {{"default2x2", [] {
                              return average_check({2, 3, 6, 6}, {2, 2}, {});
                            }}});

const bool kAveragePoolingPad1IncludingPad = harness::add(
    decl::AveragePooling,
    {{"pad1 including pad", [] {
        return average_check({2, 2, 5, 6}, {3, 3}, opts({2, 2}, {1, 1}));
      }}});

const bool kAveragePoolingPad1ExcludingPad =
    harness::add(decl::AveragePooling,
                 {{"pad1 excluding pad", [] {
                     return average_check({2, 2, 5, 6}, {3, 3},
                                          opts({2, 2}, {1, 1}, true, false));
                   }}});

const bool kAveragePoolingIgnoreBorderFalse = harness::add(
    decl::AveragePooling,
    {{"ignore border false", [] {
        return average_check({2, 2, 5, 7}, {3, 2}, opts({2, 3}, {}, false));
      }}});

const bool kAveragePoolingIgnoreBorderFalseWithPadBothWays =
    harness::add(decl::AveragePooling,
                 {{"ignore border false with pad both ways 1",
                   [] {
                     return average_check({2, 2, 6, 5}, {3, 3},
                                          opts({2, 2}, {1, 1}, false, true));
                   }},
                  {"ignore border false with pad both ways 2", [] {
                     return average_check({2, 2, 6, 5}, {3, 3},
                                          opts({2, 2}, {1, 1}, false, false));
                   }}});

const bool kAveragePoolingOneAndThreeDimensional = harness::add(
    decl::AveragePooling,
    {{"one and three dimensional 1",
      [] {
        return average_check({2, 3, 10}, {3}, opts({2}, {1}));
      }},
     {"one and three dimensional 2", [] {
        return average_check({2, 2, 4, 5, 4}, {2, 2, 2}, opts({1, 2, 2}, {}));
      }}});

const bool kAveragePoolingPoolsEveryAxisWhenKernelCoversTheShape =
    harness::add(decl::AveragePooling,
                 {{"pools every axis when kernel covers the shape", [] {
                     return average_check({6, 4}, {2, 2}, {});
                   }}});

const bool kSumPooling = harness::add(
    decl::SumPooling,
    {{"2x2",
      [] {
        return sum_check({2, 3, 6, 6}, {2, 2}, {});
      }},
     {"3x3 stride 2 pad 1",
      [] {
        return sum_check({2, 2, 5, 6}, {3, 3}, opts({2, 2}, {1, 1}));
      }},
     {"ignore border false",
      [] {
        return sum_check({2, 2, 5, 7}, {3, 2}, opts({2, 3}, {}, false));
      }},
     {"1-D", [] {
        return sum_check({2, 3, 10}, {3}, opts({2}, {1}));
      }}});

TEST(SumPooling, IsAveragePoolingTimesTheWindow) {
  auto x = variable_from({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  auto y = F::sum_pooling(x, {2, 2});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{14, 22}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), Doubles(8, 1.0));
  // Sums of 4096 ones: exact in half only when accumulated in fp32 (fp16
  // stops counting at 2048).
  ContextGuard guard(context("cpu", "half"));
  auto h = F::sum_pooling(
      variable_from({1, 1, 1, 4096}, std::vector<float>(4096, 1.0f)),
      {1, 4096});
  h->forward();
  EXPECT_EQ(to_doubles(h)[0], 4096.0);
}

harness::Case unpooling_case(Shape xs, std::vector<int64_t> kernel,
                             bool channel_last) {
  Shape ys = xs;
  const int last = static_cast<int>(xs.size()) - (channel_last ? 1 : 0);
  const int nk = static_cast<int>(kernel.size());
  for (int i = 0; i < nk; ++i) ys[last - nk + i] *= kernel[i];
  return {"x " + shape_str(xs) + " kernel " + shape_str(kernel) +
              (channel_last ? " channel_last" : ""),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::unpooling(in[0], kernel, channel_last);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              // y[k i + j] = x[i] per pooled axis.
              return gather_ref(in[0], xs, ys, [&](int a, int64_t j) {
                return j / (ys[a] / xs[a]);
              });
            };
            // Grads sum up to 6 copies of dy.
            c.half_atol = 2e-2, c.bf16_atol = 1e-1;
            return c;
          }};
}

const bool kUnpooling = harness::add(
    decl::Unpooling, {unpooling_case({2, 3, 2, 3}, {2, 2}, false),
                      unpooling_case({2, 3, 4}, {3}, false),
                      unpooling_case({2, 2, 3, 3}, {1, 2, 3}, false),
                      unpooling_case({2, 2, 3, 4}, {2, 3}, true)});

TEST(Unpooling, SpreadsEachValueAndSumsTheGrads) {
  auto x = variable_from({1, 2, 2}, {1, 2, 3, 4}, true);
  auto y = F::unpooling(x, {2, 2});
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 4, 4}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 1, 2, 2, 1, 1, 2, 2,  //
                                    3, 3, 4, 4, 3, 3, 4, 4}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{4, 4, 4, 4}));
}

TEST(Unpooling, BadKernel) {
  expect_error(
      [] {
        F::unpooling(make_variable({2, 3}), {});
      },
      {"[unpooling] kernel () must have 1 to 2 values, one per "
       "pooled axis of x with shape (2, 3)"});
  expect_error(
      [] {
        F::unpooling(make_variable({2, 3}), {2, 2}, true);
      },
      {"[unpooling] kernel (2, 2) must have 1 value, one per pooled "
       "axis of x with shape (2, 3) (channel_last)"});
  expect_error(
      [] {
        F::unpooling(make_variable({2, 3}), {0});
      },
      {"[unpooling] kernel (0,) must be positive"});
}

const bool kGlobalAveragePoolingMeansOverSpace =
    harness::add(decl::GlobalAveragePooling,
                 {{"means over space", [] {
                     FunctionCheck c;
                     c.inputs = {{{2, 3, 4, 5}}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::global_average_pooling(in[0]);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y(6, 0.0);
                       for (int r = 0; r < 6; ++r) {
                         for (int i = 0; i < 20; ++i) y[r] += in[0][r * 20 + i];
                         y[r] /= 20;
                       }
                       return y;
                     };
                     set_tolerances(c);
                     return c;
                   }}});

TEST(GlobalAveragePooling, OutputShapeIsNC11) {
  EXPECT_EQ(F::global_average_pooling(make_variable({2, 3, 4, 5}))->shape(),
            (Shape{2, 3, 1, 1}));
  EXPECT_EQ(F::global_average_pooling(make_variable({2, 3, 7}))->shape(),
            (Shape{2, 3, 1, 1}));
  EXPECT_EQ(F::global_average_pooling(make_variable({2, 3, 2, 2, 2}))->shape(),
            (Shape{2, 3, 1, 1}));
}

// fp16 accumulation would stall at 2048 and give 0.02.
TEST(GlobalAveragePooling, HalfAccumulatesInFloat) {
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({1, 1, 100000}, std::vector<float>(100000, 1.0f));
  auto y = F::global_average_pooling(x);
  y->forward();
  EXPECT_EQ(to_doubles(y)[0], 1.0);
}

TEST(AveragePooling, HalfAccumulatesInFloat) {
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({1, 1, 1, 4096}, std::vector<float>(4096, 1.0f));
  auto y = F::average_pooling(x, {1, 4096});
  y->forward();
  EXPECT_EQ(to_doubles(y)[0], 1.0);
}

TEST(Pooling, OutputShapes) {
  auto x = make_variable({2, 3, 5, 7});
  EXPECT_EQ(F::max_pooling(x, {2, 2})->shape(), (Shape{2, 3, 2, 3}));
  // ignore_border false: (in + pad - 1) / stride + 1.
  EXPECT_EQ(F::max_pooling(x, {2, 2}, opts({}, {}, false))->shape(),
            (Shape{2, 3, 3, 4}));
  EXPECT_EQ(F::max_pooling(x, {3, 3}, opts({2, 2}, {}, false))->shape(),
            (Shape{2, 3, 3, 4}));
  EXPECT_EQ(F::average_pooling(x, {3, 3}, opts({2, 2}, {1, 1}))->shape(),
            (Shape{2, 3, 3, 4}));
  EXPECT_EQ(F::average_pooling(x, {3}, opts({1}, {}))->shape(),
            (Shape{2, 3, 5, 5}));
  EXPECT_EQ(F::max_pooling(x, {2, 2, 2})->shape(), (Shape{2, 1, 2, 3}));
}

TEST(Pooling, BadKernel) {
  auto x = make_variable({2, 3, 4, 4});
  expect_error(
      [&] {
        F::max_pooling(x, {5, 2});
      },
      {"kernel (5, 2) is larger than x with shape (2, 3, 4, 4) padded "
       "by (0, 0) along pooled axis 0 (5 > 4)"},
      "[max_pooling] ");
  expect_error([&] { F::average_pooling(x, {}); },
               {"kernel () must have 1 to 3 values"}, "[average_pooling] ");
  expect_error(
      [&] {
        F::max_pooling(x, {1, 1, 1, 1});
      },
      {"kernel (1, 1, 1, 1) must have 1 to 3 values"}, "[max_pooling] ");
  expect_error(
      [&] {
        F::max_pooling(x, {0, 2});
      },
      {"kernel (0, 2) must be positive"}, "[max_pooling] ");
  expect_error(
      [&] {
        F::max_pooling(make_variable({4, 4}), {2, 2, 2});
      },
      {"kernel (2, 2, 2) has more axes than x with shape (4, 4)"},
      "[max_pooling] ");
  // Padding makes room; ignore_border false keeps the partial window.
  EXPECT_EQ(F::max_pooling(x, {5, 2}, opts({}, {1, 0}))->shape(),
            (Shape{2, 3, 1, 2}));
  EXPECT_EQ(F::max_pooling(x, {5, 2}, opts({}, {}, false))->shape(),
            (Shape{2, 3, 1, 2}));
}

TEST(Pooling, BadOptions) {
  auto x = make_variable({2, 3, 4, 4});
  expect_error(
      [&] {
        F::max_pooling(x, {2, 2}, opts({2}, {}));
      },
      {"stride (2,) must have 2 values"}, "[max_pooling] ");
  expect_error(
      [&] {
        F::average_pooling(x, {2, 2}, opts({0, 2}, {}));
      },
      {"stride (0, 2) must be positive"}, "[average_pooling] ");
  expect_error(
      [&] {
        F::max_pooling(x, {2, 2}, opts({}, {1, -1}));
      },
      {"pad (1, -1) must be non-negative"}, "[max_pooling] ");
  expect_error([] { F::global_average_pooling(make_variable({5})); },
               {"x with shape (5,) must have at least 2 dimensions"},
               "[global_average_pooling] ");
}

// 4096 values in [0, 1) per map (sums near 2048, where an fp16
// accumulator's spacing is 2): against double.
const bool kGlobalAveragePoolingLong =
    harness::add(decl::GlobalAveragePooling,
                 {{"4096 values per map",
                   [] {
                     FunctionCheck c;
                     c.inputs = {{{2, 2, 64, 64}, 0.0f, 1.0f}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::global_average_pooling(in[0]);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y(4, 0.0);
                       for (int r = 0; r < 4; ++r) {
                         for (int i = 0; i < 4096; ++i)
                           y[r] += in[0][r * 4096 + i];
                         y[r] /= 4096;
                       }
                       return y;
                     };
                     c.half_atol = c.bf16_atol = 0.0;
                     c.half_rtol = 2e-3;
                     c.bf16_rtol = 1e-2;
                     c.check_grad = false;
                     return c;
                   },
                   /*long_sum=*/true}});

// NNabla's lists: MaxPooling and SumPooling have no including_pad (ours is
// optional and changes neither), AveragePooling has it; stride defaults to
// kernel; channel_last=true is refused by name.
TEST(Pooling, NNablasArgumentListsLoadAndChannelLastIsRefused) {
  auto x = variable_from({1, 1, 2, 4}, {1, 5, 2, 0, 3, 4, 8, 1});
  const FunctionArgs nnabla = {{"kernel", std::vector<int64_t>{2, 2}},
                               {"stride", std::vector<int64_t>{2, 2}},
                               {"ignore_border", true},
                               {"pad", std::vector<int64_t>{0, 0}},
                               {"channel_last", false}};
  const FunctionArgs kernel_only = {{"kernel", std::vector<int64_t>{2, 2}}};
  FunctionArgs average = nnabla;
  average.emplace_back("including_pad", true);
  for (const FunctionArgs& a : {nnabla, kernel_only}) {
    EXPECT_EQ(to_doubles(apply_from_args("MaxPooling", a, {x})[0]),
              (Doubles{5, 8}));
    EXPECT_EQ(to_doubles(apply_from_args("SumPooling", a, {x})[0]),
              (Doubles{13, 11}));
    EXPECT_EQ(to_doubles(apply_from_args("AveragePooling", a, {x})[0]),
              (Doubles{3.25, 2.75}));
  }
  EXPECT_EQ(to_doubles(apply_from_args("AveragePooling", average, {x})[0]),
            (Doubles{3.25, 2.75}));
  for (const char* name : {"MaxPooling", "SumPooling", "AveragePooling"}) {
    FunctionArgs a = nnabla;
    a.back().second = true;
    expect_error([&] { apply_from_args(name, a, {x}); },
                 {"channel_last=true is not supported"});
  }
}

}  // namespace
}  // namespace mg::test::pooling_tests
