// DeformableConvolution: against a double reference (v1 and modulated v2,
// groups, deformable groups, stride), the plain convolution at zero
// offsets, a hand-worked shifted sample, the parametric form, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::deformable_convolution_tests {
namespace {

struct Dcn {
  int64_t pad, stride, dil, group, dg;
};

// Bilinear sample of an h x w map, 0 outside (-1, h) x (-1, w) and at
// corners outside the map.
double sample(const double* m, int64_t h, int64_t w, double y, double x) {
  if (!(y > -1 && x > -1 && y < h && x < w)) return 0;
  const double fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  const double ly = y - fy, lx = x - fx;
  auto at = [&](int64_t a, int64_t b) {
    return a < 0 || a >= h || b < 0 || b >= w ? 0.0 : m[a * w + b];
  };
  return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) +
         ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1);
}

Doubles dcn_ref(const std::vector<Doubles>& in, const Shape& xs,
                const Shape& ws, const Dcn& d, bool has_mask, bool has_bias) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  const int64_t oc = ws[0], cg = ws[1], kh = ws[2], kw = ws[3], k = kh * kw;
  const int64_t oh = (h + 2 * d.pad - (d.dil * (kh - 1) + 1)) / d.stride + 1;
  const int64_t ow = (w + 2 * d.pad - (d.dil * (kw - 1) + 1)) / d.stride + 1;
  const Doubles& x = in[0];
  const Doubles& wt = in[1];
  const Doubles& off = in[2];
  const Doubles* mask = has_mask ? &in[3] : nullptr;
  const Doubles* bias = has_bias ? &in[has_mask ? 4 : 3] : nullptr;
  const int64_t per_dg = c / d.dg, ocg = oc / d.group;
  Doubles y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = bias ? (*bias)[o] : 0.0;
          const int64_t g = o / ocg;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t ch = g * cg + ci, dg = ch / per_dg;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t t = i * kw + j;
                const int64_t at = (oy * d.stride) * w + ox * d.stride;
                const double dy =
                    off[((b * d.dg + dg) * 2 * k + 2 * t) * h * w + at];
                const double dx =
                    off[((b * d.dg + dg) * 2 * k + 2 * t + 1) * h * w + at];
                double v = sample(x.data() + (b * c + ch) * h * w, h, w,
                                  oy * d.stride + i * d.dil - d.pad + dy,
                                  ox * d.stride + j * d.dil - d.pad + dx);
                if (mask) v *= (*mask)[((b * d.dg + dg) * k + t) * h * w + at];
                s += wt[((o * cg + ci) * kh + i) * kw + j] * v;
              }
          }
          y.push_back(s);
        }
  return y;
}

// Offsets in (-2, 2) with fractional parts in [0.1, 0.9]: no sample within
// the finite-difference step (or a bfloat16 rounding) of a pixel row or
// column, where the bilinear sampler has a kink.
std::vector<float> offsets(int64_t count) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = (i * 7919 + 13) % 97;
    const float whole = static_cast<float>(r % 4) - 2.0f;  // -2 .. 1
    v[i] = whole + 0.1f + 0.8f * static_cast<float>(r % 23) / 22.0f;
  }
  return v;
}

harness::Case dcn_case(const std::string& label, Shape xs, Shape ws, Dcn d,
                       bool has_mask, bool has_bias) {
  return {
      label, [=] {
        FunctionCheck c;
        const int64_t k = ws[2] * ws[3];
        const Shape os{xs[0], 2 * d.dg * k, xs[2], xs[3]};
        c.inputs = {
            {xs}, {ws}, InputSpec::fixed(os, offsets(shape_size(os)), true)};
        if (has_mask)
          c.inputs.push_back({{xs[0], d.dg * k, xs[2], xs[3]}, 0.0f, 1.0f});
        if (has_bias) c.inputs.push_back({{ws[0]}});
        DeformableConvolutionOptions o;
        o.pad = {d.pad, d.pad};
        o.stride = {d.stride, d.stride};
        o.dilation = {d.dil, d.dil};
        o.group = static_cast<int>(d.group);
        o.deformable_group = static_cast<int>(d.dg);
        c.build = [o, has_mask, has_bias](const std::vector<VariablePtr>& in) {
          return F::deformable_convolution(
              in[0], in[1], in[2], has_mask ? in[3] : nullptr,
              has_bias ? in[has_mask ? 4 : 3] : nullptr, o);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return dcn_ref(in, xs, ws, d, has_mask, has_bias);
        };
        // Sums of up to 27 products of values in [-1, 1).
        c.half_atol = 2e-2, c.bf16_atol = 1.5e-1;
        return c;
      }};
}

const bool kDeformableConvolution = harness::add(
    decl::DeformableConvolution,
    {dcn_case("modulated groups 2 deformable groups 2", {2, 4, 5, 5},
              {6, 2, 3, 3}, Dcn{1, 1, 1, 2, 2}, true, true),
     dcn_case("v1 bias stride 2", {2, 3, 6, 6}, {4, 3, 3, 3},
              Dcn{1, 2, 1, 1, 1}, false, true),
     dcn_case("modulated no bias dilation 2", {1, 2, 6, 5}, {2, 2, 2, 2},
              Dcn{0, 1, 2, 1, 1}, true, false)});

// 256 channels x 3 x 3 = 2304 products in [0, 1) per output (sums near 576,
// where an fp16 accumulator's spacing is 0.5), offsets of half a pixel
// (exact in every type): against double in half and bfloat16.
const bool kDeformableConvolutionLong = harness::add(
    decl::DeformableConvolution,
    {{"2304-term sums",
      [] {
        FunctionCheck c;
        const Shape xs{1, 256, 3, 3}, ws{2, 256, 3, 3}, os{1, 18, 3, 3};
        c.inputs = {{xs, 0.0f, 1.0f},
                    {ws, 0.0f, 1.0f},
                    InputSpec::fixed(os, std::vector<float>(162, 0.5f))};
        DeformableConvolutionOptions o;
        o.pad = {1, 1};
        c.build = [o](const std::vector<VariablePtr>& in) {
          return F::deformable_convolution(in[0], in[1], in[2], nullptr,
                                           nullptr, o);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return dcn_ref(in, xs, ws, Dcn{1, 1, 1, 1, 1}, false, false);
        };
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3, c.bf16_rtol = 1e-2;
        c.check_grad = false;
        return c;
      },
      /*long_sum=*/true}});

TEST(DeformableConvolution, ZeroOffsetsAndUnitMaskAreAConvolution) {
  const Shape xs{2, 4, 6, 5}, ws{6, 2, 3, 3};
  auto x = make_variable(xs);
  auto w = make_variable(ws);
  auto b = make_variable({6});
  for (auto& v : {x, w, b}) {
    float* p = v->data()->cast<float>(true);
    for (int64_t i = 0; i < v->size(); ++i) p[i] = std::sin(0.7f * i + 0.3f);
  }
  auto off = variable_from({2, 18, 6, 5}, std::vector<float>(2 * 18 * 30, 0));
  auto mask = variable_from({2, 9, 6, 5}, std::vector<float>(2 * 9 * 30, 1));
  DeformableConvolutionOptions o;
  o.pad = {1, 1};
  o.group = 2;
  auto y = F::deformable_convolution(x, w, off, mask, b, o);
  ConvolutionOptions co;
  co.pad = {1, 1};
  co.group = 2;
  auto ref = F::convolution(x, w, b, co);
  y->forward();
  ref->forward();
  EXPECT_EQ(y->shape(), ref->shape());
  expect_near(to_doubles(y), to_doubles(ref), 1e-5, 1e-5, "convolution");
}

TEST(DeformableConvolution, HandWorkedShiftedSample) {
  // A 1x1 kernel sampling half a pixel right and down: the mean of 4
  // pixels, times the mask 0.5, times the weight 2.
  auto x = variable_from({1, 1, 2, 2}, {1, 2, 3, 4});
  auto w = variable_from({1, 1, 1, 1}, {2});
  auto off = variable_from({1, 2, 2, 2}, {0.5f, 0, 0, 0, 0.5f, 0, 0, 0});
  auto mask = variable_from({1, 1, 2, 2}, {0.5f, 1, 1, 1});
  auto y = F::deformable_convolution(x, w, off, mask);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{2.5, 4, 6, 8}));
}

TEST(DeformableConvolution, ParametricFormMakesWeightAndBias) {
  ParameterScope scope;
  auto x = make_variable({2, 3, 5, 5});
  auto off = make_variable({2, 18, 5, 5});
  PF::DeformableConvolutionParams p;
  p.pad = {1, 1};
  auto y = PF::deformable_convolution(x, 4, {3, 3}, off, nullptr, scope, p);
  EXPECT_EQ(y->shape(), (Shape{2, 4, 5, 5}));
  EXPECT_EQ(scope["deformable_conv"].get("W")->shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(scope["deformable_conv"].get("b")->shape(), (Shape{4}));
}

TEST(DeformableConvolution, Errors) {
  auto x = make_variable({1, 2, 4, 4});
  auto w = make_variable({2, 2, 3, 3});
  expect_error(
      [&] {
        F::deformable_convolution(x, w, make_variable({1, 9, 4, 4}));
      },
      {"[deformable_convolution] offset with shape (1, 9, 4, 4) must be (1, "
       "18, 4, 4)"});
  expect_error(
      [&] {
        F::deformable_convolution(x, w, make_variable({1, 18, 4, 4}),
                                  make_variable({1, 18, 4, 4}));
      },
      {"[deformable_convolution] mask with shape (1, 18, 4, 4) must be (1, 9, "
       "4, 4)"});
  expect_error(
      [&] {
        F::deformable_convolution(make_variable({1, 2, 3, 4, 4}), w,
                                  make_variable({1, 18, 4, 4}));
      },
      {"[deformable_convolution] x with shape (1, 2, 3, 4, 4) and base_axis 1 "
       "must have a channel axis and exactly 2 spatial axes"});
  expect_error(
      [&] {
        DeformableConvolutionOptions o;
        o.group = 2;
        F::deformable_convolution(x, w, make_variable({1, 18, 4, 4}), nullptr,
                                  nullptr, o);
      },
      {"[deformable_convolution] group 2 must divide"});
  expect_error(
      [&] {
        DeformableConvolutionOptions o;
        o.deformable_group = 3;
        F::deformable_convolution(x, w, make_variable({1, 54, 4, 4}), nullptr,
                                  nullptr, o);
      },
      {"[deformable_convolution] deformable_group 3 must divide"});
  expect_error(
      [&] {
        DeformableConvolutionOptions o;
        o.pad = {2, 2};
        F::deformable_convolution(x, w, make_variable({1, 18, 4, 4}),
                                  make_variable({1, 9, 4, 4}), nullptr, o);
      },
      {"[deformable_convolution] output size 6 along spatial axis 0"});
  expect_error(
      [&] {
        DeformableConvolutionOptions o;
        o.channel_last = true;
        F::deformable_convolution(x, w, make_variable({1, 18, 4, 4}), nullptr,
                                  nullptr, o);
      },
      {"[deformable_convolution] channel_last=true is not supported"});
  expect_error(
      [&] {
        F::deformable_convolution(x, w, make_variable({1, 18, 4, 4}), nullptr,
                                  make_variable({3}));
      },
      {"[deformable_convolution] bias with shape (3,) must be (2,)"});
}

}  // namespace
}  // namespace mg::test::deformable_convolution_tests
