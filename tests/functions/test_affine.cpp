#include <gtest/gtest.h>

#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/solvers/sgd.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::affine_tests {
namespace {

// y[n, m] = sum_k x[n, k] W[k, m] + b[m].
Doubles affine_ref(const std::vector<Doubles>& in, int64_t n, int64_t k,
                   int64_t m) {
  Doubles y(n * m);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double s = in.size() > 2 ? in[2][j] : 0.0;
      for (int64_t l = 0; l < k; ++l) s += in[0][i * k + l] * in[1][l * m + j];
      y[i * m + j] = s;
    }
  }
  return y;
}

const bool kAffineWithBias = harness::add(
    decl::Affine, {{"with bias", [] {
                      FunctionCheck c;
                      c.inputs = {{{4, 2, 3}}, {{6, 5}}, {{5}}};
                      c.build = [](const std::vector<VariablePtr>& in) {
                        return F::affine(in[0], in[1], in[2]);
                      };
                      c.reference = [](const std::vector<Doubles>& in) {
                        return affine_ref(in, 4, 6, 5);
                      };
                      return c;
                    }}});

const bool kAffineWithoutBiasAndBaseAxis2 = harness::add(
    decl::Affine, {{"without bias and base axis2", [] {
                      FunctionCheck c;
                      c.inputs = {{{2, 3, 4}}, {{4, 2, 3}}};
                      c.build = [](const std::vector<VariablePtr>& in) {
                        return F::affine(in[0], in[1], nullptr,
                                         AffineOptions{2});
                      };
                      c.reference = [](const std::vector<Doubles>& in) {
                        return affine_ref(in, 6, 4, 6);
                      };
                      return c;
                    }}});

TEST(Affine, OutputShapeKeepsBatchAxesAndWeightOutputAxes) {
  auto y = F::affine(make_variable({2, 3, 4}), make_variable({4, 2, 3}),
                     nullptr, AffineOptions{2});
  EXPECT_EQ(y->shape(), (Shape{2, 3, 2, 3}));
}

TEST(Affine, FeatureMismatchNamesShapes) {
  try {
    F::affine(make_variable({64, 10}), make_variable({20, 5}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[affine] x with shape (64, 10) and base_axis 1 has 10 "
                 "features, but W with shape (20, 5) expects 20");
  }
}

TEST(Affine, BiasShapeMismatch) {
  try {
    F::affine(make_variable({2, 4}), make_variable({4, 5}), make_variable({4}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("b with shape (4,)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Affine, WrongNumberOfInputs) {
  auto x = make_variable({2, 4});
  try {
    apply_function1(decl::Affine, AffineOptions{}, {x});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[affine] takes 2 to 3 inputs, but got 1 with shapes (2, 4)");
  }
}

TEST(ParametricAffine, CreatesGlorotWeightsOnceAndReusesThem) {
  ParameterScope params;
  auto x = make_variable({8, 12});
  auto y1 = PF::affine(x, 7, params["fc"]);
  auto y2 = PF::affine(x, 7, params["fc"]);
  auto list = params.parameters();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, "fc/affine/W");  // NNabla's name
  EXPECT_EQ(list[1].first, "fc/affine/b");
  EXPECT_EQ(list[0].second->shape(), (Shape{12, 7}));
  EXPECT_TRUE(list[0].second->need_grad());
  EXPECT_TRUE(list[0].second->persistent());
  const float limit = std::sqrt(6.0f / (12 + 7));
  const float* w = list[0].second->data()->get<const float>();
  float biggest = 0;
  for (int i = 0; i < 12 * 7; ++i) {
    EXPECT_LE(std::fabs(w[i]), limit);
    biggest = std::max(biggest, std::fabs(w[i]));
  }
  // Zeros or a constant inside the limit would pass the bound alone (the
  // statistics: tests/graph/test_initializer_statistics.cpp).
  EXPECT_GT(biggest, 0.8f * limit);
  EXPECT_NE(w[0], w[1]);
  EXPECT_EQ(y1->shape(), y2->shape());
}

// In a half pass on a CPU without fp16 arithmetic the products run in fp32:
// fp32 data (the input fed in fp32, W's master copy) is read as it is, with
// no half copy made, and the grads of W and b are written in fp32, where
// the solver reads them. Values on a 1/8 grid keep every sum exact.
TEST(Affine, HalfReadsFloatDataAsItIsAndWritesFloatWeightGrads) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2, 3}, {0.5f, -1, 2, 1.5f, 0.25f, -0.75f});
  auto w = variable_from({3, 2}, {1, -0.5f, 0.125f, 2, -1, 0.25f}, true);
  auto b = variable_from({2}, {0.5f, -0.25f}, true);
  auto y = F::affine(x, w, b);
  y->forward();
  y->backward(2.0f);
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f16);
  EXPECT_EQ(to_doubles(y), (Doubles{-1.125, -2, 2.78125, -0.6875}));
  EXPECT_FALSE(x->data()->array().has_copy(Dtype::f16));
  EXPECT_FALSE(w->data()->array().has_copy(Dtype::f16));
  EXPECT_EQ(w->grad()->array().dtype(), Dtype::f32);
  EXPECT_EQ(b->grad()->array().dtype(), Dtype::f32);
  // dW = x^T dy with dy = 2 everywhere; db = the column sums of dy.
  EXPECT_EQ(grad_doubles(w), (Doubles{4, 4, -1.5, -1.5, 2.5, 2.5}));
  EXPECT_EQ(grad_doubles(b), (Doubles{4, 4}));
}

// In half, W's fp32 grad comes from our own product (gemm_converts_operands),
// which watched every value it wrote: a finite grad is marked so, and the
// loss scaler's check skips it; one with an inf (x fed an inf) is not, and
// the check finds the inf. Accumulated into (W used twice), the sum is
// what is watched.
TEST(Affine, HalfMarksAWeightGradItSawFinite) {
  if (!cpu::gemm_converts_operands()) GTEST_SKIP() << "no product of ours";
  ContextGuard g(context("cpu", "half"));
  for (const bool twice : {false, true}) {
    SCOPED_TRACE(twice ? "W used twice" : "W used once");
    // W of 40 x 70: whole tiles of C and columns past the last.
    auto x = variable_from({16, 40}, std::vector<float>(16 * 40, 0.5f));
    auto w = variable_from({40, 70}, std::vector<float>(40 * 70, 0.25f), true);
    auto y = F::affine(x, w);
    if (twice) y = F::add2(y, F::affine(F::mul_scalar(x, 2.0f), w));
    auto solver = solvers::Sgd(1.0f);
    solver->set_parameters({{"w", w}});
    y->forward();
    w->grad()->zero();
    y->backward();
    EXPECT_TRUE(w->grad()->array().known_finite());
    EXPECT_FALSE(solver->check_inf_or_nan_grad());
    x->data()->cast<float>()[13 * 40 + 7] =
        std::numeric_limits<float>::infinity();
    y->forward();
    w->grad()->zero();
    y->backward();
    EXPECT_FALSE(w->grad()->array().known_finite());
    EXPECT_TRUE(solver->check_inf_or_nan_grad());
  }
}

// A W computed in half (not held in fp32) keeps a half grad.
TEST(Affine, HalfWeightComputedInHalfGetsAHalfGrad) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({1, 2}, {1, 2});
  auto w0 = variable_from({2, 1}, {3, 4}, true);
  auto w = F::mul_scalar(w0, 1.0f);
  auto y = F::affine(x, w);
  y->forward();
  y->backward();
  EXPECT_EQ(to_doubles(y), (Doubles{11}));
  EXPECT_EQ(w->grad()->array().dtype(), Dtype::f16);
  EXPECT_EQ(grad_doubles(w0), (Doubles{1, 2}));
}

TEST(ParametricAffine, ExistingParameterWithOtherShapeIsAnError) {
  ParameterScope params;
  PF::affine(make_variable({8, 12}), 7, params["fc"]);
  EXPECT_THROW(PF::affine(make_variable({8, 12}), 6, params["fc"]),
               std::invalid_argument);
}

// 2048 products in [0, 1) per output (sums near 512, where an fp16
// accumulator's spacing is 0.5): against double in half and bfloat16.
const bool kAffineLong = harness::add(
    decl::Affine,
    {{"2048-term sums",
      [] {
        FunctionCheck c;
        c.inputs = {{{2, 2048}, 0.0f, 1.0f}, {{2048, 3}, 0.0f, 1.0f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::affine(in[0], in[1], nullptr);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y(6, 0.0);
          for (int n = 0; n < 2; ++n)
            for (int o = 0; o < 3; ++o)
              for (int k = 0; k < 2048; ++k)
                y[n * 3 + o] += in[0][n * 2048 + k] * in[1][k * 3 + o];
          return y;
        };
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3;
        c.bf16_rtol = 1e-2;
        c.check_grad = false;
        return c;
      },
      /*long_sum=*/true}});

}  // namespace
}  // namespace mg::test::affine_tests
