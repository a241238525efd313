// One rule for parameter grads, the same for every parametric function: the
// grad of an fp32 master weight is fp32 under half and bfloat16; activation
// grads stay in the storage type (so a genuine fp16 overflow still shows).
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"

namespace mg::test::parameter_grads_tests {
namespace {

using Layer = std::function<VariablePtr(const VariablePtr&, ParameterScope)>;

struct Parametric {
  const char* name;
  Shape x_shape;
  bool integer_input;  // ids (Embed)
  Layer layer;
};

std::vector<Parametric> every_parametric_function() {
  return {
      {"affine",
       {4, 6},
       false,
       [](auto x, auto s) { return PF::affine(x, 3, s); }},
      {"convolution",
       {2, 3, 5, 5},
       false,
       [](auto x, auto s) {
         return PF::convolution(x, 4, {3, 3}, s);
       }},
      {"deconvolution",
       {2, 3, 4, 4},
       false,
       [](auto x, auto s) {
         return PF::deconvolution(x, 2, {3, 3}, s);
       }},
      {"batch_normalization",
       {4, 3, 2, 2},
       false,
       [](auto x, auto s) { return PF::batch_normalization(x, s); }},
      {"layer_normalization",
       {4, 6},
       false,
       [](auto x, auto s) { return PF::layer_normalization(x, s); }},
      {"group_normalization",
       {2, 4, 3, 3},
       false,
       [](auto x, auto s) { return PF::group_normalization(x, 2, s); }},
      {"instance_normalization",
       {2, 3, 4},
       false,
       [](auto x, auto s) { return PF::instance_normalization(x, s); }},
      {"embed",
       {2, 3},
       true,
       [](auto x, auto s) { return PF::embed(x, 5, 4, s); }},
      {"prelu (a slope per channel)",
       {2, 3, 4},
       false,
       [](auto x, auto s) { return PF::prelu(x, s, 1, /*shared=*/false); }},
      {"prelu (one shared slope)",
       {2, 3, 4},
       false,
       [](auto x, auto s) { return PF::prelu(x, s); }},
  };
}

TEST(ParameterGrads, AnFp32MasterGetsAnFp32GradInEveryParametricFunction) {
  for (const char* type : {"half", "bfloat16"}) {
    for (const auto& p : every_parametric_function()) {
      SCOPED_TRACE(std::string(p.name) + " in " + type);
      ContextGuard g(context("cpu", type));
      ParameterScope params;
      std::vector<float> values(shape_size(p.x_shape));
      for (size_t i = 0; i < values.size(); ++i) {
        values[i] = p.integer_input ? static_cast<float>(i % 5)
                                    : 0.1f * static_cast<float>(i % 7) - 0.3f;
      }
      auto x = variable_from(p.x_shape, values, !p.integer_input);
      auto y = p.layer(x, params["layer"]);
      y->forward();
      y->backward();
      int checked = 0;
      for (const auto& [name, v] : params.parameters()) {
        if (!v->need_grad()) continue;  // BN's running statistics
        SCOPED_TRACE(name);
        ASSERT_EQ(v->data()->array().dtype(), Dtype::f32);
        EXPECT_EQ(v->grad()->array().dtype(), Dtype::f32);
        for (double d : grad_doubles(v)) ASSERT_TRUE(std::isfinite(d));
        ++checked;
      }
      EXPECT_GT(checked, 0);
      if (!p.integer_input) {
        // The activation's grad stays in the storage type.
        EXPECT_EQ(x->grad()->array().dtype(),
                  std::string(type) == "half" ? Dtype::f16 : Dtype::bf16);
      }
    }
  }
}

// beta's grad sums dy over N*H*W = 65536 positions: 65536 overflows fp16
// (max 65504) but is exact in fp32, so a correct step is not skipped.
TEST(ParameterGrads, BatchNormBetaGradBeyondTheHalfRangeStaysFinite) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope params;
  std::vector<float> v(64 * 32 * 32);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 9) - 4;
  auto x = variable_from({64, 1, 32, 32}, v, true);
  auto y = PF::batch_normalization(x, params["bn"]);
  y->forward();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(params.get("bn/bn/beta")), (Doubles{65536}));
}

// An activation grad that overflows fp16 is still inf: the loss scaler must
// see a genuine overflow.
TEST(ParameterGrads, AnActivationGradThatOverflowsHalfIsStillInf) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(x, 1000.0f);
  y->forward();
  y->backward(100.0f);  // dx = 100,000 > 65504
  for (double d : grad_doubles(x)) EXPECT_TRUE(std::isinf(d));
}

// The loss and the seed are fp32, so a scale of 2^20 applies in half where
// the grads themselves fit: with a batch of 128 the logits' grads are at
// most 2^20 / 128 = 8192. The unscaled grads match float's.
TEST(ParameterGrads, ALossScaleOf2To20AppliesOnASmallNetInHalf) {
  auto grads = [](const char* type, float scale) {
    ContextGuard g(context("cpu", type));
    ParameterScope params;
    seed(7);
    std::vector<float> xv(128 * 6), tv(128);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.05f * (i % 11) - 0.25f;
    for (size_t i = 0; i < tv.size(); ++i) tv[i] = static_cast<float>(i % 4);
    auto x = variable_from({128, 6}, xv);
    auto t = variable_from({128, 1}, tv);
    auto h = F::relu(PF::affine(x, 5, params["fc1"]));
    auto loss =
        F::mean(F::softmax_cross_entropy(PF::affine(h, 4, params["fc2"]), t));
    loss->forward();
    EXPECT_EQ(loss->data()->array().dtype(), Dtype::f32);
    loss->backward(scale);
    Doubles all;
    for (const auto& [name, v] : params.parameters()) {
      for (double d : grad_doubles(v)) all.push_back(d / scale);
    }
    return all;
  };
  const Doubles want = grads("float", 1.0f);
  const Doubles got = grads("half", 1048576.0f);
  for (double d : got) ASSERT_TRUE(std::isfinite(d));
  expect_near(got, want, 2e-3, 2e-2, "half grads at a scale of 2^20");
}

}  // namespace
}  // namespace mg::test::parameter_grads_tests
