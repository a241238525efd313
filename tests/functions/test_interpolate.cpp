// Interpolate: harness cases against a double reference that applies
// NNabla's coordinate rules directly (every output a weighted sum over the
// 2^axes corners), and the argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::interpolate_tests {
namespace {

// The two sources and the weight of the second, for output j of an axis
// resized from n to m: NNabla's rules, the coordinate in float as NNabla
// computes it.
struct Taps {
  int64_t i0, i1;
  double w;
};

Taps taps(int64_t n, int64_t m, int64_t j, const InterpolateOptions& o) {
  const bool nearest = o.mode == "nearest";
  float f;
  if (nearest && o.half_pixel_for_nn) {
    f = static_cast<float>(n) / m * (j + 0.5f);
  } else {
    const float scale = m <= 1            ? 0.0f
                        : o.align_corners ? static_cast<float>(n - 1) / (m - 1)
                                          : static_cast<float>(n) / m;
    f = o.half_pixel ? std::max(0.0f, scale * (j + 0.5f) - 0.5f)
                     : scale * static_cast<float>(j);
  }
  const int64_t i = std::min<int64_t>(static_cast<int64_t>(f), n - 1);
  if (nearest) return {i, i, 0.0};
  return {i, std::min(i + 1, n - 1), static_cast<double>(f) - i};
}

Doubles interpolate_ref(const Doubles& x, const Shape& xs,
                        const InterpolateOptions& o) {
  const int nd = static_cast<int>(xs.size());
  const int ns = static_cast<int>(o.output_size.size());
  const int last = o.channel_last ? nd - 1 : nd;
  Shape ys = xs;
  for (int i = 0; i < ns; ++i) ys[last - ns + i] = o.output_size[i];
  Doubles y(shape_size(ys));
  for (int64_t e = 0; e < static_cast<int64_t>(y.size()); ++e) {
    std::vector<int64_t> idx(nd);  // y's index per axis
    int64_t rem = e;
    for (int a = nd - 1; a >= 0; --a) idx[a] = rem % ys[a], rem /= ys[a];
    double sum = 0;
    for (int corner = 0; corner < (1 << ns); ++corner) {
      double weight = 1;
      int64_t off = 0;
      for (int a = 0; a < nd; ++a) {
        int64_t i = idx[a];
        const int r = a - (last - ns);
        if (r >= 0 && a < last) {
          const Taps t = taps(xs[a], ys[a], idx[a], o);
          const bool second = (corner >> r) & 1;
          weight *= second ? t.w : 1 - t.w;
          i = second ? t.i1 : t.i0;
        }
        off = off * xs[a] + i;
      }
      if (weight != 0) sum += weight * x[off];
    }
    y[e] = sum;
  }
  return y;
}

harness::Case interpolate_case(const std::string& label, Shape xs,
                               InterpolateOptions o) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::interpolate(in[0], o.output_size, o.mode,
                                    o.align_corners, o.half_pixel,
                                    o.half_pixel_for_nn, o.channel_last);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return interpolate_ref(in[0], xs, o);
            };
            // Weights sum to 1: half and bf16 err by the rounding of x and
            // y; the grads add up to 4 shares of dy per source and axis.
            c.half_atol = 1e-2, c.half_rtol = 1e-2;
            c.bf16_atol = 6e-2, c.bf16_rtol = 3e-2;
            return c;
          }};
}

InterpolateOptions opts(std::vector<int64_t> size, std::string mode,
                        bool align_corners, bool half_pixel = false,
                        bool half_pixel_for_nn = false,
                        bool channel_last = false) {
  return {std::move(size), std::move(mode),   align_corners,
          half_pixel,      half_pixel_for_nn, channel_last};
}

const bool kInterpolate = harness::add(
    decl::Interpolate,
    {interpolate_case("linear 2-D up, align_corners", {2, 2, 3, 4},
                      opts({5, 7}, "linear", true)),
     interpolate_case("linear 2-D down, asymmetric", {2, 2, 6, 5},
                      opts({4, 3}, "linear", false)),
     interpolate_case("linear 1-D half_pixel", {2, 3, 5},
                      opts({8}, "linear", false, true)),
     interpolate_case("linear 3-D up", {1, 2, 2, 3, 2},
                      opts({3, 4, 3}, "linear", true)),
     interpolate_case("nearest 2-D up", {2, 2, 3, 3},
                      opts({6, 7}, "nearest", false)),
     interpolate_case("nearest half_pixel down", {2, 2, 7, 6},
                      opts({3, 4}, "nearest", false, true)),
     interpolate_case("nearest half_pixel_for_nn", {2, 2, 3, 4},
                      opts({5, 5}, "nearest", true, false, true)),
     interpolate_case("linear channel_last", {2, 3, 4, 2},
                      opts({5, 2}, "linear", true, false, false, true))});

TEST(Interpolate, LinearAlignedCornersKeepTheCorners) {
  auto x = variable_from({1, 1, 2, 2}, {0, 1, 2, 3}, true);
  auto y = F::interpolate(x, {3, 3});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
  y->backward();
  // Each source collects its share of the 9 ones: 1 + 0.5 + 0.5 + 0.25.
  EXPECT_EQ(grad_doubles(x), (Doubles{2.25, 2.25, 2.25, 2.25}));
}

TEST(Interpolate, NearestCopiesValuesExactlyEvenNextToInf) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = variable_from({1, 3}, {1, inf, 3});
  auto y = F::interpolate(x, {6}, "nearest", false);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 1, inf, inf, 3, 3}));
  // Linear on a grid point does not touch its unused neighbour either.
  auto l = F::interpolate(variable_from({1, 3}, {1, 2, inf}), {3});
  l->forward();
  EXPECT_EQ(to_doubles(l)[1], 2.0);
}

TEST(Interpolate, HalfSumsInFloat) {
  // 2049 is not a half; 2048 and 2050 are. Their midpoint is 2049 in fp32
  // and rounds to 2048 (ties to even) once, as the exact answer does.
  ContextGuard guard(context("cpu", "half"));
  auto y = F::interpolate(variable_from({1, 2}, {2048, 2052}), {5});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{2048, 2048, 2050, 2052, 2052}));
}

// Values and grads of x, images of `xs` after one another, resized by o,
// under type_config `type`, with dy the seed of y's grad.
struct ValuesAndGrads {
  Doubles y, dx;
};

ValuesAndGrads run_interpolate(const Shape& xs, const std::vector<float>& x,
                               const InterpolateOptions& o,
                               const std::vector<float>& dy,
                               const std::string& type) {
  ContextGuard guard(context("cpu", type));
  auto v = variable_from(xs, x, true);
  auto y = F::interpolate(v, o.output_size, o.mode, o.align_corners,
                          o.half_pixel, o.half_pixel_for_nn, o.channel_last);
  y->forward();
  auto g = make_ndarray(y->shape());
  std::copy(dy.begin(), dy.end(), g->cast<float>(true));
  y->backward(g);
  return {to_doubles(y), grad_doubles(v)};
}

// A batch big enough for the team (2M outputs, over parallel_min() under
// either wait policy) gives each image the bits it gets alone: the slices
// are read, resized and written at their own offsets, forward and back.
TEST(Interpolate, ABatchSplitAcrossTheTeamGivesEachImageItsBits) {
  for (const std::string type : {"float", "half"}) {
    for (const bool channel_last : {false, true}) {
      const int64_t batch = 64;
      const Shape image =
          channel_last ? Shape{1, 17, 19, 16} : Shape{1, 16, 17, 19};
      const InterpolateOptions o =
          opts({40, 46}, "linear", false, true, false, channel_last);
      const int64_t in_n = shape_size(image), out_n = 40 * 46 * 16;
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> u(-2.0f, 2.0f);
      std::vector<float> x(batch * in_n), dy(batch * out_n);
      for (float& e : x) e = u(rng);
      for (float& e : dy) e = u(rng);
      Shape xs = image;
      xs[0] = batch;
      const ValuesAndGrads all = run_interpolate(xs, x, o, dy, type);
      for (int64_t n = 0; n < batch; n += 21) {
        const ValuesAndGrads one = run_interpolate(
            image, {x.begin() + n * in_n, x.begin() + (n + 1) * in_n}, o,
            {dy.begin() + n * out_n, dy.begin() + (n + 1) * out_n}, type);
        const std::string at = type + (channel_last ? " channel_last" : "") +
                               ", image " + std::to_string(n);
        EXPECT_EQ(
            Doubles(all.y.begin() + n * out_n, all.y.begin() + (n + 1) * out_n),
            one.y)
            << at;
        EXPECT_EQ(
            Doubles(all.dx.begin() + n * in_n, all.dx.begin() + (n + 1) * in_n),
            one.dx)
            << at;
      }
    }
  }
}

// The grad sums each source's pairs (ResizedAxis::ptr, pair_j, pair_w):
// the bits of adding each output's two shares, (1 - w) and w, to its two
// sources in output order, axis by axis backwards, as written here.
TEST(Interpolate, GradHasTheBitsOfAddingEachOutputsSharesInTurn) {
  struct Resize {
    Shape x;
    InterpolateOptions o;
  };
  for (const Resize& c :
       {Resize{{2, 3, 5, 7}, opts({11, 4}, "linear", false, true)},
        Resize{{2, 3, 6, 5}, opts({4, 13}, "linear", true)},
        Resize{{3, 7, 6, 2}, opts({3, 9}, "linear", false, false, false, true)},
        Resize{{2, 5, 9}, opts({4}, "nearest", false, true)}}) {
    const auto xv = [&] {
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> v(shape_size(c.x));
      for (float& e : v) e = u(rng);
      return v;
    }();
    auto x = variable_from(c.x, xv, true);
    auto y =
        F::interpolate(x, c.o.output_size, c.o.mode, c.o.align_corners,
                       c.o.half_pixel, c.o.half_pixel_for_nn, c.o.channel_last);
    y->forward();
    auto seed = make_ndarray(y->shape());
    float* dy = seed->cast<float>(true);
    for (int64_t i = 0; i < y->size(); ++i) dy[i] = 0.25f * (i % 13) - 1.5f;
    std::vector<float> g(dy, dy + y->size());
    y->backward(seed);
    const auto& axes =
        dynamic_cast<const Interpolate&>(y->parent()->function()).axes();
    Shape s = y->shape();
    for (auto r = axes.rbegin(); r != axes.rend(); ++r) {
      const int nd = static_cast<int>(s.size());
      const int64_t outer = shape_size(s, 0, r->axis);
      const int64_t inner = shape_size(s, r->axis + 1, nd);
      std::vector<float> d(outer * r->in * inner, 0.0f);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < r->out; ++j) {
          for (int64_t k = 0; k < inner; ++k) {
            const float gj = g[(o * r->out + j) * inner + k];
            float& a = d[(o * r->in + r->i0[j]) * inner + k];
            float& b = d[(o * r->in + r->i1[j]) * inner + k];
            if (r->w[j] == 0.0f) {
              a += gj;
            } else {
              a += (1.0f - r->w[j]) * gj;
              b += r->w[j] * gj;
            }
          }
        }
      }
      g = std::move(d);
      s[r->axis] = r->in;
    }
    EXPECT_EQ(grad_doubles(x), Doubles(g.begin(), g.end()))
        << shape_str(c.x) << " -> " << shape_str(c.o.output_size);
  }
}

TEST(Interpolate, BadArguments) {
  auto x = make_variable({2, 3, 4});
  expect_error([&] { F::interpolate(x, {5}, "cubic"); },
               {"[interpolate] mode 'cubic' is not one of nearest, linear"});
  expect_error([&] { F::interpolate(x, {5}, "linear", true, true); },
               {"[interpolate] align_corners and half_pixel cannot both be "
                "true"});
  expect_error([&] { F::interpolate(x, {}); },
               {"[interpolate] output_size () must have 1 to 3 values, one "
                "per resized axis of x with shape (2, 3, 4)"});
  expect_error(
      [&] {
        F::interpolate(x, {2, 0});
      },
      {"[interpolate] output_size (2, 0) must be positive"});
  expect_error(
      [&] {
        F::interpolate(make_variable({2, 0}), {3});
      },
      {"[interpolate] x with shape (2, 0) is empty along axis 1, "
       "which output_size (3,) resizes to 3"});
}

}  // namespace
}  // namespace mg::test::interpolate_tests
