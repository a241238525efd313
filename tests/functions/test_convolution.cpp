#include <gtest/gtest.h>

#include <cmath>

#include "../support/conv_reference.hpp"
#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::convolution_tests {
namespace {

// The geometry for the reference loops: out by the convolution's rule.
ConvRefGeometry geo(const Shape& xs, const Shape& ws,
                    const ConvolutionOptions& o) {
  ConvRefGeometry g = conv_ref_geometry(xs, ws, o);
  g.oc = ws[0];
  for (int a = 0; a < 3; ++a) {
    g.out[a] =
        (g.in[a] + 2 * g.pad[a] - (g.dil[a] * (g.k[a] - 1) + 1)) / g.stride[a] +
        1;
  }
  return g;
}

// y[n, o, p] = b[o] + sum_{c in o's group, k} x[n, c, p * stride - pad +
// k * dilation] W[o, c, k], in double.
Doubles conv_ref(const std::vector<Doubles>& in, const ConvRefGeometry& g) {
  const Doubles &x = in[0], &w = in[1];
  const int64_t cg = g.c / g.group, og = g.oc / g.group;
  // The input position read by output p and kernel tap k along axis a.
  auto src = [&](int a, int64_t p, int64_t k) {
    return p * g.stride[a] - g.pad[a] + k * g.dil[a];
  };
  auto inside = [&](int a, int64_t i) { return i >= 0 && i < g.in[a]; };
  Doubles y(g.n * g.oc * g.out[0] * g.out[1] * g.out[2]);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.oc; ++o)
      for (int64_t p0 = 0; p0 < g.out[0]; ++p0)
        for (int64_t p1 = 0; p1 < g.out[1]; ++p1)
          for (int64_t p2 = 0; p2 < g.out[2]; ++p2) {
            double s = in.size() > 2 ? in[2][o] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const int64_t c = (o / og) * cg + ci;
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i0 = src(0, p0, k0), i1 = src(1, p1, k1),
                                  i2 = src(2, p2, k2);
                    if (!inside(0, i0) || !inside(1, i1) || !inside(2, i2)) {
                      continue;  // padding
                    }
                    s += x[at(n * g.c + c, g.in, i0, i1, i2)] *
                         w[at(o * cg + ci, g.k, k0, k1, k2)];
                  }
            }
            y[at(n * g.oc + o, g.out, p0, p1, p2)] = s;
          }
  return y;
}

// The full check of a convolution of x (xs) with W (ws) and, with bias, b.
FunctionCheck conv_check(const Shape& xs, const Shape& ws, bool bias,
                         const ConvolutionOptions& opts) {
  FunctionCheck c;
  c.inputs = {{xs}, {ws}};
  if (bias) c.inputs.push_back({{ws[0]}});
  c.build = [opts](const std::vector<VariablePtr>& in) {
    return F::convolution(in[0], in[1], in.size() > 2 ? in[2] : nullptr, opts);
  };
  const ConvRefGeometry g = geo(xs, ws, opts);
  c.reference = [g](const std::vector<Doubles>& in) { return conv_ref(in, g); };
  // Reduced types against float. Inputs in [-1, 1) round with relative
  // error 2^-11 (half) or 2^-9 (bf16); an output sums K = C/group * prod(k)
  // products (K <= 27 here; dW sums N * prod(out) <= 128), so its error
  // grows like sqrt(K) times the rounding, plus the output's own rounding.
  // Measured worst errors over these cases: half 2.6e-3, bf16 2.0e-2, at
  // outputs of magnitude 1 to 10; the tolerances leave about 3x. A wrong
  // index or kernel errs by O(1) per element.
  c.half_atol = 5e-3, c.half_rtol = 2e-3;
  c.bf16_atol = 3e-2, c.bf16_rtol = 1e-2;
  return c;
}

const bool kConvolutionBasic2dWithBias =
    harness::add(decl::Convolution,
                 {{"basic2d with bias", [] {
                     return conv_check({2, 3, 6, 6}, {4, 3, 3, 3}, true, {});
                   }}});

const bool kConvolutionStride2Pad1 =
    harness::add(decl::Convolution,
                 {{"stride2 pad1", [] {
                     ConvolutionOptions o;
                     o.pad = {1, 1};
                     o.stride = {2, 2};
                     return conv_check({2, 3, 7, 8}, {4, 3, 3, 3}, true, o);
                   }}});

const bool kConvolutionDilation2AndUnevenKernel =
    harness::add(decl::Convolution,
                 {{"dilation2 and uneven kernel", [] {
                     ConvolutionOptions o;
                     o.pad = {2, 1};
                     o.dilation = {2, 2};
                     return conv_check({2, 2, 7, 6}, {3, 2, 3, 2}, true, o);
                   }}});

const bool kConvolutionGroup2WithoutBias =
    harness::add(decl::Convolution,
                 {{"group2 without bias", [] {
                     ConvolutionOptions o;
                     o.group = 2;
                     o.pad = {1, 1};
                     return conv_check({2, 4, 5, 5}, {6, 2, 3, 3}, false, o);
                   }}});

const bool kConvolutionDepthwise =
    harness::add(decl::Convolution,
                 {{"depthwise", [] {
                     ConvolutionOptions o;
                     o.group = 4;
                     o.pad = {1, 1};
                     return conv_check({2, 4, 5, 5}, {4, 1, 3, 3}, true, o);
                   }}});

const bool kConvolutionOneDimensional = harness::add(
    decl::Convolution, {{"one dimensional", [] {
                           ConvolutionOptions o;
                           o.pad = {1};
                           o.stride = {2};
                           return conv_check({2, 3, 9}, {4, 3, 3}, true, o);
                         }}});

const bool kConvolutionThreeDimensional = harness::add(
    decl::Convolution,
    {{"three dimensional", [] {
        ConvolutionOptions o;
        o.pad = {1, 0, 1};
        o.stride = {2, 1, 1};
        return conv_check({2, 2, 4, 4, 3}, {3, 2, 2, 3, 2}, true, o);
      }}});

const bool kConvolutionBaseAxis2FoldsLeadingAxesIntoTheBatch =
    harness::add(decl::Convolution,
                 {{"base axis2 folds leading axes into the batch", [] {
                     ConvolutionOptions o;
                     o.base_axis = 2;
                     return conv_check({2, 2, 3, 5, 5}, {4, 3, 3, 3}, true, o);
                   }}});

// A network's first layer (a few channels in, a multiple of 16 out): in
// half our direct kernel's (cpu/conv_direct.hpp), y and dy in its blocks.
const bool kConvolutionFirstLayers =
    harness::add(decl::Convolution,
                 {{"first layer rgb 3x3 pad 1",
                   [] {
                     ConvolutionOptions o;
                     o.pad = {1, 1};
                     return conv_check({2, 3, 9, 10}, {16, 3, 3, 3}, true, o);
                   }},
                  {"first layer gray 5x5 to 32", [] {
                     return conv_check({2, 1, 12, 12}, {32, 1, 5, 5}, true, {});
                   }}});

// DepthwiseConvolution: the grouped convolution with group = C, weight
// (C m, k...) read as (C m, 1, k...), against the same double reference.
harness::Case depthwise_case(const std::string& label, const Shape& xs,
                             const Shape& ws, bool bias,
                             const DepthwiseConvolutionOptions& o) {
  return {label, [=] {
            const int64_t c = xs[o.base_axis];
            Shape wv{ws[0], 1};
            wv.insert(wv.end(), ws.begin() + 1, ws.end());
            ConvolutionOptions co{o.base_axis, o.pad, o.stride, o.dilation,
                                  static_cast<int>(c)};
            FunctionCheck ch = conv_check(xs, wv, bias, co);
            ch.inputs[1] = {ws};
            ch.build = [o](const std::vector<VariablePtr>& in) {
              return F::depthwise_convolution(
                  in[0], in[1], in.size() > 2 ? in[2] : nullptr, o);
            };
            return ch;
          }};
}

const bool kDepthwiseConvolution = harness::add(
    decl::DepthwiseConvolution,
    {depthwise_case("3x3 pad 1 with bias", {2, 4, 5, 5}, {4, 3, 3}, true,
                    {1, {1, 1}, {}, {}, 1}),
     depthwise_case("multiplier 2 stride 2 without bias", {2, 3, 6, 7},
                    {6, 3, 3}, false, {1, {1, 1}, {2, 2}, {}, 2}),
     depthwise_case("1-D dilation 2", {2, 3, 9}, {3, 3}, true,
                    {1, {2}, {}, {2}, 1}),
     depthwise_case("base_axis 2", {2, 2, 3, 4, 4}, {6, 2, 2}, true,
                    {2, {}, {}, {}, 2})});

TEST(DepthwiseConvolution, EachChannelByItsOwnFilters) {
  // Two channels, multiplier 2: output c * 2 + i is channel c times filter
  // c * 2 + i (1x1 kernels: plain scales).
  auto x = variable_from({1, 2, 1, 2}, {1, 2, 10, 20});
  auto w = variable_from({4, 1, 1}, {1, -1, 2, 3});
  auto b = variable_from({4}, {0, 0, 0, 0.5f});
  DepthwiseConvolutionOptions o;
  o.multiplier = 2;
  auto y = F::depthwise_convolution(x, w, b, o);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 4, 1, 2}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, -1, -2, 20, 40, 30.5, 60.5}));
}

TEST(DepthwiseConvolution, BadShapes) {
  auto x = make_variable({2, 3, 5, 5});
  expect_error(
      [&] {
        F::depthwise_convolution(x, make_variable({3, 1, 3, 3}));
      },
      {"[depthwise_convolution] weight with shape (3, 1, 3, 3) must be (3, "
       "kernel...) with 2 kernel sizes: x with shape (2, 3, 5, 5) has 3 "
       "channels at base_axis 1 and multiplier is 1"});
  DepthwiseConvolutionOptions m2;
  m2.multiplier = 2;
  expect_error(
      [&] {
        F::depthwise_convolution(x, make_variable({3, 3, 3}), nullptr, m2);
      },
      {"weight with shape (3, 3, 3) must be (6, kernel...)"});
  DepthwiseConvolutionOptions m0;
  m0.multiplier = 0;
  expect_error(
      [&] {
        F::depthwise_convolution(x, make_variable({3, 3, 3}), nullptr, m0);
      },
      {"[depthwise_convolution] multiplier 0 must be positive"});
  expect_error(
      [&] {
        F::depthwise_convolution(x, make_variable({3, 3, 3}),
                                 make_variable({4}));
      },
      {"[depthwise_convolution] bias with shape (4,) must have shape (3,), one "
       "per output channel (3 channels times multiplier 1)"});
}

TEST(ParametricDepthwiseConvolution, CreatesTrueFanGlorotWeights) {
  ParameterScope scope;
  auto x = make_variable({2, 8, 6, 6});
  PF::DepthwiseConvolutionParams p;
  p.multiplier = 2;
  p.pad = {1, 1};
  auto y = PF::depthwise_convolution(x, {3, 3}, scope["dw"], p);
  EXPECT_EQ(y->shape(), (Shape{2, 16, 6, 6}));
  auto W = scope["dw/depthwise_conv"].get("W");
  auto b = scope["dw/depthwise_conv"].get("b");
  ASSERT_TRUE(W && b);
  EXPECT_EQ(W->shape(), (Shape{16, 3, 3}));
  EXPECT_EQ(b->shape(), (Shape{16}));
  // Glorot over fan_in 9, fan_out 18: limit sqrt(6 / 27) = 0.471; NNabla's
  // channel-counting fans (72, 144) would give 0.167.
  double peak = 0;
  for (double v : to_doubles(W)) peak = std::max(peak, std::abs(v));
  EXPECT_LE(peak, std::sqrt(6.0 / 27.0));
  EXPECT_GT(peak, 0.3);
}

TEST(Convolution, OutputShape) {
  ConvolutionOptions o;
  o.pad = {1, 0};
  o.stride = {2, 3};
  o.dilation = {1, 2};
  // H: (9 + 2 - 3) / 2 + 1 = 5; W: (10 - 5) / 3 + 1 = 2.
  auto y = F::convolution(make_variable({2, 3, 9, 10}),
                          make_variable({8, 3, 3, 3}), nullptr, o);
  EXPECT_EQ(y->shape(), (Shape{2, 8, 5, 2}));
  ConvolutionOptions b2;
  b2.base_axis = 2;
  y = F::convolution(make_variable({4, 5, 3, 6, 6}),
                     make_variable({2, 3, 3, 3}), make_variable({2}), b2);
  EXPECT_EQ(y->shape(), (Shape{4, 5, 2, 4, 4}));
}

// An input with no elements, padded: every output sees only padding and
// is the bias; the weight gradient is an empty sum.
TEST(Convolution, OutputOfOnlyPaddingIsTheBias) {
  ConvolutionOptions o;
  o.pad = {1, 0};
  auto x = make_variable({1, 1, 0, 2}, true);
  auto w = variable_from({2, 1, 1, 1}, {0.5f, -1.0f}, true);
  auto b = variable_from({2}, {3.0f, 4.0f}, true);
  auto y = F::convolution(x, w, b, o);
  ASSERT_EQ(y->shape(), (Shape{1, 2, 2, 2}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{3, 3, 3, 3, 4, 4, 4, 4}));
  y->backward();
  EXPECT_EQ(grad_doubles(w), (Doubles{0, 0}));
  EXPECT_EQ(grad_doubles(b), (Doubles{4, 4}));
}

// A big enough case that the OpenMP paths and the cached primitives run:
// the same layer twice must give the same answer.
TEST(Convolution, LargerLayerIsDeterministic) {
  auto x = make_variable({8, 16, 24, 24});
  auto w = make_variable({32, 16, 3, 3});
  float* xp = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) xp[i] = std::sin(0.37f * i);
  float* wp = w->data()->cast<float>(true);
  for (int64_t i = 0; i < w->size(); ++i) wp[i] = std::cos(0.11f * i) * 0.1f;
  ConvolutionOptions o;
  o.pad = {1, 1};
  auto y1 = F::convolution(x, w, nullptr, o);
  auto y2 = F::convolution(x, w, nullptr, o);
  y1->forward();
  y2->forward();
  EXPECT_EQ(to_doubles(y1), to_doubles(y2));
  // One output checked against the sum it stands for.
  double s = 0;
  for (int c = 0; c < 16; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        s += xp[(c * 24 + 4 + i) * 24 + 6 + j] *
             wp[((5 * 16 + c) * 3 + i) * 3 + j];
  EXPECT_NEAR(to_doubles(y1)[(5 * 24 + 5) * 24 + 7], s, 1e-4);
}

// In a half pass the convolution runs oneDNN's fp32 kernels on W's fp32
// master copy (no half copy made) and writes the grads of W and b in fp32,
// the bias grad from the weight grad's pass over dy.
TEST(Convolution, HalfReadsFloatMasterWeightsAndWritesFloatGrads) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto w = variable_from({2, 1, 2, 2}, {1, 0, 0, 1, 0.5f, 0.5f, -1, 0}, true);
  auto b = variable_from({2}, {1, -1}, true);
  auto y = F::convolution(x, w, b);
  y->forward();
  y->backward();
  EXPECT_EQ(to_doubles(y), (Doubles{7, 9, 13, 15, -3.5, -3.5, -3.5, -3.5}));
  EXPECT_FALSE(w->data()->array().has_copy(Dtype::f16));
  EXPECT_EQ(w->grad()->array().dtype(), Dtype::f32);
  EXPECT_EQ(b->grad()->array().dtype(), Dtype::f32);
  // dW[o, 0, i, j] = the sum of the 2x2 window of x at (i, j); db = 4.
  EXPECT_EQ(grad_doubles(w), (Doubles{12, 16, 24, 28, 12, 16, 24, 28}));
  EXPECT_EQ(grad_doubles(b), (Doubles{4, 4}));
}

// Every error names the function first.
const char kTag[] = "[convolution] ";

TEST(Convolution, ChannelMismatchNamesShapes) {
  try {
    F::convolution(make_variable({2, 3, 8, 8}), make_variable({4, 2, 3, 3}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "[convolution] x with shape (2, 3, 8, 8) has 3 channels, but W "
        "with shape (4, 2, 3, 3) and group 1 expects 2");
  }
}

TEST(Convolution, KernelLargerThanPaddedInput) {
  ConvolutionOptions o;
  o.pad = {1, 0};
  expect_error(
      [&] {
        F::convolution(make_variable({2, 3, 4, 4}), make_variable({4, 3, 5, 5}),
                       nullptr, o);
      },
      {"spans 5 along spatial axis 1, more than the padded input's 4"}, kTag);
  o.pad = {};
  o.dilation = {3, 1};
  expect_error(
      [&] {
        F::convolution(make_variable({2, 3, 6, 6}), make_variable({4, 3, 3, 3}),
                       nullptr, o);
      },
      {"spans 7 along spatial axis 0"}, kTag);
}

TEST(Convolution, GroupMustDivideChannels) {
  ConvolutionOptions o;
  o.group = 2;
  expect_error(
      [&] {
        F::convolution(make_variable({2, 3, 8, 8}), make_variable({4, 1, 3, 3}),
                       nullptr, o);
      },
      {"x with shape (2, 3, 8, 8) has 3 channels, which group 2 does not "
       "divide"},
      kTag);
  expect_error(
      [&] {
        F::convolution(make_variable({2, 4, 8, 8}), make_variable({3, 2, 3, 3}),
                       nullptr, o);
      },
      {"W with shape (3, 2, 3, 3) has 3 output channels, which group 2 does "
       "not divide"},
      kTag);
  o.group = 0;
  expect_error(
      [&] {
        F::convolution(make_variable({2, 4, 8, 8}), make_variable({4, 4, 3, 3}),
                       nullptr, o);
      },
      {"group 0 must be positive"}, kTag);
}

TEST(Convolution, WrongWeightRank) {
  expect_error(
      [] {
        F::convolution(make_variable({2, 3, 8, 8}), make_variable({4, 3, 3}));
      },
      {"W with shape (4, 3, 3) must have 4 dimensions"}, kTag);
}

TEST(Convolution, BadOptions) {
  auto x = make_variable({2, 3, 8, 8});
  auto w = make_variable({4, 3, 3, 3});
  ConvolutionOptions o;
  o.stride = {2};
  expect_error(
      [&] { F::convolution(x, w, nullptr, o); },
      {"stride (2,) must have 2 values, one per spatial axis of x with "
       "shape (2, 3, 8, 8)"},
      kTag);
  o = {};
  o.stride = {0, 1};
  expect_error([&] { F::convolution(x, w, nullptr, o); },
               {"stride (0, 1) must be positive"}, kTag);
  o = {};
  o.pad = {-1, 0};
  expect_error([&] { F::convolution(x, w, nullptr, o); },
               {"pad (-1, 0) must be non-negative"}, kTag);
  o = {};
  o.dilation = {1, 0};
  expect_error([&] { F::convolution(x, w, nullptr, o); },
               {"dilation (1, 0) must be positive"}, kTag);
  o = {};
  o.base_axis = 3;
  expect_error([&] { F::convolution(x, w, nullptr, o); },
               {"base_axis 3 must be in [0, 2] for x with shape (2, 3, 8, 8)"},
               kTag);
  expect_error(
      [&] {
        F::convolution(make_variable({1, 1, 2, 2, 2, 2}),
                       make_variable({1, 1, 1, 1, 1, 1}));
      },
      {"has 4 spatial axes; 1 to 3 are supported"}, kTag);
  expect_error([&] { F::convolution(x, w, make_variable({3})); },
               {"b with shape (3,) must have shape (4,) to match W with shape "
                "(4, 3, 3, 3)"},
               kTag);
  expect_error(
      [&] {
        F::convolution(x, make_variable({4, 3, 0, 3}));
      },
      {"W with shape (4, 3, 0, 3) must have no empty dimension"}, kTag);
}

TEST(ParametricConvolution, CreatesGlorotWeightsAndZeroBias) {
  ParameterScope params;
  auto x = make_variable({4, 6, 12, 12});
  parametric_functions::ConvolutionParams p;
  p.group = 2;
  p.pad = {2, 2};
  auto y = PF::convolution(x, 16, {5, 5}, params["conv1"], p);
  EXPECT_EQ(y->shape(), (Shape{4, 16, 12, 12}));
  auto list = params.parameters();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, "conv1/conv/W");
  EXPECT_EQ(list[1].first, "conv1/conv/b");
  EXPECT_EQ(list[0].second->shape(), (Shape{16, 3, 5, 5}));
  EXPECT_EQ(list[1].second->shape(), (Shape{16}));
  const float limit = std::sqrt(6.0f / (3 * 25 + 16 * 25));
  const float* w = list[0].second->data()->get<const float>();
  float biggest = 0;
  for (int64_t i = 0; i < list[0].second->size(); ++i) {
    biggest = std::max(biggest, std::fabs(w[i]));
  }
  EXPECT_LE(biggest, limit);
  EXPECT_GT(biggest, 0.8f * limit);
  const float* b = list[1].second->data()->get<const float>();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(b[i], 0.0f);
  // Reused on a second call; without bias only W.
  PF::convolution(x, 16, {5, 5}, params["conv1"], p);
  EXPECT_EQ(params.parameters().size(), 2u);
  parametric_functions::ConvolutionParams nb;
  nb.with_bias = false;
  PF::convolution(x, 8, {3, 3}, params["conv2"], nb);
  EXPECT_EQ(params["conv2"].parameters().size(), 1u);
}

// The layer's own checks, made before it creates W and b.
TEST(ParametricConvolution, BadInputs) {
  ParameterScope params;
  expect_error(
      [&] {
        PF::convolution(nullptr, 4, {3, 3}, params["c"]);
      },
      {"x is a null variable"}, kTag);
  parametric_functions::ConvolutionParams p;
  p.base_axis = 3;
  expect_error(
      [&] {
        PF::convolution(make_variable({2, 3, 8, 8}), 4, {3, 3}, params["c"], p);
      },
      {"base_axis 3 must be in [0, 2] for x with shape (2, 3, 8, 8)"}, kTag);
  expect_error(
      [&] {
        PF::convolution(make_variable({2, 3, 8, 8}), 0, {3, 3}, params["c"]);
      },
      {"outmaps must be positive, got 0"}, kTag);
  p = {};
  p.group = 2;
  expect_error(
      [&] {
        PF::convolution(make_variable({2, 3, 8, 8}), 4, {3, 3}, params["c"], p);
      },
      {"x with shape (2, 3, 8, 8) has 3 channels, which group 2 does not "
       "divide"},
      kTag);
  for (const Shape& kernel : {Shape{3}, Shape{0, 3}, Shape{3, -1}}) {
    expect_error(
        [&] {
          PF::convolution(make_variable({2, 3, 8, 8}), 4, kernel, params["c"]);
        },
        {"kernel " + shape_str(kernel) +
         " must have 2 positive sizes, one per spatial axis of x with shape "
         "(2, 3, 8, 8) and base_axis 1"},
        kTag);
  }
  EXPECT_EQ(params.size(), 0u);
}

TEST(ParametricConvolution, TutorialShapes) {
  ParameterScope params;
  auto x = make_variable({64, 1, 28, 28});
  auto h = PF::convolution(x, 16, {5, 5}, params["conv1"]);
  EXPECT_EQ(h->shape(), (Shape{64, 16, 24, 24}));
  h = F::max_pooling(h, {2, 2});
  EXPECT_EQ(h->shape(), (Shape{64, 16, 12, 12}));
}

// 576 products in [0, 1) per output (C = 64, 3x3; sums near 144, where an
// fp16 accumulator's spacing is 0.125): against double.
const bool kConvolutionLong = harness::add(
    decl::Convolution,
    {{"576-term sums",
      [] {
        FunctionCheck c = conv_check({1, 64, 4, 4}, {2, 64, 3, 3}, false, {});
        for (auto& in : c.inputs) in.low = 0.0f;
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3;
        c.bf16_rtol = 1e-2;
        c.check_grad = false;
        return c;
      },
      /*long_sum=*/true}});

// NNabla's whole argument list (functions.yaml's defaults for a 2-D x)
// loads, as does the list left out; channel_last=true is refused by name.
TEST(Convolution, NNablasArgumentListLoadsAndChannelLastIsRefused) {
  auto x = variable_from({1, 1, 2, 3}, {1, 2, 3, 4, 6, 9});
  auto w = variable_from({1, 1, 1, 2}, {1, -1});
  FunctionArgs args = {{"base_axis", int64_t{1}},
                       {"pad", std::vector<int64_t>{0, 0}},
                       {"stride", std::vector<int64_t>{1, 1}},
                       {"dilation", std::vector<int64_t>{1, 1}},
                       {"group", int64_t{1}},
                       {"channel_last", false}};
  for (const FunctionArgs& a : {args, FunctionArgs{}}) {
    auto y = apply_from_args("Convolution", a, {x, w});
    EXPECT_EQ(y[0]->shape(), (Shape{1, 1, 2, 2}));
    EXPECT_EQ(to_doubles(y[0]), (Doubles{-1, -1, -2, -3}));
  }
  args.back().second = true;
  expect_error(
      [&] {
        apply_from_args("Convolution", args, {x, w});
      },
      {"channel_last=true is not supported"}, "[convolution] ");
}

}  // namespace
}  // namespace mg::test::convolution_tests
