// End to end: an MLP trained with Adam and the DynamicLossScalingUpdater in
// half and bfloat16 reaches the loss it reaches in float.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

struct Result {
  float loss;  // mean of the last 20 steps' losses
  int64_t skipped;
  float final_scale;
};

Result train(const std::string& type_config, float initial_scale) {
  ContextGuard ctx(context("cpu", type_config));
  seed(3);
  ParameterScope params;
  const int batch = 32;
  auto x = make_variable({batch, 16});
  auto t = make_variable({batch, 1});
  auto h = F::relu(PF::affine(x, 32, params["fc1"]));
  auto y = PF::affine(h, 4, params["fc2"]);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));
  auto solver = solvers::Adam(0.01f);
  solver->set_parameters(params.parameters());
  std::mt19937 rng(4);  // the same batches for every type_config
  auto feed = [&] {
    std::normal_distribution<float> noise(0.0f, 0.8f);
    std::uniform_int_distribution<int> cls(0, 3);
    float* px = x->data()->cast<float>(true);
    float* pt = t->data()->cast<float>(true);
    for (int n = 0; n < batch; ++n) {
      const int c = cls(rng);
      pt[n] = static_cast<float>(c);
      for (int d = 0; d < 16; ++d) px[n * 16 + d] = (d % 4 == c) + noise(rng);
    }
  };
  DynamicLossScalingOptions o;
  o.scale = initial_scale;
  o.interval = 50;
  DynamicLossScalingUpdater updater(solver, loss, feed, o);
  const int steps = 300;
  double tail = 0;
  for (int i = 0; i < steps; ++i) {
    updater.update();
    if (i >= steps - 20) tail += *loss->data()->get<const float>();
  }
  return {static_cast<float>(tail / 20), updater.skipped_steps(),
          updater.scale()};
}

// Tolerance: the three runs see the same batches; half rounds activations to
// 11 bits and bfloat16 to 8. Measured final losses (mean of the last 20
// steps): float 0.2842, half 0.2844, bfloat16 0.2838 (the blobs overlap, so
// 0.28 is near the best this model reaches); 0.03 leaves a 10x margin.
TEST(MixedPrecisionTraining, HalfAndBfloat16MatchFloat) {
  const Result f = train("float", 8);
  const Result h = train("half", 8);
  const Result b = train("bfloat16", 8);
  std::printf("final loss: float %.4f, half %.4f, bfloat16 %.4f\n", f.loss,
              h.loss, b.loss);
  EXPECT_LT(f.loss, 0.4f) << "float did not train (starts near 1.39)";
  EXPECT_NEAR(h.loss, f.loss, 0.03f);
  EXPECT_NEAR(b.loss, f.loss, 0.03f);
  EXPECT_EQ(f.skipped, 0);
}

// Starting far above what fp16 holds, the updater backs off until the grads
// fit, skips those steps and still trains to the float loss.
TEST(MixedPrecisionTraining, HalfRecoversFromAnOversizedInitialScale) {
  const Result f = train("float", 8);
  const Result h = train("half", 1e7f);
  EXPECT_GT(h.skipped, 0);
  EXPECT_LT(h.final_scale, 1e7f);
  EXPECT_NEAR(h.loss, f.loss, 0.05f);
}

}  // namespace
}  // namespace mg
