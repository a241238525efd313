// FusedBatchNormalization: against BatchNormalization, Add2 and ReLU in
// double through the checker, bit for bit against the three functions in
// float, the running statistics, the layer, errors.
#include <gtest/gtest.h>

#include <cmath>

#include <mixgraph/contexts/cpu/cpu_features.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::fused_batch_normalization_tests {
namespace {

// relu(bn(x) + z) for x (n0, c, n2), in double.
Doubles fused_bn_ref(const std::vector<Doubles>& in, int64_t n0, int64_t C,
                     int64_t n2, bool batch_stat, bool with_z) {
  Doubles mean(C, 0), var(C, 0);
  const double m = double(n0 * n2);
  auto at = [&](int64_t i, int64_t c, int64_t j) {
    return (i * C + c) * n2 + j;
  };
  if (batch_stat) {
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < n2; ++j) mean[c] += in[0][at(i, c, j)] / m;
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < n2; ++j) {
          const double d = in[0][at(i, c, j)] - mean[c];
          var[c] += d * d / m;
        }
  } else {
    mean = in[3], var = in[4];
  }
  Doubles y(in[0].size());
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < n2; ++j) {
        const int64_t k = at(i, c, j);
        double h = (in[0][k] - mean[c]) / std::sqrt(var[c] + 1e-5) * in[2][c] +
                   in[1][c];
        if (with_z) h += in[5][k];
        y[k] = h > 0 ? h : 0;
      }
  return y;
}

harness::Case fused_case(const std::string& label, bool batch_stat,
                         bool with_z) {
  return {label, [=] {
            FunctionCheck c;
            const Shape xs{4, 3, 2, 2}, ps{1, 3, 1, 1};
            c.inputs = {{xs, -2.0f, 2.0f},
                        {ps, -1.0f, 1.0f},
                        {ps, 0.5f, 1.5f},
                        {ps, -1.0f, 1.0f, false},
                        {ps, 0.5f, 1.5f, false}};
            if (with_z) c.inputs.push_back({xs, -1.0f, 1.0f});
            c.build = [=](const std::vector<VariablePtr>& in) {
              FusedBatchNormalizationOptions o;
              o.batch_stat = batch_stat;
              return F::fused_batch_normalization(in[0], in[1], in[2], in[3],
                                                  in[4],
                                                  with_z ? in[5] : nullptr, o);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return fused_bn_ref(in, 4, 3, 4, batch_stat, with_z);
            };
            // BatchNormalization's tolerances (its test explains them).
            c.half_atol = c.half_rtol = 2e-3;
            c.bf16_atol = c.bf16_rtol = 1.6e-2;
            return c;
          }};
}

const bool kFusedBatchNormalization =
    harness::add(decl::FusedBatchNormalization,
                 {fused_case("training with z", true, true),
                  fused_case("training without z", true, false),
                  fused_case("inference with z", false, true)});

// The same graph as BatchNormalization, Add2 and ReLU: outputs, grads and
// running statistics bit for bit in float.
TEST(FusedBatchNormalization, EqualsBatchNormalizationAdd2AndReLU) {
  const Shape xs{5, 2, 3}, ps{1, 2, 1};
  FunctionCheck c;
  c.inputs = {{xs, -2.0f, 2.0f}, {ps}, {ps, 0.5f, 1.5f}, {xs}};
  const auto values = input_values(c);
  auto make = [&](const Shape& s, const std::vector<float>& v) {
    return variable_from(s, v, true);
  };
  for (bool batch_stat : {true, false}) {
    SCOPED_TRACE(batch_stat ? "training" : "inference");
    auto x1 = make(xs, values[0]), b1 = make(ps, values[1]),
         g1 = make(ps, values[2]), z1 = make(xs, values[3]);
    auto x2 = make(xs, values[0]), b2 = make(ps, values[1]),
         g2 = make(ps, values[2]), z2 = make(xs, values[3]);
    auto m1 = variable_from(ps, {0.5f, -0.5f}),
         v1 = variable_from(ps, {1.5f, 0.75f});
    auto m2 = variable_from(ps, {0.5f, -0.5f}),
         v2 = variable_from(ps, {1.5f, 0.75f});
    FusedBatchNormalizationOptions fo;
    fo.batch_stat = batch_stat;
    BatchNormalizationOptions bo;
    bo.batch_stat = batch_stat;
    auto y1 = F::fused_batch_normalization(x1, b1, g1, m1, v1, z1, fo);
    auto y2 =
        F::relu(F::add2(F::batch_normalization(x2, b2, g2, m2, v2, bo), z2));
    auto l1 = F::sum(F::mul2(y1, y1)), l2 = F::sum(F::mul2(y2, y2));
    l1->forward();
    l2->forward();
    EXPECT_EQ(to_doubles(y1), to_doubles(y2));
    EXPECT_EQ(to_doubles(m1), to_doubles(m2));
    EXPECT_EQ(to_doubles(v1), to_doubles(v2));
    for (auto& v : {x1, b1, g1, z1, x2, b2, g2, z2}) v->grad()->zero();
    l1->backward(1.0f);
    l2->backward(1.0f);
    EXPECT_EQ(grad_doubles(x1), grad_doubles(x2));
    EXPECT_EQ(grad_doubles(b1), grad_doubles(b2));
    EXPECT_EQ(grad_doubles(g1), grad_doubles(g2));
    EXPECT_EQ(grad_doubles(z1), grad_doubles(z2));
  }
}

// z may be x itself: its grad is then BatchNormalization's dx plus the
// ReLU's grad, as relu(add2(bn(x), x)) has it (the engine asks the second
// use to add). With x held channel-blocked too (AVX-512), where the fused
// layer's backward falls back to its plain passes.
TEST(FusedBatchNormalization, ZMayBeX) {
  const Shape xs{2, 32, 3, 2}, ps{1, 32, 1, 1};
  FunctionCheck c;
  c.inputs = {{xs, -2.0f, 2.0f}, {ps}, {ps, 0.5f, 1.5f}};
  const auto values = input_values(c);
  for (bool blocked : {false, true}) {
    if (blocked && !cpu::cpu_features().avx512f) continue;
    SCOPED_TRACE(blocked ? "x held blocked" : "plain");
    auto run = [&](bool fused) {
      auto x = variable_from(xs, values[0], true);
      if (blocked)
        x->data()->array().cast(Dtype::f32, Layout{16, 2, 32, 6}, false);
      auto b = variable_from(ps, values[1], true);
      auto g = variable_from(ps, values[2], true);
      auto m = variable_from(ps, std::vector<float>(32, 0.0f));
      auto v = variable_from(ps, std::vector<float>(32, 1.0f));
      auto y = fused
                   ? F::fused_batch_normalization(x, b, g, m, v, x)
                   : F::relu(F::add2(F::batch_normalization(x, b, g, m, v), x));
      auto loss = F::sum(F::mul2(y, y));
      loss->forward();
      loss->backward(1.0f);
      return std::vector<Doubles>{to_doubles(y), grad_doubles(x),
                                  grad_doubles(b), grad_doubles(g)};
    };
    const auto fused = run(true), apart = run(false);
    const char* names[] = {"y", "dx", "dbeta", "dgamma"};
    for (int i = 0; i < 4; ++i) {
      expect_near(fused[i], apart[i], 1e-5, 1e-5, names[i]);
    }
  }
}

// The ReLU's grad reaches z where y > 0, in every type: half and bfloat16
// compare y's bits (cpu/batch_normalization.cpp), which must agree with an
// fp32 compare at +inf, the smallest subnormal, 0 and -0. x is constant,
// so bn(x) is beta (0) and y = relu(z). z also feeds Sum, so its grad is
// accumulated as well as written: 1 from Sum plus the ReLU's 0 or 1.
TEST(FusedBatchNormalization, ReluGradAtTheEdgesInEveryType) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard g(context("cpu", type));
    const float tiny = std::string(type) == "half"       ? 0x1p-24f
                       : std::string(type) == "bfloat16" ? 0x1p-133f
                                                         : 0x1p-149f;
    const std::vector<float> z_values{INFINITY, tiny, 0.0f,  -0.0f,
                                      -3.0f,    1.5f, -tiny, -INFINITY};
    auto x = variable_from({8, 1}, std::vector<float>(8, 0.25f), true);
    auto z = variable_from({8, 1}, z_values, true);
    ParameterScope scope;
    auto y = PF::fused_batch_normalization(x, z, scope);
    auto loss = F::add2(F::sum(y), F::sum(z));
    loss->forward();
    z->grad()->zero();
    loss->backward(1.0f);
    EXPECT_EQ(grad_doubles(z), (Doubles{2, 2, 1, 1, 1, 2, 1, 1}));
  }
}

TEST(FusedBatchNormalization, TheLayerSharesBatchNormalizationsParameters) {
  ParameterScope scope;
  auto x = make_variable({4, 3});
  auto y = PF::fused_batch_normalization(x, nullptr, scope);
  for (const char* name : {"beta", "gamma", "mean", "var"}) {
    auto p = scope["bn"].get(name);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->shape(), (Shape{1, 3}));
  }
  EXPECT_FALSE(scope["bn"].get("mean")->need_grad());
  EXPECT_TRUE(scope["bn"].get("beta")->need_grad());
}

TEST(FusedBatchNormalization, Errors) {
  const Shape xs{4, 3}, ps{1, 3};
  auto p = [&] { return make_variable(ps); };
  expect_error(
      [&] {
        FusedBatchNormalizationOptions o;
        o.nonlinearity = "tanh";
        F::fused_batch_normalization(make_variable(xs), p(), p(), p(), p(),
                                     nullptr, o);
      },
      {"[fused_batch_normalization] nonlinearity 'tanh' is not one of "
       "('relu')"});
  expect_error(
      [&] {
        F::fused_batch_normalization(make_variable(xs), p(), p(), p(), p(),
                                     make_variable({4, 2}));
      },
      {"[fused_batch_normalization] z with shape (4, 2) must have x's shape "
       "(4, 3)"});
  expect_error(
      [&] {
        F::fused_batch_normalization(make_variable(xs), make_variable({3}), p(),
                                     p(), p());
      },
      {"[fused_batch_normalization] beta with shape (3,) must have shape (1, "
       "3)"});
}

}  // namespace
}  // namespace mg::test::fused_batch_normalization_tests
