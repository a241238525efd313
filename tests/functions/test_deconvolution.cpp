#include <gtest/gtest.h>

#include <cmath>

#include "../support/conv_reference.hpp"
#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::deconvolution_tests {
namespace {

// The geometry for the reference loops: out by the deconvolution's rule.
ConvRefGeometry geo(const Shape& xs, const Shape& ws,
                    const DeconvolutionOptions& o) {
  ConvRefGeometry g = conv_ref_geometry(xs, ws, o);
  g.oc = ws[1] * o.group;
  const auto extra = last3(o.output_padding, 0);
  for (int a = 0; a < 3; ++a) {
    g.out[a] = (g.in[a] - 1) * g.stride[a] - 2 * g.pad[a] +
               g.dil[a] * (g.k[a] - 1) + 1 + extra[a];
  }
  return g;
}

// Every x[n, c, i] scatters x W[c, o, k] to y[n, o, i * stride - pad +
// k * dilation] for the outputs o of c's group; then the bias; in double.
Doubles deconv_ref(const std::vector<Doubles>& in, const ConvRefGeometry& g) {
  const Doubles &x = in[0], &w = in[1];
  const int64_t cg = g.c / g.group, og = g.oc / g.group;
  const int64_t osz = g.out[0] * g.out[1] * g.out[2];
  // The output position written by input i and kernel tap k along axis a.
  auto dst = [&](int a, int64_t i, int64_t k) {
    return i * g.stride[a] - g.pad[a] + k * g.dil[a];
  };
  auto inside = [&](int a, int64_t p) { return p >= 0 && p < g.out[a]; };
  Doubles y(g.n * g.oc * osz, 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t i0 = 0; i0 < g.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < g.in[1]; ++i1)
          for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
            const double xv = x[at(n * g.c + c, g.in, i0, i1, i2)];
            for (int64_t ol = 0; ol < og; ++ol) {
              const int64_t o = (c / cg) * og + ol;
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t p0 = dst(0, i0, k0), p1 = dst(1, i1, k1),
                                  p2 = dst(2, i2, k2);
                    if (!inside(0, p0) || !inside(1, p1) || !inside(2, p2)) {
                      continue;  // cropped by the padding
                    }
                    y[at(n * g.oc + o, g.out, p0, p1, p2)] +=
                        xv * w[at(c * og + ol, g.k, k0, k1, k2)];
                  }
            }
          }
  if (in.size() > 2) {
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t o = 0; o < g.oc; ++o)
        for (int64_t p = 0; p < osz; ++p)
          y[(n * g.oc + o) * osz + p] += in[2][o];
  }
  return y;
}

FunctionCheck deconv_check(const Shape& xs, const Shape& ws, bool bias,
                           const DeconvolutionOptions& opts) {
  FunctionCheck c;
  c.inputs = {{xs}, {ws}};
  if (bias) c.inputs.push_back({{ws[1] * opts.group}});
  c.build = [opts](const std::vector<VariablePtr>& in) {
    return F::deconvolution(in[0], in[1], in.size() > 2 ? in[2] : nullptr,
                            opts);
  };
  const ConvRefGeometry g = geo(xs, ws, opts);
  c.reference = [g](const std::vector<Doubles>& in) {
    return deconv_ref(in, g);
  };
  // As for Convolution (each output sums at most C/group * prod(k)
  // products, and dW sums N * prod(in) <= 128): measured worst errors half
  // 2.4e-3, bf16 2.0e-2; the tolerances leave about 3x.
  c.half_atol = 5e-3, c.half_rtol = 2e-3;
  c.bf16_atol = 3e-2, c.bf16_rtol = 1e-2;
  return c;
}

const bool kDeconvolutionBasic2dWithBias =
    harness::add(decl::Deconvolution,
                 {{"basic2d with bias", [] {
                     return deconv_check({2, 3, 4, 4}, {3, 4, 3, 3}, true, {});
                   }}});

const bool kDeconvolutionStride2Pad1 =
    harness::add(decl::Deconvolution,
                 {{"stride2 pad1", [] {
                     DeconvolutionOptions o;
                     o.pad = {1, 1};
                     o.stride = {2, 2};
                     return deconv_check({2, 3, 4, 3}, {3, 2, 3, 3}, true, o);
                   }}});

const bool kDeconvolutionStride2OutputPadding1 =
    harness::add(decl::Deconvolution,
                 {{"stride2 output padding1", [] {
                     DeconvolutionOptions o;
                     o.pad = {1, 1};
                     o.stride = {2, 2};
                     o.output_padding = {1, 0};
                     return deconv_check({2, 3, 3, 3}, {3, 2, 3, 3}, true, o);
                   }}});

const bool kDeconvolutionDilation2 =
    harness::add(decl::Deconvolution,
                 {{"dilation2", [] {
                     DeconvolutionOptions o;
                     o.dilation = {2, 2};
                     o.pad = {1, 0};
                     return deconv_check({2, 2, 4, 3}, {2, 3, 3, 2}, true, o);
                   }}});

const bool kDeconvolutionGroup2WithoutBias =
    harness::add(decl::Deconvolution,
                 {{"group2 without bias", [] {
                     DeconvolutionOptions o;
                     o.group = 2;
                     o.stride = {2, 1};
                     return deconv_check({2, 4, 3, 4}, {4, 3, 2, 3}, false, o);
                   }}});

const bool kDeconvolutionOneDimensional = harness::add(
    decl::Deconvolution, {{"one dimensional", [] {
                             DeconvolutionOptions o;
                             o.stride = {2};
                             o.pad = {1};
                             return deconv_check({2, 3, 5}, {3, 4, 3}, true, o);
                           }}});

const bool kDeconvolutionThreeDimensional = harness::add(
    decl::Deconvolution,
    {{"three dimensional", [] {
        DeconvolutionOptions o;
        o.stride = {2, 1, 1};
        return deconv_check({2, 2, 2, 3, 3}, {2, 3, 2, 2, 2}, true, o);
      }}});

// DepthwiseDeconvolution: the grouped deconvolution with group = C /
// divisor, weight (C, k...) read as (C, 1, k...), against the same double
// reference.
harness::Case depthwise_case(const std::string& label, const Shape& xs,
                             const Shape& ws, bool bias,
                             const DepthwiseDeconvolutionOptions& o) {
  return {label, [=] {
            const int64_t c = xs[o.base_axis];
            Shape wv{ws[0], 1};
            wv.insert(wv.end(), ws.begin() + 1, ws.end());
            DeconvolutionOptions d{o.base_axis,
                                   o.pad,
                                   o.stride,
                                   o.dilation,
                                   static_cast<int>(c / o.divisor),
                                   {}};
            FunctionCheck ch = deconv_check(xs, wv, bias, d);
            ch.inputs[1] = {ws};
            ch.build = [o](const std::vector<VariablePtr>& in) {
              return F::depthwise_deconvolution(
                  in[0], in[1], in.size() > 2 ? in[2] : nullptr, o);
            };
            return ch;
          }};
}

const bool kDepthwiseDeconvolution =
    harness::add(decl::DepthwiseDeconvolution,
                 {depthwise_case("3x3 stride 2 pad 1 with bias", {2, 4, 4, 3},
                                 {4, 3, 3}, true, {1, {1, 1}, {2, 2}, {}, 1}),
                  depthwise_case("divisor 2 without bias", {2, 4, 3, 3},
                                 {4, 2, 3}, false, {1, {}, {}, {}, 2}),
                  depthwise_case("1-D dilation 2 divisor 3", {2, 6, 5}, {6, 3},
                                 true, {1, {1}, {1}, {2}, 3})});

TEST(DepthwiseDeconvolution, SumsDivisorChannelsIntoEachOutput) {
  // Four channels, divisor 2, 1x1 kernels: output o = x[2o] w[2o] + x[2o +
  // 1] w[2o + 1] + bias[o].
  auto x = variable_from({1, 4, 1, 1}, {1, 2, 3, 4});
  auto w = variable_from({4, 1, 1}, {1, 10, 100, 1000});
  auto b = variable_from({2}, {0.5f, 0});
  DepthwiseDeconvolutionOptions o;
  o.divisor = 2;
  auto y = F::depthwise_deconvolution(x, w, b, o);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(to_doubles(y), (Doubles{21.5, 4300}));
}

TEST(DepthwiseDeconvolution, BadShapes) {
  auto x = make_variable({2, 4, 5, 5});
  DepthwiseDeconvolutionOptions d3;
  d3.divisor = 3;
  expect_error(
      [&] {
        F::depthwise_deconvolution(x, make_variable({4, 3, 3}), nullptr, d3);
      },
      {"[depthwise_deconvolution] divisor 3 must be positive and divide the "
       "4 channels of x with shape (2, 4, 5, 5)"});
  expect_error(
      [&] {
        F::depthwise_deconvolution(x, make_variable({2, 3, 3}));
      },
      {"[depthwise_deconvolution] weight with shape (2, 3, 3) must be (4, "
       "kernel...) with 2 kernel sizes"});
  expect_error(
      [&] {
        F::depthwise_deconvolution(x, make_variable({4, 3, 3}),
                                   make_variable({2}));
      },
      {"[depthwise_deconvolution] bias with shape (2,) must have shape (4,), "
       "one per output channel (4 channels over divisor 1)"});
}

TEST(ParametricDepthwiseDeconvolution, CreatesItsParameters) {
  ParameterScope scope;
  PF::DepthwiseDeconvolutionParams p;
  p.divisor = 2;
  p.stride = {2, 2};
  auto y = PF::depthwise_deconvolution(make_variable({2, 6, 4, 4}), {2, 2},
                                       scope["up"], p);
  EXPECT_EQ(y->shape(), (Shape{2, 3, 8, 8}));
  EXPECT_EQ(scope["up/depthwise_deconv"].get("W")->shape(), (Shape{6, 2, 2}));
  EXPECT_EQ(scope["up/depthwise_deconv"].get("b")->shape(), (Shape{3}));
  p.divisor = 4;
  expect_error(
      [&] {
        PF::depthwise_deconvolution(make_variable({2, 6, 4, 4}), {2, 2},
                                    scope["bad"], p);
      },
      {"[depthwise_deconvolution] divisor 4 must be positive and divide the 6 "
       "channels of x with shape (2, 6, 4, 4)"});
  EXPECT_EQ(scope["bad"].size(), 0u);  // nothing left behind
}

TEST(Deconvolution, IsTheTransposeOfConvolution) {
  // <conv(x, W), y> = <x, deconv(y, W)> for the same W and options.
  ConvolutionOptions co;
  co.pad = {1, 1};
  co.stride = {2, 2};
  co.group = 2;
  DeconvolutionOptions dopt;
  dopt.pad = co.pad;
  dopt.stride = co.stride;
  dopt.group = co.group;
  std::vector<float> xv(2 * 4 * 7 * 7), wv(6 * 2 * 3 * 3), yv(2 * 6 * 4 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::sin(0.3 * i);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::cos(0.7 * i);
  for (size_t i = 0; i < yv.size(); ++i) yv[i] = std::sin(1.1 * i + 0.5);
  auto x = variable_from({2, 4, 7, 7}, xv);
  auto w = variable_from({6, 2, 3, 3}, wv);
  auto y = variable_from({2, 6, 4, 4}, yv);
  auto cx = F::convolution(x, w, nullptr, co);
  auto dy = F::deconvolution(y, w, nullptr, dopt);
  ASSERT_EQ(cx->shape(), y->shape());
  ASSERT_EQ(dy->shape(), x->shape());
  cx->forward();
  dy->forward();
  double a = 0, b = 0;
  const Doubles cxd = to_doubles(cx), dyd = to_doubles(dy);
  for (size_t i = 0; i < yv.size(); ++i) a += cxd[i] * yv[i];
  for (size_t i = 0; i < xv.size(); ++i) b += dyd[i] * xv[i];
  EXPECT_NEAR(a, b, 1e-3 * std::fabs(a) + 1e-3);
}

TEST(Deconvolution, OutputShape) {
  DeconvolutionOptions o;
  o.pad = {1, 0};
  o.stride = {2, 3};
  o.dilation = {1, 2};
  o.group = 2;
  // H: (5 - 1) 2 - 2 + 3 = 9; W: (4 - 1) 3 + 2 (3 - 1) + 1 = 14.
  auto y = F::deconvolution(make_variable({2, 4, 5, 4}),
                            make_variable({4, 3, 3, 3}), make_variable({6}), o);
  EXPECT_EQ(y->shape(), (Shape{2, 6, 9, 14}));
  o.output_padding = {1, 2};
  y = F::deconvolution(make_variable({2, 4, 5, 4}), make_variable({4, 3, 3, 3}),
                       nullptr, o);
  EXPECT_EQ(y->shape(), (Shape{2, 6, 10, 16}));
}

// Every error names the function first.
const char kTag[] = "[deconvolution] ";

TEST(Deconvolution, ChannelMismatchNamesShapes) {
  try {
    F::deconvolution(make_variable({2, 3, 8, 8}), make_variable({4, 2, 3, 3}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "[deconvolution] x with shape (2, 3, 8, 8) has 3 channels, but "
        "W with shape (4, 2, 3, 3) expects 4");
  }
}

TEST(Deconvolution, BadInputs) {
  DeconvolutionOptions o;
  o.group = 2;
  expect_error(
      [&] {
        F::deconvolution(make_variable({2, 3, 4, 4}),
                         make_variable({3, 2, 3, 3}), nullptr, o);
      },
      {"x with shape (2, 3, 4, 4) has 3 channels, which group 2 does not "
       "divide"},
      kTag);
  expect_error(
      [] {
        F::deconvolution(make_variable({2, 3, 4, 4}), make_variable({3, 2, 3}));
      },
      {"W with shape (3, 2, 3) must have 4 dimensions"}, kTag);
  o = {};
  o.pad = {3, 0};
  expect_error(
      [&] {
        F::deconvolution(make_variable({2, 3, 2, 2}),
                         make_variable({3, 2, 3, 3}), nullptr, o);
      },
      {"give an empty output along spatial axis 0 (size -2)"}, kTag);
  o = {};
  o.stride = {2, 2};
  o.output_padding = {2, 0};
  expect_error(
      [&] {
        F::deconvolution(make_variable({2, 3, 4, 4}),
                         make_variable({3, 2, 3, 3}), nullptr, o);
      },
      {"output_padding (2, 0) must be smaller than stride (2, 2)"}, kTag);
  expect_error(
      [] {
        F::deconvolution(make_variable({2, 3, 4, 4}),
                         make_variable({3, 2, 3, 3}), make_variable({3}));
      },
      {"b with shape (3,) must have shape (2,)"}, kTag);
}

TEST(ParametricDeconvolution, CreatesWeightsWithInputChannelsFirst) {
  ParameterScope params;
  auto x = make_variable({4, 6, 5, 5});
  parametric_functions::DeconvolutionParams p;
  p.stride = {2, 2};
  p.group = 2;
  auto y = PF::deconvolution(x, 8, {4, 4}, params["up"], p);
  EXPECT_EQ(y->shape(), (Shape{4, 8, 12, 12}));
  auto list = params.parameters();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, "up/deconv/W");
  EXPECT_EQ(list[0].second->shape(), (Shape{6, 4, 4, 4}));
  EXPECT_EQ(list[1].second->shape(), (Shape{8}));
  const float limit = std::sqrt(6.0f / (4 * 16 + 6 * 16));
  const float* w = list[0].second->data()->get<const float>();
  for (int64_t i = 0; i < list[0].second->size(); ++i) {
    EXPECT_LE(std::fabs(w[i]), limit);
  }
}

// The layer's own checks, made before it creates W and b.
TEST(ParametricDeconvolution, BadInputs) {
  ParameterScope params;
  expect_error(
      [&] {
        PF::deconvolution(nullptr, 4, {3, 3}, params["d"]);
      },
      {"x is a null variable"}, kTag);
  parametric_functions::DeconvolutionParams p;
  p.base_axis = 3;
  expect_error(
      [&] {
        PF::deconvolution(make_variable({2, 3, 8, 8}), 4, {3, 3}, params["d"],
                          p);
      },
      {"base_axis 3 must be in [0, 2] for x with shape (2, 3, 8, 8)"}, kTag);
  p = {};
  p.group = 2;
  expect_error(
      [&] {
        PF::deconvolution(make_variable({2, 4, 8, 8}), 3, {3, 3}, params["d"],
                          p);
      },
      {"outmaps 3 must be a positive multiple of group 2"}, kTag);
  expect_error(
      [&] {
        PF::deconvolution(make_variable({2, 4, 8, 8}), 4, {3, 0}, params["d"]);
      },
      {"kernel (3, 0) must have 2 positive sizes"}, kTag);
  EXPECT_EQ(params.size(), 0u);
}

// NNabla's whole argument list loads (channel_last before output_padding,
// as functions.yaml orders them); channel_last=true is refused by name.
TEST(Deconvolution, NNablasArgumentListLoadsAndChannelLastIsRefused) {
  auto x = variable_from({1, 1, 1, 2}, {1, 2});
  auto w = variable_from({1, 1, 1, 2}, {1, 10});
  FunctionArgs args = {{"base_axis", int64_t{1}},
                       {"pad", std::vector<int64_t>{0, 0}},
                       {"stride", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"group", int64_t{1}},
                       {"channel_last", false},
                       {"output_padding", std::vector<int64_t>{0, 0}}};
  for (const FunctionArgs& a : {args, FunctionArgs{}}) {
    auto y = apply_from_args("Deconvolution", a, {x, w});
    EXPECT_EQ(y[0]->shape(), (Shape{1, 1, 1, 3}));
    EXPECT_EQ(to_doubles(y[0]), (Doubles{1, 12, 20}));
  }
  args[5].second = true;
  expect_error(
      [&] {
        apply_from_args("Deconvolution", args, {x, w});
      },
      {"channel_last=true is not supported"}, "[deconvolution] ");
}

}  // namespace
}  // namespace mg::test::deconvolution_tests
