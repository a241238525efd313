// AffineGrid, WarpByGrid and WarpByFlow: harness cases against double
// references written from NNabla's definitions (grid positions chosen away
// from the kinks of the interpolation, so that finite differences see one
// linear piece), hand-computed values and the argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::geometric_tests {
namespace {

// ---- AffineGrid ----

double target_ref(int64_t i, int64_t s, bool align_corners) {
  if (s == 1) return 0.0;
  const double v = 2.0 * i / (s - 1) - 1.0;
  return align_corners ? v : v * (s - 1) / s;
}

Doubles affine_grid_ref(const Doubles& theta, int64_t b,
                        const std::vector<int64_t>& size, bool align) {
  const int d = static_cast<int>(size.size());
  const int64_t p = shape_size(size);
  Doubles g;
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t q = 0; q < p; ++q) {
      std::vector<double> t(d + 1, 1.0);  // (x, y[, z], 1)
      int64_t r = q;
      for (int a = d - 1; a >= 0; --a) {
        t[d - 1 - a] = target_ref(r % size[a], size[a], align);
        r /= size[a];
      }
      for (int i = 0; i < d; ++i) {
        double s = 0;
        for (int k = 0; k <= d; ++k) {
          s += t[k] * theta[(n * d + i) * (d + 1) + k];
        }
        g.push_back(s);
      }
    }
  }
  return g;
}

harness::Case affine_grid_case(std::vector<int64_t> size, bool align) {
  const int64_t d = static_cast<int64_t>(size.size());
  return {"size " + shape_str(size) + (align ? " align_corners" : ""), [=] {
            FunctionCheck c;
            c.inputs = {{{3, d, d + 1}}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::affine_grid(in[0], size, align);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return affine_grid_ref(in[0], 3, size, align);
            };
            return c;
          }};
}

const bool kAffineGrid = harness::add(
    decl::AffineGrid,
    {affine_grid_case({3, 4}, false), affine_grid_case({2, 5}, true),
     affine_grid_case({2, 3, 2}, false), affine_grid_case({1, 3}, true)});

TEST(AffineGrid, IdentityThetaGivesTheNormalizedGrid) {
  auto theta = variable_from({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  auto g = F::affine_grid(theta, {2, 3}, /*align_corners=*/true);
  g->forward();
  EXPECT_EQ(g->shape(), (Shape{1, 2, 3, 2}));
  EXPECT_EQ(to_doubles(g), (Doubles{-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1}));
  // Pixel centres: x scaled by 2/3, y by 1/2.
  auto h = F::affine_grid(theta, {2, 3}, /*align_corners=*/false);
  h->forward();
  expect_near(to_doubles(h),
              {-2.0 / 3, -0.5, 0, -0.5, 2.0 / 3, -0.5, -2.0 / 3, 0.5, 0, 0.5,
               2.0 / 3, 0.5},
              1e-6, 0, "grid");
}

TEST(AffineGrid, Errors) {
  expect_error(
      [] {
        F::affine_grid(make_variable({2, 2, 3}), {4});
      },
      {"[affine_grid] size (4,) must have 2 values (H, W) or 3"});
  expect_error(
      [] {
        F::affine_grid(make_variable({2, 2, 3}), {4, 0});
      },
      {"[affine_grid] size (4, 0) must be positive"});
  expect_error(
      [] {
        F::affine_grid(make_variable({2, 3, 4}), {4, 5});
      },
      {"[affine_grid] theta with shape (2, 3, 4) must be (B, 2, 3) "
       "for the 2-D size (4, 5)"});
}

// ---- WarpByGrid ----

double unnormalize_ref(double g, int64_t s, bool align) {
  return align ? (g + 1) * (s - 1) / 2 : ((g + 1) * s - 1) / 2;
}

double reflect_ref(double f, double lo, double hi) {
  const double len = hi - lo;
  while (f < lo || f > hi) f = f < lo ? 2 * lo - f : 2 * hi - f;
  (void)len;
  return f;
}

double pad_ref(double f, int64_t s, const std::string& mode, bool align) {
  const auto clamp = [&](double v) {
    return std::min(std::max(v, 0.0), static_cast<double>(s - 1));
  };
  if (mode == "repeat") return clamp(f);
  if (mode == "reflect") {
    return align ? reflect_ref(f, 0, s - 1)
                 : clamp(reflect_ref(f, -0.5, s - 0.5));
  }
  return f;
}

// y for x (B, C, spatial...) or channel_last, grid (B, out..., d).
Doubles warp_ref(const Doubles& x, const Shape& xs, const Doubles& grid,
                 const Shape& gs, const WarpByGridOptions& o) {
  const int nd = static_cast<int>(xs.size()), d = nd - 2;
  const bool cl = o.channel_last;
  const int64_t b = xs[0], c = cl ? xs[nd - 1] : xs[1];
  const int64_t po = shape_size(gs) / (b * d);
  std::vector<int64_t> si(d);  // along x, y, z
  for (int a = 0; a < d; ++a) si[a] = xs[(cl ? 1 : 2) + d - 1 - a];
  const int64_t pi = shape_size(xs) / (b * c);
  Doubles y(static_cast<size_t>(b * c * po), 0.0);
  for (int64_t n = 0; n < b; ++n) {
    for (int64_t p = 0; p < po; ++p) {
      std::vector<double> f(d);
      for (int a = 0; a < d; ++a) {
        const double g = grid[(n * po + p) * d + a];
        f[a] = pad_ref(unnormalize_ref(g, si[a], o.align_corners), si[a],
                       o.padding_mode, o.align_corners);
      }
      const bool nearest = o.mode == "nearest";
      for (int k = 0; k < (nearest ? 1 : 1 << d); ++k) {
        double w = 1;
        int64_t q = 0;
        bool inside = true;
        for (int a = d - 1; a >= 0; --a) {
          const int64_t i =
              nearest ? static_cast<int64_t>(std::round(f[a]))
                      : static_cast<int64_t>(std::floor(f[a])) + ((k >> a) & 1);
          inside = inside && i >= 0 && i < si[a];
          q = q * si[a] + i;
          if (!nearest) {
            const double frac = f[a] - std::floor(f[a]);
            w *= ((k >> a) & 1) ? frac : 1 - frac;
          }
        }
        if (!inside) continue;
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t xi = cl ? (n * pi + q) * c + ch : (n * c + ch) * pi + q;
          const int64_t yi = cl ? (n * po + p) * c + ch : (n * c + ch) * po + p;
          y[yi] += w * x[xi];
        }
      }
    }
  }
  return y;
}

// Grid values whose pixel positions have fractions in [0.15, 0.35] or
// [0.65, 0.85] (away from the integers and the half-integers where the
// interpolation, the rounding and the reflections have kinks), from 2
// pixels before the first to 2 after the last.
std::vector<float> grid_values(const Shape& gs, const std::vector<int64_t>& si,
                               bool align, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> whole(-2, 1);
  std::uniform_real_distribution<double> frac(0.15, 0.35);
  const int d = static_cast<int>(gs.back());
  std::vector<float> v(static_cast<size_t>(shape_size(gs)));
  for (size_t e = 0; e < v.size(); ++e) {
    const int64_t s = si[e % d];
    std::uniform_int_distribution<int64_t> at(-2, s + 1);
    const double f = static_cast<double>(at(rng)) + frac(rng) +
                     (whole(rng) >= 0 ? 0.5 : 0.0);
    v[e] = static_cast<float>(align ? 2.0 * f / (s - 1) - 1.0
                                    : (2.0 * f + 1.0) / s - 1.0);
  }
  return v;
}

harness::Case warp_case(const std::string& label, Shape xs, Shape out,
                        WarpByGridOptions o) {
  return {label, [=] {
            const int nd = static_cast<int>(xs.size()), d = nd - 2;
            Shape gs{xs[0]};
            gs.insert(gs.end(), out.begin(), out.end());
            gs.push_back(d);
            std::vector<int64_t> si(d);
            for (int a = 0; a < d; ++a) {
              si[a] = xs[(o.channel_last ? 1 : 2) + d - 1 - a];
            }
            FunctionCheck c;
            c.inputs = {
                {xs},
                InputSpec::fixed(gs, grid_values(gs, si, o.align_corners, 5),
                                 /*need_grad=*/o.mode == "linear")};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::warp_by_grid(in[0], in[1], o.mode, o.padding_mode,
                                     o.align_corners, o.channel_last);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return warp_ref(in[0], xs, in[1], gs, o);
            };
            // bfloat16 moves grid positions by up to ~0.01 pixel.
            c.bf16_atol = c.bf16_rtol = 8e-2;
            return c;
          }};
}

WarpByGridOptions warp_opts(const std::string& mode, const std::string& pad,
                            bool align, bool channel_last = false) {
  return {mode, pad, align, channel_last};
}

const bool kWarpByGrid =
    harness::add(decl::WarpByGrid,
                 {warp_case("linear zero", {2, 2, 4, 5}, {3, 4},
                            warp_opts("linear", "zero", false)),
                  warp_case("linear zero align_corners", {2, 2, 4, 5}, {3, 3},
                            warp_opts("linear", "zero", true)),
                  warp_case("linear repeat", {2, 1, 3, 4}, {4, 3},
                            warp_opts("linear", "repeat", false)),
                  warp_case("linear reflect", {2, 2, 4, 3}, {3, 4},
                            warp_opts("linear", "reflect", false)),
                  warp_case("linear reflect align_corners", {2, 2, 4, 3},
                            {3, 4}, warp_opts("linear", "reflect", true)),
                  warp_case("nearest zero", {2, 2, 4, 5}, {3, 4},
                            warp_opts("nearest", "zero", false)),
                  warp_case("nearest reflect align_corners", {2, 2, 3, 4},
                            {4, 3}, warp_opts("nearest", "reflect", true)),
                  warp_case("linear 3-D repeat", {2, 2, 3, 3, 4}, {2, 3, 2},
                            warp_opts("linear", "repeat", true)),
                  warp_case("linear channel_last", {2, 4, 5, 3}, {3, 4},
                            warp_opts("linear", "zero", false, true)),
                  warp_case("nearest 3-D zero", {2, 2, 3, 4, 3}, {2, 2, 3},
                            warp_opts("nearest", "zero", false)),
                  warp_case("nearest channel_last repeat", {2, 3, 4, 2}, {2, 5},
                            warp_opts("nearest", "repeat", true, true))});

TEST(WarpByGrid, ASpatialTransformersThetaGetsItsGrad) {
  // theta -> AffineGrid -> WarpByGrid: the grads of x and theta through
  // both functions against finite differences, and the value against the
  // two references composed.
  FunctionCheck c;
  c.inputs = {{{2, 2, 4, 5}}, {{2, 2, 3}, 0.3f, 0.7f}};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::warp_by_grid(in[0], F::affine_grid(in[1], {3, 4}), "linear",
                           "reflect");
  };
  c.reference = [](const std::vector<Doubles>& in) {
    const Doubles grid = affine_grid_ref(in[1], 2, {3, 4}, false);
    return warp_ref(in[0], {2, 2, 4, 5}, grid, {2, 3, 4, 2},
                    {"linear", "reflect", false, false});
  };
  // Random theta: seed 1 puts a sample within the finite-difference step
  // of a pixel boundary, where bilinear sampling has a kink that finite
  // differences straddle; these seeds do not.
  for (uint32_t seed : {2u, 3u, 4u, 5u, 6u, 7u}) {
    c.seed = seed;
    SCOPED_TRACE(seed);
    check_forward(c);
    check_numerical_grad(c);
  }
}

TEST(WarpByGrid, TheIdentityGridGivesXBack) {
  auto x = variable_from({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  auto theta = variable_from({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  for (bool align : {false, true}) {
    auto y = F::warp_by_grid(x, F::affine_grid(theta, {2, 3}, align), "linear",
                             "zero", align);
    y->forward();
    expect_near(to_doubles(y), {1, 2, 3, 4, 5, 6}, 1e-6, 0, "y");
  }
}

TEST(WarpByGrid, HandComputedValuesAndGrads) {
  // x = [[0, 1], [2, 3]]: the centre (0, 0) with aligned corners is the
  // mean 1.5; (1.5, 0) is outside by half a pixel: zero pads half of 1.5
  // ... = 0.5 * (1 + 3) / 2 = 1; repeat gives (1 + 3) / 2 = 2.
  auto x = variable_from({1, 1, 2, 2}, {0, 1, 2, 3}, true);
  auto grid = variable_from({1, 1, 2, 2}, {0, 0, 2, 0}, true);
  auto y = F::warp_by_grid(x, grid, "linear", "zero", true);
  y->forward();
  expect_near(to_doubles(y), {1.5, 1.0}, 1e-6, 0, "zero");
  y->backward();
  // d y0 / d x = 1/4 each; y1 = (1 - 0.5) * (x01 + x11) / 2.
  expect_near(grad_doubles(x), {0.25, 0.5, 0.25, 0.5}, 1e-6, 0, "dx");
  // d y0 / d gx = (S - 1) / 2 * ((x01 - x00) + (x11 - x10)) / 2 = 0.5.
  expect_near(grad_doubles(grid), {0.5, 1.0, -1.0, 0.5}, 1e-6, 0, "dgrid");
  auto r = F::warp_by_grid(x, grid, "linear", "repeat", true);
  r->forward();
  expect_near(to_doubles(r), {1.5, 2.0}, 1e-6, 0, "repeat");
}

TEST(WarpByGrid, NearestHasAZeroGridGrad) {
  auto x = variable_from({1, 1, 2, 2}, {0, 1, 2, 3}, true);
  auto grid = variable_from({1, 1, 1, 2}, {0.6f, -0.6f}, true);
  auto y = F::warp_by_grid(x, grid, "nearest", "zero", true);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1}));  // (x, y) = (0.8, 0.2) -> (1, 0)
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 1, 0, 0}));
  EXPECT_EQ(grad_doubles(grid), (Doubles{0, 0}));
}

TEST(WarpByGrid, AnInfGridGivesNaNNotAZero) {
  // An overflowed grid (under half, say) must show in y and in the grid's
  // grad, so that a loss scaler sees it; far but finite positions are 0.
  const float inf = std::numeric_limits<float>::infinity();
  auto x = variable_from({1, 1, 2, 2}, {0, 1, 2, 3}, true);
  auto grid = variable_from({1, 1, 2, 2}, {inf, 0, 1e30f, 0}, true);
  auto y = F::warp_by_grid(x, grid, "linear", "reflect");
  auto z = F::warp_by_grid(x, grid, "linear", "zero");
  y->forward();
  z->forward();
  EXPECT_TRUE(std::isnan(to_doubles(y)[0]));
  EXPECT_TRUE(std::isnan(to_doubles(z)[0]));
  EXPECT_EQ(to_doubles(z)[1], 0.0);
  z->backward();
  EXPECT_TRUE(std::isnan(grad_doubles(grid)[0]));
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 0, 0, 0}));
}

TEST(WarpByGrid, Errors) {
  auto x = make_variable({2, 3, 4, 5});
  expect_error(
      [&] {
        F::warp_by_grid(x, make_variable({2, 3, 3, 2}), "cubic");
      },
      {"[warp_by_grid] mode 'cubic' is not one of linear, nearest"});
  expect_error(
      [&] {
        F::warp_by_grid(x, make_variable({2, 3, 3, 2}), "linear", "border");
      },
      {"[warp_by_grid] padding_mode 'border' is not one of zero, repeat, "
       "reflect"});
  expect_error(
      [&] {
        F::warp_by_grid(make_variable({2, 3, 4}), make_variable({2, 3, 2}));
      },
      {"[warp_by_grid] x with shape (2, 3, 4) must have 4 axes"});
  expect_error(
      [&] {
        F::warp_by_grid(x, make_variable({2, 3, 3, 3}));
      },
      {"[warp_by_grid] grid with shape (2, 3, 3, 3) must be (B, Ho, "
       "Wo, 2) for x with shape (2, 3, 4, 5)"});
  expect_error(
      [&] {
        F::warp_by_grid(x, make_variable({1, 3, 3, 2}));
      },
      {"[warp_by_grid] grid with shape (1, 3, 3, 2) and x with shape "
       "(2, 3, 4, 5) must have the same batch size"});
}

// ---- WarpByFlow ----

Doubles warp_flow_ref(const Doubles& data, const Doubles& flow,
                      const Shape& s) {
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  const auto at = [&](int64_t b, int64_t ch, double yy, double xx) {
    const int64_t yi = std::min<int64_t>(std::max<int64_t>(yy, 0), h - 1);
    const int64_t xi = std::min<int64_t>(std::max<int64_t>(xx, 0), w - 1);
    return data[((b * c + ch) * h + yi) * w + xi];
  };
  Doubles y(data.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t yy = 0; yy < h; ++yy) {
        for (int64_t xx = 0; xx < w; ++xx) {
          // Bilinear over the border-clamped image: the clamped position's
          // neighbours with the position's own fractions.
          const double fx = xx + flow[((b * 2) * h + yy) * w + xx];
          const double fy = yy + flow[((b * 2 + 1) * h + yy) * w + xx];
          const double x0 = std::floor(fx), y0 = std::floor(fy);
          const double ax = fx - x0, ay = fy - y0;
          y[((b * c + ch) * h + yy) * w + xx] =
              (1 - ay) *
                  ((1 - ax) * at(b, ch, y0, x0) + ax * at(b, ch, y0, x0 + 1)) +
              ay * ((1 - ax) * at(b, ch, y0 + 1, x0) +
                    ax * at(b, ch, y0 + 1, x0 + 1));
        }
      }
    }
  }
  return y;
}

// Flows of whole pixels plus fractions in [0.2, 0.8].
std::vector<float> flow_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> whole(-2, 1);
  std::uniform_real_distribution<float> frac(0.2f, 0.8f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = static_cast<float>(whole(rng)) + frac(rng);
  return v;
}

harness::Case warp_flow_case(Shape s) {
  return {shape_str(s), [=] {
            const Shape fs{s[0], 2, s[2], s[3]};
            FunctionCheck c;
            c.inputs = {{s},
                        InputSpec::fixed(fs, flow_values(shape_size(fs), 7),
                                         /*need_grad=*/true)};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::warp_by_flow(in[0], in[1]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return warp_flow_ref(in[0], in[1], s);
            };
            c.bf16_atol = c.bf16_rtol = 8e-2;
            return c;
          }};
}

const bool kWarpByFlow =
    harness::add(decl::WarpByFlow,
                 {warp_flow_case({2, 3, 4, 5}), warp_flow_case({1, 1, 3, 3})});

TEST(WarpByFlow, HalfAPixelRightAveragesNeighbours) {
  auto data = variable_from({1, 1, 1, 3}, {0, 2, 4}, true);
  auto flow = variable_from({1, 2, 1, 3}, {0.5f, 0.5f, 0.5f, 0, 0, 0}, true);
  auto y = F::warp_by_flow(data, flow);
  y->forward();
  // The last pixel samples past the border: the border value.
  EXPECT_EQ(to_doubles(y), (Doubles{1, 3, 4}));
  y->backward();
  EXPECT_EQ(grad_doubles(data), (Doubles{0.5, 1, 1.5}));
  EXPECT_EQ(grad_doubles(flow), (Doubles{2, 2, 0, 0, 0, 0}));
}

TEST(WarpByFlow, Errors) {
  expect_error(
      [] {
        F::warp_by_flow(make_variable({2, 3, 4}), make_variable({2, 2, 4}));
      },
      {"[warp_by_flow] data with shape (2, 3, 4) must have 4 axes "
       "(N, C, H, W)"});
  expect_error(
      [] {
        F::warp_by_flow(make_variable({2, 3, 4, 5}),
                        make_variable({2, 3, 4, 5}));
      },
      {"[warp_by_flow] flow with shape (2, 3, 4, 5) must be (2, 2, "
       "4, 5) for data with shape (2, 3, 4, 5)"});
}

}  // namespace
}  // namespace mg::test::geometric_tests
