// The inference part of the README's first program (README.md, "A first
// program"), with the same calls, checked: the network and weights saved
// after training, loaded with another batch size, give the trained graph's
// answers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <mixgraph/mixgraph.hpp>

namespace mg::test {
namespace {

TEST(Inference, TheReadmesTrainedMlpRunsOnTenNewExamples) {
  mg::ContextGuard half(mg::context("cpu", "half"));
  mg::seed(1);
  mg::ParameterScope params;
  auto x = mg::make_variable({64, 16});
  x->set_name("x");
  auto t = mg::make_variable({64, 1});
  auto h = F::relu(PF::affine(x, 64, params["fc1"]));
  auto y = PF::affine(h, 4, params["fc2"]);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));
  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(params.parameters());
  // Four Gaussian blobs in 16 dimensions: class c is bright in d % 4 == c.
  std::mt19937 rng(7);
  auto fill = [&](float* xs, float* ts, int n) {
    std::normal_distribution<float> noise(0.0f, 0.7f);
    for (int i = 0; i < n; ++i) {
      const int c = static_cast<int>(rng() % 4);
      if (ts) ts[i] = static_cast<float>(c);
      for (int d = 0; d < 16; ++d) {
        xs[i * 16 + d] = (d % 4 == c ? 1.5f : 0.0f) + noise(rng);
      }
    }
  };
  mg::DynamicLossScalingUpdater updater(solver, loss, [&] {
    fill(x->data()->cast<float>(), t->data()->cast<float>(), 64);
  });
  for (int step = 0; step < 100; ++step) updater.update();

  const std::string dir = ::testing::TempDir();
  mg::save_network(dir + "mlp.yaml", "mlp", {{"y", y}}, params,
                   {/*free_batch=*/true});
  mg::save_parameters(dir + "mlp.h5", params);
  mg::ParameterScope trained;
  mg::Network net = mg::load_trained_network(dir + "mlp.yaml", dir + "mlp.h5",
                                             trained, {/*batch_size=*/10});
  float* rows = net.input("x")->data()->cast<float>();
  ASSERT_EQ(net.input("x")->shape(), (Shape{10, 16}));
  fill(rows, nullptr, 10);
  net.output("y")->forward();
  ASSERT_EQ(net.output("y")->shape(), (Shape{10, 4}));
  const float* scores = net.output("y")->data()->get<const float>();

  // The training graph on the same 10 rows (padded to its 64).
  float* xs = x->data()->cast<float>();
  for (int i = 0; i < 64 * 16; ++i) xs[i] = rows[i % (10 * 16)];
  y->forward();
  const float* want = y->data()->get<const float>();
  for (int i = 0; i < 10 * 4; ++i) {
    ASSERT_TRUE(std::isfinite(scores[i]));
    EXPECT_NEAR(scores[i], want[i], 1e-2f * (1.0f + std::fabs(want[i]))) << i;
  }
}

}  // namespace
}  // namespace mg::test
