// One short training run per type_config on Fashion-MNIST, end to end: the
// data loader, feed_images / feed_labels, an MLP, Adam (with the dynamic
// loss scaling updater in half and bfloat16), evaluate_error_rate on the
// 10,000 test images. Each must reach a stated accuracy floor. Skipped where
// dataset-fashion-mnist is not installed.
//
// Measured (300 steps of 64, seed 1; 2 shared cores, 0.5 to 1 s each):
//   float 81.64%, half 81.75%, bfloat16 81.50%; the floor is 78%, a margin
//   of 3.5 to 3.75 points. CTest labels them end_to_end (timeout 60 s each).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include <mixgraph/mixgraph.hpp>

namespace mg::test {
namespace {

// The floor: the measured accuracies less 3.5 points, so that a change of
// kernels or rounding passes and a broken type_config (chance is 10%; a
// half path that loses its grads stalls far lower) fails.
constexpr double kFloor = 78.0;
constexpr int kSteps = 300, kBatch = 64;

class EndToEnd : public ::testing::TestWithParam<std::string> {};

TEST_P(EndToEnd, AnMlpLearnsFashionMnistAboveTheFloor) {
  if (!fashion_mnist_available()) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  static const ImageDataset train = load_fashion_mnist("train");
  static const ImageDataset test = load_fashion_mnist("test");
  ContextGuard guard(context("cpu", GetParam()));
  seed(1);
  ParameterScope params;
  auto net = [&](const VariablePtr& x) {
    auto h = F::relu(PF::affine(x, 128, params["fc1"]));
    return PF::affine(h, 10, params["fc2"]);
  };
  auto x = make_variable({kBatch, 784});
  auto t = make_variable({kBatch, 1});
  auto loss = F::mean(F::softmax_cross_entropy(net(x), t));
  auto solver = solvers::Adam(1e-3f);
  solver->set_parameters(params.parameters());
  BatchIterator batches(train.size, kBatch, /*seed=*/1);
  auto feed = [&] {
    const auto& indices = batches.next();
    feed_images(train, indices, *x);
    feed_labels(train, indices, *t);
  };
  float last_loss = 0;
  if (GetParam() == "float") {
    for (int step = 0; step < kSteps; ++step) {
      feed();
      solver->zero_grad();
      loss->forward(false, true);
      loss->backward();
      solver->update();
      last_loss = loss->data()->get<const float>()[0];
    }
  } else {
    DynamicLossScalingUpdater updater(solver, loss, feed);
    for (int step = 0; step < kSteps; ++step) {
      updater.update();
      last_loss = loss->data()->get<const float>()[0];
    }
    EXPECT_LT(updater.skipped_steps(), 10) << "overflows should be rare";
  }
  ASSERT_TRUE(std::isfinite(last_loss));

  NoGradGuard no_grad;
  auto xe = make_variable({500, 784});
  auto te = make_variable({500, 1});
  auto error = F::top_n_error(net(xe), te);
  const double accuracy =
      100.0 * (1.0 - evaluate_error_rate(test, xe, te, error));
  std::printf(
      "%s: test accuracy %.2f%% after %d steps (floor %.1f%%, margin "
      "%.2f points), last loss %.4f\n",
      GetParam().c_str(), accuracy, kSteps, kFloor, accuracy - kFloor,
      last_loss);
  EXPECT_GE(accuracy, kFloor);
}

INSTANTIATE_TEST_SUITE_P(TypeConfigs, EndToEnd,
                         ::testing::Values("float", "half", "bfloat16"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mg::test
