// The quantization layers: QuantizeLinear, DequantizeLinear, MinMaxQuantize,
// BinaryConnect/BinaryWeight/INQ Affine and Convolution. Values against
// double references; the straight-through grads (which finite differences
// cannot see) and the state written into the inputs checked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::quantize_layers_tests {
namespace {

// ---------------------------------------------------------------------------
// QuantizeLinear, DequantizeLinear

// (4j + 1) / 64: exact in half and bfloat16; divided by a power of two no
// value lands on a tie.
std::vector<float> grid_values(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back((4.0f * (i * 5 % 63 - 31) + 1) / 64);
  return v;
}

double round_ref(double v, bool even) {
  if (!even) return std::round(v);
  const double t = std::round(v);
  return std::abs(v - t) == 0.5 ? 2 * std::round(v / 2) : t;
}

// x (2, 3, 4), scale (1, 3, 1), zero_point (1, 1, 1) or (1, 3, 1).
harness::Case quantize_linear_case(const std::string& label,
                                   QuantizeLinearOptions o,
                                   std::vector<float> x,
                                   std::vector<float> scale,
                                   std::vector<float> zp) {
  return {
      label,
      [=] {
        FunctionCheck c;
        const Shape zs = zp.size() == 1 ? Shape{1, 1, 1} : Shape{1, 3, 1};
        c.inputs = {InputSpec::fixed({2, 3, 4}, x, true),
                    InputSpec::fixed({1, 3, 1}, scale),
                    InputSpec::fixed(zs, zp)};
        c.build = [o](const std::vector<VariablePtr>& in) {
          return F::quantize_linear(in[0], in[1], in[2], o);
        };
        c.reference = [o, zs](const std::vector<Doubles>& in) {
          const bool even = o.round_mode == "HALF_TO_EVEN";
          const double lo = o.dtype == 1 ? (o.narrow_range ? -127 : -128)
                                         : (o.narrow_range ? 1 : 0);
          const double hi = o.dtype == 1 ? 127 : 255;
          auto sat = [&](double v) { return std::min(hi, std::max(lo, v)); };
          Doubles y(in[0].size());
          for (size_t i = 0; i < y.size(); ++i) {
            const size_t ch = (i / 4) % 3;
            const double z = sat(round_ref(in[2][zs[1] == 1 ? 0 : ch], even));
            y[i] = sat(round_ref(in[0][i] / in[1][ch], even) + z);
          }
          return y;
        };
        c.check_grad = false;  // straight through: checked below
        c.half_atol = c.bf16_atol = 0;
        c.half_rtol = c.bf16_rtol = 0;
        return c;
      },
      false,
      true,
      {0}};
}

const bool kQuantizeLinear = harness::add(
    decl::QuantizeLinear,
    {quantize_linear_case("int8, away from zero, saturating", {},
                          grid_values(24), {1.0f / 64, 0.5f, 1}, {3.4f}),
     quantize_linear_case(
         "uint8 narrow, to even, ties", {"HALF_TO_EVEN", true, 2},
         {-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f,  0,     1,  2, 3, 4,
          5,     6.5f,  7.5f, 8.5f, 9.5f, 10,   11,   12.5f, 13.5f, 14, 15},
         {1, 1, 0.5f}, {0.5f, 2.5f, 1.5f})});

const bool kDequantizeLinear =
    harness::add(decl::DequantizeLinear,
                 {{"x (2, 3, 4), scale and zero_point per channel",
                   [] {
                     FunctionCheck c;
                     c.inputs = {InputSpec({2, 3, 4}, -8.0f, 8.0f),
                                 InputSpec({1, 3, 1}, 0.1f, 1.0f, false),
                                 InputSpec({1, 3, 1}, -3.0f, 3.0f, false)};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::dequantize_linear(in[0], in[1], in[2]);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y(in[0].size());
                       for (size_t i = 0; i < y.size(); ++i) {
                         const size_t ch = (i / 4) % 3;
                         y[i] = (in[0][i] - in[2][ch]) * in[1][ch];
                       }
                       return y;
                     };
                     return c;
                   },
                   false,
                   true,
                   {0}}});

TEST(QuantizeLinear, OnnxExampleAndStraightThroughGrad) {
  // ONNX's QuantizeLinear example: x / 2 + 128 onto uint8.
  auto x = variable_from({6}, {0, 2, 3, 1000, -254, -1000}, true);
  auto y =
      F::quantize_linear(x, variable_from({1}, {2}), variable_from({1}, {128}),
                         {"HALF_TO_EVEN", false, 2});
  auto loss = F::sum(F::mul_scalar(y, 3.0f));
  loss->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{128, 129, 130, 255, 1, 0}));
  x->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{1.5, 1.5, 1.5, 1.5, 1.5, 1.5}));
  // Away from zero 1.5 -> 2 (130 + 1 at 3 / 2), int8 saturates at 127.
  auto z = F::quantize_linear(variable_from({3}, {3, 300, -300}),
                              variable_from({1}, {2}), variable_from({1}, {0}));
  z->forward();
  EXPECT_EQ(to_doubles(z), (Doubles{2, 127, -128}));
}

TEST(QuantizeLinear, IntegerLevelsExactInHalfAndBfloat16) {
  for (const char* t : {"half", "bfloat16"}) {
    ContextGuard g(context("cpu", t));
    auto y = F::quantize_linear(
        variable_from({3}, {253, 254, 255}), variable_from({1}, {1}),
        variable_from({1}, {0}), {"HALF_AWAY_FROM_ZERO", false, 2});
    y->forward();
    EXPECT_EQ(to_doubles(y), (Doubles{253, 254, 255})) << t;
  }
}

TEST(DequantizeLinear, OnnxExample) {
  auto y =
      F::dequantize_linear(variable_from({4}, {0, 3, 128, 255}),
                           variable_from({1}, {2}), variable_from({1}, {128}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{-256, -250, 0, 254}));
}

TEST(QuantizeLinear, BadArguments) {
  auto x = make_variable({2, 3});
  expect_error(
      [&] {
        F::quantize_linear(x, make_variable({1, 2}), make_variable({1, 1}));
      },
      {"[quantize_linear] scale with shape (1, 2) must have the rank of x "
       "(2, 3) and each axis 1 or x's"});
  expect_error(
      [&] {
        F::dequantize_linear(x, make_variable({1, 1}), make_variable({3}));
      },
      {"[dequantize_linear] zero_point with shape (3,)"});
  expect_error(
      [&] {
        F::quantize_linear(x, make_variable({1, 1}), make_variable({1, 1}),
                           {"UP", false, 1});
      },
      {"[quantize_linear] round_mode \"UP\" must be"});
  expect_error(
      [&] {
        F::quantize_linear(x, make_variable({1, 1}), make_variable({1, 1}),
                           {"HALF_TO_EVEN", false, 5});
      },
      {"[quantize_linear] dtype 5 must be 1 (int8) or 2 (uint8)"});
}

// ---------------------------------------------------------------------------
// MinMaxQuantize

// NNabla's forward in double, for ranges per column of x (n, c).
Doubles min_max_ref(const Doubles& x, Doubles qmin, Doubles qmax,
                    const Doubles& lmin, const Doubles& lmax, size_t c,
                    bool x_min_max) {
  if (x_min_max) {
    for (size_t k = 0; k < c; ++k) qmin[k] = INFINITY, qmax[k] = -INFINITY;
    for (size_t i = 0; i < x.size(); ++i) {
      qmin[i % c] = std::min(qmin[i % c], x[i]);
      qmax[i % c] = std::max(qmax[i % c], x[i]);
    }
  }
  Doubles y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t k = i % c;
    const double hi0 = std::max(qmax[k], qmin[k] + 0.01);
    const double s = (hi0 - qmin[k]) / (lmax[k] - lmin[k]);
    const double zf = lmin[k] - qmin[k] / s;
    const double zp = zf <= lmin[k]   ? lmin[k]
                      : zf >= lmax[k] ? lmax[k]
                                      : std::round(zf);
    const double lo = (lmin[k] - zp) * s, hi = (lmax[k] - zp) * s;
    y[i] = std::round((std::min(std::max(x[i], lo), hi) - lo) / s) * s + lo;
  }
  return y;
}

harness::Case min_max_case(const std::string& label, bool x_min_max) {
  return {label,
          [=] {
            FunctionCheck c;
            c.inputs = {InputSpec({4, 3}, -2.0f, 2.0f),
                        InputSpec::fixed({1, 3}, {-1, -0.5f, -2}),
                        InputSpec::fixed({1, 3}, {1.2f, 1.5f, 0.5f}),
                        InputSpec::fixed({1, 3}, {0, 0, 0}),
                        InputSpec::fixed({1, 3}, {255, 15, 255})};
            MinMaxQuantizeOptions o;
            o.x_min_max = x_min_max;
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::min_max_quantize(in[0], in[1], in[2], in[3], in[4], o);
            };
            c.reference = [x_min_max](const std::vector<Doubles>& in) {
              return min_max_ref(in[0], in[1], in[2], in[3], in[4], 3,
                                 x_min_max);
            };
            c.check_grad = false;  // straight through: checked below
            // Half and bfloat16 round x, which can move it one step (the
            // finest step here is 2 / 255).
            c.half_atol = 1.5e-2;
            c.bf16_atol = 5e-2;
            return c;
          },
          false,
          true,
          {0}};
}

const bool kMinMaxQuantize = harness::add(
    decl::MinMaxQuantize, {min_max_case("given ranges", false),
                           min_max_case("ranges from x's min and max", true)});

TEST(MinMaxQuantize, HandComputedValuesAndGrads) {
  // Range [-0.3, 0.7] on 0..10: scale 0.1, zero point 3, no nudge needed.
  auto x = variable_from({1, 5}, {-1, -0.26f, 0.04f, 0.66f, 2}, true);
  auto qmin = variable_from({1, 1}, {-0.3f}, true);
  auto qmax = variable_from({1, 1}, {0.7f}, true);
  auto y = F::min_max_quantize(x, qmin, qmax, variable_from({1, 1}, {0}),
                               variable_from({1, 1}, {10}));
  auto loss = F::sum(F::mul_scalar(y, 2.0f));
  loss->forward();
  const Doubles v = to_doubles(y);
  const Doubles want{-0.3, -0.3, 0.0, 0.7, 0.7};
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-6);
  // -0.26 -> -0.3 (x - m = 0.04, 0.4 steps -> 0), 0.04 -> 0 (3.4 -> 3).
  x->grad()->zero();
  qmin->grad()->zero();
  qmax->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 2, 2, 2, 0}));  // fine grained
  EXPECT_EQ(grad_doubles(qmin), (Doubles{2}));           // x < m once
  EXPECT_EQ(grad_doubles(qmax), (Doubles{2}));           // x > M once
}

TEST(MinMaxQuantize, CoarseStraightThroughPassesEveryGrad) {
  auto x = variable_from({1, 3}, {-1, 0.2f, 2}, true);
  auto qmin = variable_from({1, 1}, {-0.3f}, true);
  auto qmax = variable_from({1, 1}, {0.7f}, true);
  MinMaxQuantizeOptions o;
  o.ste_fine_grained = false;
  auto y = F::min_max_quantize(x, qmin, qmax, variable_from({1, 1}, {0}),
                               variable_from({1, 1}, {10}), o);
  y->forward();
  x->grad()->zero();
  qmin->grad()->zero();
  qmax->grad()->zero();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{1, 1, 1}));
  EXPECT_EQ(grad_doubles(qmin), (Doubles{1}));
  EXPECT_EQ(grad_doubles(qmax), (Doubles{1}));
}

TEST(MinMaxQuantize, EmaAndXMinMaxWriteTheRanges) {
  auto x = variable_from({2, 2}, {-1, 3, 1, -2});
  auto qmin = variable_from({1, 2}, {0, 0});
  auto qmax = variable_from({1, 2}, {1, 1});
  MinMaxQuantizeOptions o;
  o.x_min_max = true;
  o.ema = true;
  o.decay = 0.5f;
  auto y = F::min_max_quantize(x, qmin, qmax, variable_from({1, 2}, {0, 0}),
                               variable_from({1, 2}, {255, 255}), o);
  y->forward();
  EXPECT_EQ(to_doubles(qmin), (Doubles{-0.5, -1}));
  EXPECT_EQ(to_doubles(qmax), (Doubles{1, 2}));
  y->forward();
  EXPECT_EQ(to_doubles(qmin), (Doubles{-0.75, -1.5}));
  EXPECT_EQ(to_doubles(qmax), (Doubles{1, 2.5}));
  // A range narrower than eps is widened in place.
  auto qmax2 = variable_from({1}, {0.001f});
  auto z = F::min_max_quantize(
      variable_from({3}, {0, 1, 2}), variable_from({1}, {0}), qmax2,
      variable_from({1}, {0}), variable_from({1}, {255}));
  z->forward();
  EXPECT_NEAR(to_doubles(qmax2)[0], 0.01, 1e-7);
}

TEST(MinMaxQuantize, BadShapes) {
  auto x = make_variable({4, 3});
  auto p = [] { return make_variable({1, 3}); };
  expect_error(
      [&] {
        F::min_max_quantize(x, make_variable({1, 2}), p(), p(), p());
      },
      {"[min_max_quantize] qr_min, qr_max, ql_min and ql_max must share one "
       "shape: qr_min has (1, 2), ql_min (1, 3)"});
  expect_error(
      [&] {
        auto q = [] { return make_variable({2, 1}); };
        F::min_max_quantize(x, q(), q(), q(), q());
      },
      {"[min_max_quantize] ql_min with shape (2, 1) must have the rank of x"});
  expect_error(
      [&] {
        MinMaxQuantizeOptions o;
        o.x_min_max = true;
        F::min_max_quantize(x, F::identity(p()), p(), p(), p(), o);
      },
      {"[min_max_quantize] qr_min is the output of Identity"});
}

// ---------------------------------------------------------------------------
// The binary and INQ layers

double sgn(double w) { return w > 0 ? 1 : (w < 0 ? -1 : 1); }

// y = x W + b in double, x (n, k), W (k, m).
Doubles affine_ref(const Doubles& x, const Doubles& w, const Doubles* b,
                   int64_t k, int64_t m) {
  const int64_t n = static_cast<int64_t>(x.size()) / k;
  Doubles y(n * m);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = b ? (*b)[j] : 0.0;
      for (int64_t q = 0; q < k; ++q) s += x[i * k + q] * w[q * m + j];
      y[i * m + j] = s;
    }
  return y;
}

// 2-D convolution with padding, stride, dilation and groups, in double.
struct Conv2 {
  std::array<int64_t, 2> pad{1, 1}, stride{1, 1}, dil{1, 1};
  int64_t group = 1;
};

Doubles conv2_ref(const Doubles& x, const Doubles& w, const Doubles* b,
                  const Shape& xs, const Shape& ws, const Conv2& o) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], oc = ws[0],
                cg = ws[1], kh = ws[2], kw = ws[3], og = oc / o.group;
  const int64_t oh =
      (h + 2 * o.pad[0] - (o.dil[0] * (kh - 1) + 1)) / o.stride[0] + 1;
  const int64_t ow =
      (wd + 2 * o.pad[1] - (o.dil[1] * (kw - 1) + 1)) / o.stride[1] + 1;
  Doubles y(n * oc * oh * ow);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t f = 0; f < oc; ++f)
      for (int64_t p = 0; p < oh; ++p)
        for (int64_t q = 0; q < ow; ++q) {
          double s = b ? (*b)[f] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t r = p * o.stride[0] - o.pad[0] + a * o.dil[0];
                const int64_t t = q * o.stride[1] - o.pad[1] + e * o.dil[1];
                if (r < 0 || r >= h || t < 0 || t >= wd) continue;
                const int64_t ch = (f / og) * cg + ci;
                s += x[((i * c + ch) * h + r) * wd + t] *
                     w[((f * cg + ci) * kh + a) * kw + e];
              }
          y[((i * oc + f) * oh + p) * ow + q] = s;
        }
  return y;
}

// sign(w), scaled by the mean magnitude per output when `scaled` (per column
// of an affine weight, per row `conv`).
Doubles quantized_weight(const Doubles& w, int64_t rows, bool scaled,
                         bool conv) {
  const int64_t cols = static_cast<int64_t>(w.size()) / rows;
  Doubles alpha(conv ? rows : cols, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      alpha[conv ? r : c] += std::abs(w[r * cols + c]) / (conv ? cols : rows);
  Doubles q(w.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      q[r * cols + c] =
          sgn(w[r * cols + c]) * (scaled ? alpha[conv ? r : c] : 1.0);
  return q;
}

enum class Kind { bicon, bwn, inq };

// x (2, 5) or (2, 2, 4, 4); the weight without grad for the binary layers
// (its straight-through grad is checked by hand), with it for INQ (its
// indicator all 0: the plain layer).
// `other_options`: the affine layers with every argument off its default
// (the YAML round trip carries them; none changes these values: no weight
// is 0 and no INQ count is reached).
harness::Case layer_case(Kind kind, bool conv, bool other_options = false) {
  return {
      conv ? (other_options ? "x (2, 4, 6, 6), W (4, 2, 3, 3), group 2, pad "
                              "(1, 2), stride (2, 1), dilation (1, 2)"
                            : "x (2, 2, 4, 4), W (3, 2, 3, 3), pad 1, bias")
           : (other_options ? "x (2, 5), W (5, 3), bias, other arguments"
                            : "x (2, 5), W (5, 3), bias"),
      [=] {
        FunctionCheck c;
        const bool big = conv && other_options;
        const Shape xs =
            big ? Shape{2, 4, 6, 6} : (conv ? Shape{2, 2, 4, 4} : Shape{2, 5});
        const Shape ws =
            big ? Shape{4, 2, 3, 3} : (conv ? Shape{3, 2, 3, 3} : Shape{5, 3});
        Conv2 geo;
        if (big) geo = {{1, 2}, {2, 1}, {1, 2}, 2};
        const int64_t oc = conv ? ws[0] : ws[1];
        const int64_t n = shape_size(ws);
        c.inputs = {InputSpec(xs),
                    InputSpec(ws, -1.0f, 1.0f, kind == Kind::inq)};
        c.inputs.push_back(InputSpec::fixed(ws, std::vector<float>(n, 0.0f)));
        if (kind == Kind::bwn) {
          c.inputs.push_back(
              InputSpec::fixed({oc}, std::vector<float>(oc, 0.0f)));
        }
        c.inputs.push_back(InputSpec({oc}));
        c.build = [=](const std::vector<VariablePtr>& in) {
          const VariablePtr& b = in.back();
          if (conv) {
            auto set = [&](auto& o) {
              o.pad = {geo.pad[0], geo.pad[1]};
              if (big) {
                o.stride = {geo.stride[0], geo.stride[1]};
                o.dilation = {geo.dil[0], geo.dil[1]};
                o.group = static_cast<int>(geo.group);
              }
            };
            switch (kind) {
              case Kind::bicon: {
                BinaryConnectConvolutionOptions o;
                set(o);
                return F::binary_connect_convolution(in[0], in[1], in[2], b, o);
              }
              case Kind::bwn: {
                BinaryWeightConvolutionOptions o;
                set(o);
                return F::binary_weight_convolution(in[0], in[1], in[2], in[3],
                                                    b, o);
              }
              default: {
                INQConvolutionOptions o;
                set(o);
                return F::inq_convolution(in[0], in[1], in[2], b, o);
              }
            }
          }
          BinaryConnectAffineOptions bo;
          BinaryWeightAffineOptions wo;
          INQAffineOptions io;
          if (other_options) {
            bo.quantize_zero_to = wo.quantize_zero_to = -1;
            io.num_bits = 6;
            io.inq_iterations = {100000, 200000};
            io.selection_algorithm = "random";
            io.seed = 3;
          }
          switch (kind) {
            case Kind::bicon:
              return F::binary_connect_affine(in[0], in[1], in[2], b, bo);
            case Kind::bwn:
              return F::binary_weight_affine(in[0], in[1], in[2], in[3], b, wo);
            default:
              return F::inq_affine(in[0], in[1], in[2], b, io);
          }
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          const Doubles w =
              kind == Kind::inq
                  ? in[1]
                  : quantized_weight(in[1], ws[0], kind == Kind::bwn, conv);
          return conv ? conv2_ref(in[0], w, &in.back(), xs, ws, geo)
                      : affine_ref(in[0], w, &in.back(), 5, 3);
        };
        return c;
      },
      false,
      true,
      {0}};
}

const bool kLayers =
    harness::add(decl::BinaryConnectAffine,
                 {layer_case(Kind::bicon, false),
                  layer_case(Kind::bicon, false, true)}) &&
    harness::add(
        decl::BinaryConnectConvolution,
        {layer_case(Kind::bicon, true), layer_case(Kind::bicon, true, true)}) &&
    harness::add(
        decl::BinaryWeightAffine,
        {layer_case(Kind::bwn, false), layer_case(Kind::bwn, false, true)}) &&
    harness::add(
        decl::BinaryWeightConvolution,
        {layer_case(Kind::bwn, true), layer_case(Kind::bwn, true, true)}) &&
    harness::add(decl::INQAffine, {layer_case(Kind::inq, false),
                                   layer_case(Kind::inq, false, true)}) &&
    harness::add(decl::INQConvolution, {layer_case(Kind::inq, true),
                                        layer_case(Kind::inq, true, true)});

TEST(BinaryConnectAffine, WritesSignAndPassesTheGradStraightThrough) {
  auto x = variable_from({1, 2}, {1, 2}, true);
  auto w = variable_from({2, 2}, {0.3f, -0.2f, 0, -4}, true);
  auto wb = make_variable({2, 2});
  auto y = F::binary_connect_affine(x, w, wb);
  y->forward();
  EXPECT_EQ(to_doubles(wb), (Doubles{1, -1, 1, -1}));  // sign(0) = 1
  EXPECT_EQ(to_doubles(y), (Doubles{3, -3}));
  x->grad()->zero();
  w->grad()->zero();
  y->backward(1.0f);
  // dW = x^T dy whatever W's magnitude; dx = dy sign(W)^T.
  EXPECT_EQ(grad_doubles(w), (Doubles{1, 1, 2, 2}));
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 0}));
  BinaryConnectAffineOptions o;
  o.quantize_zero_to = -1;
  auto z = F::binary_connect_affine(x, w, wb, nullptr, o);
  z->forward();
  EXPECT_EQ(to_doubles(wb), (Doubles{1, -1, -1, -1}));
}

TEST(BinaryWeightAffine, AlphaIsTheMeanMagnitudePerOutput) {
  auto x = variable_from({1, 2}, {1, 2}, true);
  auto w = variable_from({2, 2}, {0.5f, -1, -1.5f, 2}, true);
  auto wb = make_variable({2, 2});
  auto alpha = make_variable({2});
  auto y = F::binary_weight_affine(x, w, wb, alpha);
  y->forward();
  EXPECT_EQ(to_doubles(wb), (Doubles{1, -1, -1, 1}));
  EXPECT_EQ(to_doubles(alpha), (Doubles{1, 1.5}));
  EXPECT_EQ(to_doubles(y), (Doubles{1 - 2, -1.5 + 3}));
  w->grad()->zero();
  x->grad()->zero();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(w), (Doubles{1, 1, 2, 2}));  // alpha not applied
}

TEST(BinaryWeightConvolution, AlphaPerOutputChannelAndStraightThroughGrad) {
  auto x = variable_from({1, 1, 1, 2}, {1, 2}, true);
  auto w = variable_from({2, 1, 1, 2}, {0.5f, -1, -3, -1}, true);
  auto wb = make_variable({2, 1, 1, 2});
  auto alpha = make_variable({2});
  auto y = F::binary_weight_convolution(x, w, wb, alpha);
  y->forward();
  EXPECT_EQ(to_doubles(alpha), (Doubles{0.75, 2}));
  EXPECT_EQ(to_doubles(y), (Doubles{0.75 * (1 - 2), 2 * (-1 - 2)}));
  w->grad()->zero();
  x->grad()->zero();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(w), (Doubles{1, 2, 1, 2}));
}

TEST(BinaryConnectConvolution, SignWeights) {
  auto x = variable_from({1, 1, 1, 3}, {1, 2, 4});
  auto w = variable_from({1, 1, 1, 2}, {0.1f, -7});
  auto wb = make_variable({1, 1, 1, 2});
  auto y = F::binary_connect_convolution(x, w, wb);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{-1, -2}));
  EXPECT_EQ(to_doubles(wb), (Doubles{1, -1}));
}

TEST(BinaryLayers, HalfKeepsAnFp32MasterAndWritesItsGradInFp32) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope scope;
  auto x = make_variable({2, 4});
  x->data()->fill(1.0);
  auto y = PF::binary_connect_affine(x, 3, scope);
  auto W = scope.get("bicon_affine/W");
  ASSERT_TRUE(W && scope.get("bicon_affine/Wb") && scope.get("bicon_affine/b"));
  EXPECT_FALSE(scope.get("bicon_affine/Wb")->need_grad());
  y->forward();
  W->grad()->zero();
  y->backward(1.0f);
  EXPECT_EQ(W->data()->array().dtype(), Dtype::f32);
  EXPECT_EQ(grad_doubles(W), Doubles(12, 2.0));
  auto z = PF::binary_weight_convolution(make_variable({1, 2, 5, 5}), 4, {3, 3},
                                         scope);
  EXPECT_EQ(z->shape(), (Shape{1, 4, 3, 3}));
  EXPECT_EQ(scope.get("bwn_conv/alpha")->shape(), (Shape{4}));
  EXPECT_EQ(PF::binary_connect_convolution(make_variable({1, 2, 5, 5}), 4,
                                           {3, 3}, scope)
                ->shape(),
            (Shape{1, 4, 3, 3}));
  EXPECT_EQ(PF::binary_weight_affine(x, 5, scope)->shape(), (Shape{2, 5}));
  EXPECT_EQ(PF::inq_affine(x, 5, scope)->shape(), (Shape{2, 5}));
  EXPECT_EQ(scope.get("inq_affine/I")->shape(), (Shape{4, 5}));
  EXPECT_EQ(PF::inq_convolution(make_variable({1, 2, 5, 5}), 4, {3, 3}, scope)
                ->shape(),
            (Shape{1, 4, 3, 3}));
}

TEST(BinaryLayers, BadShapes) {
  auto x = make_variable({2, 4});
  expect_error(
      [&] {
        F::binary_connect_affine(x, make_variable({4, 3}),
                                 make_variable({3, 4}));
      },
      {"[binary_connect_affine] binary_weight with shape (3, 4) must have "
       "weight's shape (4, 3)"});
  expect_error(
      [&] {
        F::binary_connect_affine(x, make_variable({5, 3}),
                                 make_variable({5, 3}));
      },
      {"[binary_connect_affine] [affine] x with shape (2, 4)"});
  expect_error(
      [&] {
        F::binary_weight_affine(x, make_variable({4, 3}), make_variable({4, 3}),
                                make_variable({2}));
      },
      {"[binary_weight_affine] alpha with shape (2,) must have 3 elements"});
  expect_error(
      [&] {
        F::binary_weight_convolution(
            make_variable({1, 2, 5, 5}), make_variable({4, 2, 3, 3}),
            make_variable({4, 2, 3, 3}), make_variable({3}));
      },
      {"[binary_weight_convolution] alpha with shape (3,) must have one "
       "element per output channel"});
  expect_error(
      [&] {
        auto w = make_variable({4, 3});
        F::binary_connect_affine(x, w, F::identity(make_variable({4, 3})));
      },
      {"[binary_connect_affine] binary_weight is the output of Identity"});
  expect_error(
      [&] {
        F::binary_connect_convolution(make_variable({1, 2, 5, 5}),
                                      make_variable({4, 3, 3, 3}),
                                      make_variable({4, 3, 3, 3}));
      },
      {"[binary_connect_convolution] [convolution]"});
}

// ---------------------------------------------------------------------------
// INQ

TEST(INQAffine, FixesHalfThenAllToPowersOfTwo) {
  // 8 weights, largest 0.9: n1 = round-ish log2(0.9) = 0, 4 bits: n2 = -3,
  // pruning below 2^-4.
  auto w = variable_from(
      {4, 2}, {0.9f, -0.3f, 0.05f, 0.2f, -0.6f, 0.13f, 0.02f, -0.7f}, true);
  auto ind = make_variable({4, 2});
  auto x = variable_from({1, 4}, {1, 0, 0, 0});
  INQAffineOptions o;
  o.inq_iterations = {1, 2};
  auto y = F::inq_affine(x, w, ind, nullptr, o);
  y->forward();  // count 0: nothing fixed
  EXPECT_EQ(to_doubles(ind), Doubles(8, 0.0));
  EXPECT_NEAR(to_doubles(w)[1], -0.3, 1e-7);
  y->forward();  // count 1: the 4 largest magnitudes fixed and quantized
  EXPECT_EQ(to_doubles(ind), (Doubles{1, 1, 0, 0, 1, 0, 0, 1}));
  const Doubles w1 = to_doubles(w);
  EXPECT_EQ(w1[0], 1.0);          // 0.9 -> 2^0
  EXPECT_EQ(w1[4], -0.5);         // 0.6 -> 2^-1 (log2 0.6 = -0.74, frac 0.26)
  EXPECT_EQ(w1[7], -0.5);         // 0.7: frac of log2 = 0.49 < log2 1.5
  EXPECT_EQ(w1[1], -0.25);        // 0.3: frac of log2 = 0.26
  EXPECT_NEAR(w1[3], 0.2, 1e-7);  // still learnable
  EXPECT_EQ(to_doubles(y), (Doubles{1, -0.25}));
  // A solver's step on a fixed weight is undone at the next forward.
  w->data()->cast<float>()[0] = 5.0f;
  w->data()->cast<float>()[1] = 5.0f;
  y->forward();  // count 2, the last: all fixed
  EXPECT_EQ(to_doubles(ind), Doubles(8, 1.0));
  EXPECT_EQ(to_doubles(w), (Doubles{1, -0.25, 0, 0.25, -0.5, 0.125, 0, -0.5}));
}

TEST(INQAffine, RandomSelectionIsSeededAndIndicatorsMayBeInt32) {
  auto run = [](bool int32) {
    auto w = make_variable({10, 10});
    float* p = w->data()->cast<float>();
    for (int i = 0; i < 100; ++i) p[i] = (i % 13 - 6) / 8.0f;
    auto ind = make_variable({10, 10});
    if (int32) std::fill_n(ind->data()->cast<int32_t>(true), 100, 0);
    INQAffineOptions o;
    o.inq_iterations = {0, 5};
    o.selection_algorithm = "random";
    o.seed = 7;
    auto y = F::inq_affine(make_variable({1, 10}), w, ind, nullptr, o);
    y->forward();
    if (int32) {
      EXPECT_EQ(ind->data()->array().dtype(), Dtype::i32);
    }
    return to_doubles(ind);
  };
  const Doubles a = run(false), b = run(true);
  EXPECT_EQ(a, b);
  double fixed = 0;
  for (double v : a) fixed += v;
  EXPECT_GT(fixed, 20);
  EXPECT_LT(fixed, 80);
}

TEST(INQConvolution, AllFixedAtTheLastIteration) {
  auto w = variable_from({1, 1, 1, 3}, {0.9f, -0.3f, 0.01f});
  auto ind = make_variable({1, 1, 1, 3});
  INQConvolutionOptions o;
  o.inq_iterations = {0};
  o.num_bits = 3;  // n1 = 0, n2 = -1: levels 0, +-0.5, +-1
  auto y = F::inq_convolution(variable_from({1, 1, 1, 3}, {1, 1, 1}), w, ind,
                              nullptr, o);
  y->forward();
  EXPECT_EQ(to_doubles(w), (Doubles{1, -0.5, 0}));
  EXPECT_EQ(to_doubles(y), (Doubles{0.5}));
}

TEST(INQAffine, HalfQuantizesAnFp32MasterInFp32) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope scope;
  PF::QuantizedAffineParams p;
  p.inq_iterations = {0};
  p.w_init = constant_initializer(0.3001f);  // not a half
  auto x = make_variable({1, 2});
  x->data()->fill(1.0);
  auto y = PF::inq_affine(x, 2, scope, p);
  y->forward();
  auto W = scope.get("inq_affine/W");
  EXPECT_EQ(W->data()->array().dtype(), Dtype::f32);
  EXPECT_EQ(to_doubles(W), Doubles(4, 0.25));
  EXPECT_EQ(to_doubles(scope.get("inq_affine/I")), Doubles(4, 1.0));
  EXPECT_EQ(to_doubles(y), Doubles(2, 0.5));
}

TEST(INQAffine, BadArguments) {
  auto x = make_variable({2, 4});
  auto w = [] { return make_variable({4, 3}); };
  INQAffineOptions o;
  o.num_bits = 1;
  expect_error([&] { F::inq_affine(x, w(), w(), nullptr, o); },
               {"[inq_affine] num_bits 1 must be at least 2"});
  o.num_bits = 4;
  o.selection_algorithm = "smallest";
  expect_error([&] { F::inq_affine(x, w(), w(), nullptr, o); },
               {"[inq_affine] selection_algorithm \"smallest\" must be"});
  o.selection_algorithm = "random";
  o.inq_iterations = {3, 2};
  expect_error([&] { F::inq_affine(x, w(), w(), nullptr, o); },
               {"[inq_affine] inq_iterations must be increasing"});
  expect_error(
      [&] {
        INQAffineOptions all;
        all.inq_iterations = {0};
        auto ww = w();
        ww->data()->fill(0.3);
        F::inq_affine(x, F::identity(ww), w(), nullptr, all)->forward();
      },
      {"[inq_affine] weight is the output of Identity: forward writes its "
       "fixed weights, so it must be a leaf"});
  expect_error(
      [&] {
        F::inq_convolution(make_variable({1, 2, 5, 5}),
                           make_variable({4, 2, 3, 3}),
                           make_variable({4, 2, 3, 2}));
      },
      {"[inq_convolution] indicator_fixedweights with shape (4, 2, 3, 2) "
       "must have weight's shape (4, 2, 3, 3)"});
}

}  // namespace
}  // namespace mg::test::quantize_layers_tests
