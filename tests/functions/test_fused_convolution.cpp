// FusedConvolution: against a double reference of pad, convolution, batch
// normalization, add and activation through the checker; bit for bit the
// unfused graph of our functions (values, grads, running statistics) in
// float and half; NNabla's count rule for the optional inputs; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::fused_convolution_tests {
namespace {

// A 2-D case: x (n, c, h, w), weight (oc, c, k, k), symmetric pad (zero or
// reflect), stride; optional bias, batch normalization (training or not),
// z and activation.
struct Fused2d {
  int64_t n = 2, c = 2, h = 4, w = 4, oc = 3, k = 3, pad = 1, stride = 1;
  std::string pad_mode = "constant";
  bool bias = false, bn = false, batch_stat = true, z = false;
  std::string act = "relu";
  float alpha = 0.0f;
  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
  Shape y_shape() const { return {n, oc, oh(), ow()}; }
  Shape p_shape() const { return {1, oc, 1, 1}; }
};

Doubles fused_ref(const std::vector<Doubles>& in, const Fused2d& f) {
  const Doubles &x = in[0], &wt = in[1];
  int next = 2;
  const Doubles* b = f.bias ? &in[next++] : nullptr;
  const Doubles* bn = f.bn ? &in[next] : nullptr;
  if (f.bn) next += 4;
  const Doubles* z = f.z ? &in[next] : nullptr;
  auto src = [&](int64_t i, int64_t size) -> int64_t {
    if (i >= 0 && i < size) return i;
    if (f.pad_mode == "reflect") return i < 0 ? -i : 2 * (size - 1) - i;
    return -1;
  };
  const int64_t OH = f.oh(), OW = f.ow(), S = OH * OW;
  Doubles y(f.n * f.oc * S, 0.0);
  for (int64_t n = 0; n < f.n; ++n)
    for (int64_t o = 0; o < f.oc; ++o)
      for (int64_t p = 0; p < OH; ++p)
        for (int64_t q = 0; q < OW; ++q) {
          double s = b ? (*b)[o] : 0.0;
          for (int64_t c = 0; c < f.c; ++c)
            for (int64_t a = 0; a < f.k; ++a)
              for (int64_t e = 0; e < f.k; ++e) {
                const int64_t i = src(p * f.stride - f.pad + a, f.h),
                              j = src(q * f.stride - f.pad + e, f.w);
                if (i < 0 || j < 0) continue;
                s += x[((n * f.c + c) * f.h + i) * f.w + j] *
                     wt[((o * f.c + c) * f.k + a) * f.k + e];
              }
          y[(n * f.oc + o) * S + p * OW + q] = s;
        }
  if (bn) {
    const Doubles &beta = bn[0], &gamma = bn[1], &rm = bn[2], &rv = bn[3];
    for (int64_t o = 0; o < f.oc; ++o) {
      double mean = rm[o], var = rv[o];
      if (f.batch_stat) {
        mean = var = 0;
        for (int64_t n = 0; n < f.n; ++n)
          for (int64_t s = 0; s < S; ++s) mean += y[(n * f.oc + o) * S + s];
        mean /= double(f.n * S);
        for (int64_t n = 0; n < f.n; ++n)
          for (int64_t s = 0; s < S; ++s) {
            const double d = y[(n * f.oc + o) * S + s] - mean;
            var += d * d;
          }
        var /= double(f.n * S);
      }
      for (int64_t n = 0; n < f.n; ++n)
        for (int64_t s = 0; s < S; ++s) {
          double& v = y[(n * f.oc + o) * S + s];
          v = (v - mean) / std::sqrt(var + 1e-5) * gamma[o] + beta[o];
        }
    }
  }
  for (size_t i = 0; i < y.size(); ++i) {
    double v = y[i] + (z ? (*z)[i] : 0.0);
    if (f.act == "relu") v = v > 0 ? v : 0;
    if (f.act == "tanh") v = std::tanh(v);
    if (f.act == "leaky_relu") v = v > 0 ? v : f.alpha * v;
    y[i] = v;
  }
  return y;
}

FusedConvolutionOptions options_of(const Fused2d& f) {
  FusedConvolutionOptions o;
  o.pad = {f.pad, f.pad};
  o.stride = {f.stride, f.stride};
  o.pad_mode = f.pad_mode;
  o.batch_stat = f.batch_stat;
  o.nonlinearity = f.act;
  if (f.act == "leaky_relu" || f.act == "elu") o.nonlinearity_args = {f.alpha};
  return o;
}

std::vector<InputSpec> inputs_of(const Fused2d& f) {
  std::vector<InputSpec> in{{{f.n, f.c, f.h, f.w}}, {{f.oc, f.c, f.k, f.k}}};
  if (f.bias) in.push_back({{f.oc}});
  if (f.bn) {
    const Shape p = f.p_shape();
    in.push_back({p, -1.0f, 1.0f});
    in.push_back({p, 0.5f, 1.5f});
    in.push_back({p, -1.0f, 1.0f, false});
    in.push_back({p, 0.5f, 1.5f, false});
  }
  if (f.z) in.push_back({f.y_shape()});
  return in;
}

// The builder through F::fused_convolution with nulls where f has none.
VariablePtr build_fused(const std::vector<VariablePtr>& in, const Fused2d& f) {
  int next = 2;
  VariablePtr b, be, g, m, v, z;
  if (f.bias) b = in[next++];
  if (f.bn)
    be = in[next], g = in[next + 1], m = in[next + 2], v = in[next + 3],
    next += 4;
  if (f.z) z = in[next];
  return F::fused_convolution(in[0], in[1], b, be, g, m, v, z, options_of(f));
}

harness::Case fused_case(const std::string& label, const Fused2d& f) {
  harness::Case k{label, [f] {
                    FunctionCheck c;
                    c.inputs = inputs_of(f);
                    c.build = [f](const std::vector<VariablePtr>& in) {
                      return build_fused(in, f);
                    };
                    c.reference = [f](const std::vector<Doubles>& in) {
                      return fused_ref(in, f);
                    };
                    // An output sums 18 products, then batch normalization: the
                    // reduced types' roundings of inputs, of the convolution's
                    // output and of y, each a few units of 2^-11 (half) or
                    // 2^-8.
                    c.half_atol = c.half_rtol = 5e-3;
                    c.bf16_atol = c.bf16_rtol = 4e-2;
                    return c;
                  }};
  // x and z: the ports are named by NNabla's full list, so z at another
  // position would be taken for a parameter.
  k.batch_inputs = {0};
  if (f.z) k.batch_inputs.push_back(static_cast<int>(inputs_of(f).size()) - 1);
  return k;
}

Fused2d conv_bn_relu() {
  Fused2d f;
  f.bn = true;
  return f;
}
Fused2d bias_reflect_z_tanh() {
  Fused2d f;
  f.bias = true, f.z = true, f.pad_mode = "reflect", f.act = "tanh";
  return f;
}
Fused2d strided_z_identity() {
  Fused2d f;
  f.h = f.w = 5, f.pad = 0, f.stride = 2, f.z = true, f.act = "identity";
  return f;
}
Fused2d bn_inference_z_leaky() {
  Fused2d f;
  f.bn = true, f.batch_stat = false, f.z = true, f.act = "leaky_relu";
  f.alpha = 0.2f;
  return f;
}

const bool kFusedConvolution = harness::add(
    decl::FusedConvolution,
    {fused_case("conv pad 1, bn, relu (6 inputs)", conv_bn_relu()),
     fused_case("bias, reflect pad through Pad, z, tanh (4 inputs)",
                bias_reflect_z_tanh()),
     fused_case("stride 2, z, identity (3 inputs)", strided_z_identity()),
     fused_case("bn inference, z, leaky_relu 0.2 (7 inputs)",
                bn_inference_z_leaky())});

// The unfused graph of our functions, as NNabla's composite defines it.
VariablePtr build_unfused(const std::vector<VariablePtr>& in,
                          const Fused2d& f) {
  int next = 2;
  VariablePtr h = in[0];
  ConvolutionOptions co;
  co.pad = {f.pad, f.pad};
  co.stride = {f.stride, f.stride};
  if (f.pad_mode != "constant") {
    h = F::pad(h, {int(f.pad), int(f.pad), int(f.pad), int(f.pad)}, f.pad_mode);
    co.pad = {0, 0};
  }
  VariablePtr b = f.bias ? in[next++] : nullptr;
  h = F::convolution(h, in[1], b, co);
  if (f.bn) {
    BatchNormalizationOptions bo;
    bo.batch_stat = f.batch_stat;
    h = F::batch_normalization(h, in[next], in[next + 1], in[next + 2],
                               in[next + 3], bo);
    next += 4;
  }
  if (f.z) h = F::add2(h, in[next]);
  if (f.act == "relu") h = F::relu(h);
  if (f.act == "tanh") h = F::tanh(h);
  if (f.act == "leaky_relu") h = F::leaky_relu(h, f.alpha);
  if (f.act == "elu") h = F::elu(h, f.alpha);
  if (f.act == "sigmoid") h = F::sigmoid(h);
  if (f.act == "relu6") h = F::relu6(h);
  return h;
}

// Three inputs with a 1-D third: the bias (NNabla's count rule).
Fused2d bias_elu() {
  Fused2d f;
  f.bias = true, f.act = "elu", f.alpha = 0.5f;
  return f;
}
Fused2d bn_sigmoid() {
  Fused2d f;
  f.bn = true, f.act = "sigmoid";
  return f;
}
Fused2d z_relu6() {
  Fused2d f;
  f.z = true, f.act = "relu6";
  return f;
}

TEST(FusedConvolution, EqualsTheUnfusedGraphBitForBit) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    for (const Fused2d& f :
         {conv_bn_relu(), bias_reflect_z_tanh(), strided_z_identity(),
          bn_inference_z_leaky(), bias_elu(), bn_sigmoid(), z_relu6()}) {
      SCOPED_TRACE(std::string(type) + " " + f.act);
      ContextGuard guard(context("cpu", type));
      FunctionCheck c;
      c.inputs = inputs_of(f);
      const auto values = input_values(c);
      std::vector<VariablePtr> a, b;
      for (size_t i = 0; i < values.size(); ++i) {
        a.push_back(
            variable_from(c.inputs[i].shape, values[i], c.inputs[i].need_grad));
        b.push_back(
            variable_from(c.inputs[i].shape, values[i], c.inputs[i].need_grad));
      }
      auto ya = build_fused(a, f), yb = build_unfused(b, f);
      auto la = F::sum(F::mul2(ya, ya)), lb = F::sum(F::mul2(yb, yb));
      la->forward();
      lb->forward();
      EXPECT_EQ(to_doubles(ya), to_doubles(yb));
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(to_doubles(a[i]), to_doubles(b[i])) << "input " << i;
        if (!c.inputs[i].need_grad) continue;
        a[i]->grad()->zero();
        b[i]->grad()->zero();
      }
      la->backward(1.0f);
      lb->backward(1.0f);
      for (size_t i = 0; i < a.size(); ++i) {
        if (!c.inputs[i].need_grad) continue;
        EXPECT_EQ(grad_doubles(a[i]), grad_doubles(b[i])) << "grad " << i;
      }
    }
  }
}

// NNabla's count rule decides which port each input is on; what reads the
// ports (the inference conversion, ONNX export, check_finite's messages)
// asks the function.
TEST(FusedConvolution, InputsAreOnThePortsTheirCountSays) {
  auto x = [] { return make_variable({2, 2, 4, 4}); };
  auto w = [] { return make_variable({3, 2, 3, 3}); };
  auto p = [] { return make_variable({1, 3, 1, 1}); };
  auto b = [] { return make_variable({3}); };
  auto z = [] { return make_variable({2, 3, 4, 4}); };
  FusedConvolutionOptions o;
  o.pad = {1, 1};
  auto names = [](const VariablePtr& y) {
    const Function& fn = y->parent()->function();
    std::vector<std::string> got;
    for (size_t i = 0; i < y->parent()->inputs().size(); ++i)
      got.push_back(fn.input_decl(static_cast<int>(i)).name);
    return got;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names(F::fused_convolution(x(), w(), nullptr, p(), p(), p(), p(),
                                       nullptr, o)),
            (Names{"x", "weight", "beta", "gamma", "mean", "variance"}));
  EXPECT_EQ(names(F::fused_convolution(x(), w(), nullptr, p(), p(), p(), p(),
                                       z(), o)),
            (Names{"x", "weight", "beta", "gamma", "mean", "variance", "z"}));
  EXPECT_EQ(names(F::fused_convolution(x(), w(), b(), nullptr, nullptr, nullptr,
                                       nullptr, z(), o)),
            (Names{"x", "weight", "bias", "z"}));
  EXPECT_EQ(names(F::fused_convolution(x(), w(), nullptr, nullptr, nullptr,
                                       nullptr, nullptr, z(), o)),
            (Names{"x", "weight", "z"}));
  EXPECT_EQ(names(F::fused_convolution(x(), w(), b(), nullptr, nullptr, nullptr,
                                       nullptr, nullptr, o)),
            (Names{"x", "weight", "bias"}));
  auto y =
      F::fused_convolution(x(), w(), nullptr, p(), p(), p(), p(), nullptr, o);
  EXPECT_EQ(y->parent()->function().input_decl(4).kind,
            Port::float32);  // the running mean
}

TEST(FusedConvolution, Errors) {
  auto x = [] { return make_variable({2, 2, 4, 4}); };
  auto w = [] { return make_variable({3, 2, 3, 3}); };
  auto p = [] { return make_variable({1, 3, 1, 1}); };
  const std::string tag = "[fused_convolution] ";
  expect_error(
      [&] {
        F::fused_convolution(x(), w(), nullptr, p(), p(), nullptr, nullptr,
                             nullptr);
      },
      {tag + "beta, gamma, mean and variance are given together or not at "
             "all, but 2 of them were given"});
  expect_error(
      [&] {
        F::fused_convolution(x(), w(), make_variable({3}), p(), p(), p(), p(),
                             nullptr);
      },
      {tag + "bias and batch normalization cannot be given together"});
  expect_error(
      [&] {
        FusedConvolutionOptions o;
        o.channel_last = true;
        F::fused_convolution(x(), w(), nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, o);
      },
      {tag + "channel_last is not supported"});
  expect_error(
      [&] {
        FusedConvolutionOptions o;
        o.pad = {1, 1, 1};
        F::fused_convolution(x(), w(), nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, o);
      },
      {tag + "pad has 3 values, but x with shape (2, 2, 4, 4) and base_axis "
             "1 has 2 spatial axes: give 2 or 4"});
  expect_error(
      [&] {
        FusedConvolutionOptions o;
        o.nonlinearity = "softplus";
        F::fused_convolution(x(), w(), nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, o);
      },
      {tag + "nonlinearity 'softplus' is not one of"});
  expect_error(
      [&] {
        FusedConvolutionOptions o;
        o.nonlinearity = "elu";
        F::fused_convolution(x(), w(), nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, o);
      },
      {tag + "nonlinearity 'elu' takes 1 nonlinearity_args, but got 0"});
  expect_error(
      [&] {
        F::fused_convolution(x(), w(), nullptr, nullptr, nullptr, nullptr,
                             nullptr, make_variable({2, 3, 3, 3}));
      },
      {tag + "z with shape (2, 3, 3, 3) must have the convolution's output "
             "shape (2, 3, 2, 2)"});
  expect_error(
      [&] {
        F::fused_convolution(x(), make_variable({3, 4, 3, 3}), nullptr, nullptr,
                             nullptr, nullptr, nullptr, nullptr);
      },
      {tag + "its Convolution stage: [convolution] "});
}

}  // namespace
}  // namespace mg::test::fused_convolution_tests
