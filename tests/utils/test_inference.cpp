// The inference part of the README's first program (README.md, "A first
// program"), with the same calls, checked: the network and weights saved
// after training, loaded with another batch size, give the trained
// weights bit for bit and the trained graph's answers (bit for bit at the
// same batch size).
#include <gtest/gtest.h>

#include <algorithm>
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

  // The weights come back bit for bit (fp32 masters, written as fp32).
  for (const auto& [name, v] : params.parameters()) {
    const auto w = trained.get(name);
    ASSERT_TRUE(w) << name << " not loaded";
    ASSERT_EQ(w->shape(), v->shape()) << name;
    const float* a = v->data()->get<const float>();
    const float* b = w->data()->get<const float>();
    for (int64_t i = 0; i < v->size(); ++i) {
      ASSERT_EQ(b[i], a[i]) << name << "[" << i << "]";
    }
  }
  // The trained graph's layers at batch 10 on the same rows, in the same
  // type: the same weights through the same kernels at the same shapes,
  // so the same answers bit for bit.
  auto x10 = mg::make_variable({10, 16});
  auto y10 =
      PF::affine(F::relu(PF::affine(x10, 64, params["fc1"])), 4, params["fc2"]);
  std::copy(rows, rows + 10 * 16, x10->data()->cast<float>());
  y10->forward();
  const float* want = y10->data()->get<const float>();
  for (int i = 0; i < 10 * 4; ++i) {
    ASSERT_TRUE(std::isfinite(scores[i]));
    EXPECT_EQ(scores[i], want[i]) << i;
  }
  // The training graph itself on the same 10 rows (padded to its 64): the
  // same here too, but another batch may take another GEMM blocking (and
  // sum order) on another CPU, so within one half rounding of each output
  // and of the hidden values feeding it (2^-10 relative, plus 2^-10 for
  // outputs near 0): 10x tighter than the 1e-2 this test had.
  float* xs = x->data()->cast<float>();
  for (int i = 0; i < 64 * 16; ++i) xs[i] = rows[i % (10 * 16)];
  y->forward();
  const float* trained_y = y->data()->get<const float>();
  const float half_rounding = std::ldexp(1.0f, -10);
  for (int i = 0; i < 10 * 4; ++i) {
    EXPECT_NEAR(scores[i], trained_y[i],
                half_rounding * (1.0f + std::fabs(trained_y[i])))
        << i;
  }
}

}  // namespace
}  // namespace mg::test
