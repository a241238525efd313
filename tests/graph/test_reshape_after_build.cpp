// A graph whose input is reshaped after it was built (a new batch size):
// forward sets the functions up again, backward refuses stale sizes, and a
// function that cannot take the new shapes says so.
#include <gtest/gtest.h>

#include <random>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(rng);
  return v;
}

void fill(const VariablePtr& v, const std::vector<float>& values) {
  float* p = v->data()->cast<float>(true);
  std::copy(values.begin(), values.end(), p);
}

// Affine + ReLU + Affine + Softmax, and a loss whose grads are not zero.
struct Mlp {
  VariablePtr x, probs, loss;
};

Mlp build_mlp(const VariablePtr& x, ParameterScope& params) {
  auto h = F::relu(PF::affine(x, 16, params["fc1"]));
  auto probs = F::softmax(PF::affine(h, 3, params["fc2"]));
  auto loss = F::mean(F::mul2(probs, probs));
  return {x, probs, loss};
}

Doubles param_grads(ParameterScope& params) {
  Doubles all;
  for (const auto& [name, v] : params.parameters()) {
    Doubles g = grad_doubles(v);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

void zero_grads(ParameterScope& params) {
  for (const auto& [name, v] : params.parameters()) v->grad()->zero();
}

TEST(ReshapeAfterBuild, ForwardAndBackwardFollowANewBatchSize) {
  ParameterScope params;
  Mlp net = build_mlp(make_variable({128, 4}, true), params);
  fill(net.x, random_values(128 * 4, 1));
  net.loss->forward();
  ASSERT_EQ(net.probs->shape(), (Shape{128, 3}));

  for (int64_t batch : {1, 256, 7}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const auto values = random_values(batch * 4, static_cast<uint32_t>(batch));
    net.x->reshape({batch, 4});
    fill(net.x, values);
    net.x->grad()->zero();
    zero_grads(params);
    net.loss->forward();
    net.loss->backward();
    EXPECT_EQ(net.probs->shape(), (Shape{batch, 3}));
    const Doubles probs = to_doubles(net.probs);
    const Doubles grads = param_grads(params);
    const Doubles x_grad = grad_doubles(net.x);

    // The same network built fresh at this batch size, on the same weights.
    Mlp fresh = build_mlp(make_variable({batch, 4}, true), params);
    fill(fresh.x, values);
    zero_grads(params);
    fresh.loss->forward();
    fresh.loss->backward();
    EXPECT_EQ(probs, to_doubles(fresh.probs));
    EXPECT_EQ(to_doubles(net.loss), to_doubles(fresh.loss));
    EXPECT_EQ(grads, param_grads(params));
    EXPECT_EQ(x_grad, grad_doubles(fresh.x));
  }
}

TEST(ReshapeAfterBuild, ClearBufferRunsAfterANewBatchSize) {
  ParameterScope params;
  Mlp net = build_mlp(make_variable({128, 4}, true), params);
  net.loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
  net.loss->backward(1.0f, /*clear_buffer=*/true);
  const auto values = random_values(2 * 4, 5);
  net.x->reshape({2, 4});
  fill(net.x, values);
  zero_grads(params);
  net.loss->forward(false, true);
  net.loss->backward(1.0f, true);
  const Doubles grads = param_grads(params);

  Mlp fresh = build_mlp(make_variable({2, 4}, true), params);
  fill(fresh.x, values);
  zero_grads(params);
  fresh.loss->forward();
  fresh.loss->backward();
  EXPECT_EQ(grads, param_grads(params));
}

TEST(ReshapeAfterBuild, ALeafWhoseDataAloneIsReshapedGetsAGradOfItsShape) {
  ParameterScope params;
  Mlp net = build_mlp(make_variable({8, 4}, true), params);
  net.loss->forward();
  net.x->data()->reshape({32, 4});  // the grad still has shape (8, 4)
  net.loss->forward();
  net.loss->backward();
  EXPECT_EQ(net.x->grad()->shape(), (Shape{32, 4}));
}

TEST(ReshapeAfterBuild, BackwardBeforeForwardOnNewShapesIsAnError) {
  ParameterScope params;
  Mlp net = build_mlp(make_variable({128, 4}, true), params);
  net.loss->forward();
  net.x->reshape({1, 4});
  expect_error([&] { net.loss->backward(); },
               {"Affine", "(128, 4)", "(1, 4)", "run forward()"},
               "[backward] ");
}

TEST(ReshapeAfterBuild, AFunctionThatCannotTakeTheNewShapesNamesBoth) {
  auto x = make_variable({128, 4});
  auto y = F::mean(F::reshape(x, {512}));
  y->forward();
  x->reshape({1, 4});
  expect_error([&] { y->forward(); },
               {"was set up for inputs of shapes (128, 4)",
                "now have shapes (1, 4)", "512"},
               "[reshape] ");
  // Nothing stale is left behind: the old shape runs again.
  x->reshape({128, 4});
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0}));
}

TEST(ReshapeAfterBuild, AnOutputReshapedByHandIsSetUpAgain) {
  auto x = variable_from({2, 2}, {1, 2, 3, 4});
  auto h = F::relu(x);
  auto y = F::sum(h);
  h->reshape({1, 1});  // Relu would write 4 elements into 1
  y->forward();
  EXPECT_EQ(h->shape(), (Shape{2, 2}));
  EXPECT_EQ(to_doubles(y), (Doubles{10}));
}

}  // namespace
}  // namespace mg::test
