// End to end: an MLP trained with Adam and the DynamicLossScalingUpdater in
// half and bfloat16 reaches the loss it reaches in float; with SGD, its
// weights follow float's step by step, within a few roundings of the type
// per step, and stay fp32 masters with fp32 precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

struct Result {
  float loss;  // mean of the last 20 steps' losses
  int64_t skipped;
  float final_scale;
};

// An MLP 16-32-4 on batches of 32 from four Gaussian blobs, the same
// batches for every type_config (the blob's noise and class from `rng`).
struct BlobMlp {
  ParameterScope params;
  VariablePtr x, t, loss;
  std::mt19937 rng;
  static constexpr int kBatch = 32;
  BlobMlp(uint64_t weight_seed, uint32_t data_seed,
          VariablePtr (*activation)(const VariablePtr&))
      : rng(data_seed) {
    seed(weight_seed);
    x = make_variable({kBatch, 16});
    t = make_variable({kBatch, 1});
    auto h = activation(PF::affine(x, 32, params["fc1"]));
    auto y = PF::affine(h, 4, params["fc2"]);
    loss = F::mean(F::softmax_cross_entropy(y, t));
  }
  void feed() {
    std::normal_distribution<float> noise(0.0f, 0.8f);
    std::uniform_int_distribution<int> cls(0, 3);
    float* px = x->data()->cast<float>(true);
    float* pt = t->data()->cast<float>(true);
    for (int n = 0; n < kBatch; ++n) {
      const int c = cls(rng);
      pt[n] = static_cast<float>(c);
      for (int d = 0; d < 16; ++d) px[n * 16 + d] = (d % 4 == c) + noise(rng);
    }
  }
};

Result train(const std::string& type_config, float initial_scale) {
  ContextGuard ctx(context("cpu", type_config));
  BlobMlp m(3, 4, F::relu);
  auto loss = m.loss;
  auto solver = solvers::Adam(0.01f);
  solver->set_parameters(m.params.parameters());
  auto feed = [&] { m.feed(); };
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

// The weights of every parameter after each of `steps` SGD steps (a
// constant lr, so each step moves a weight by lr * its grad: the
// trajectories of two type_configs differ only by the rounding in the
// grads), with the updater's loss scale 2^10 in half (a power of 2: the
// unscale is exact). After every step each master must still be fp32 and
// hold fp32 precision: rounded to bfloat16 (or half) every value would have
// its low 16 (13) mantissa bits zero.
std::vector<std::vector<float>> sgd_trajectory(const std::string& type_config,
                                               int steps) {
  ContextGuard ctx(context("cpu", type_config));
  BlobMlp m(5, 6, F::tanh);
  const ParameterScope& params = m.params;
  auto solver = solvers::Sgd(0.5f);
  solver->set_parameters(params.parameters());
  auto feed = [&] { m.feed(); };
  DynamicLossScalingOptions o;
  o.loss_scaling = type_config == "half";
  o.scale = 1024.0f;
  DynamicLossScalingUpdater updater(solver, m.loss, feed, o);
  std::vector<std::vector<float>> trajectory;  // [0]: the initial weights
  for (int step = 0; step <= steps; ++step) {
    if (step > 0) {
      EXPECT_TRUE(updater.update()) << type_config << " step " << step;
    }
    std::vector<float> w;
    for (const auto& [name, v] : params.parameters()) {
      const float* p = v->data()->get<const float>();
      if (step > 0) {
        // The update wrote the fp32 copy, which stays the head.
        EXPECT_EQ(v->data()->array().dtype(), Dtype::f32)
            << type_config << " step " << step << ": " << name
            << "'s master is not fp32";
        int64_t fp32_only = 0;  // values bfloat16 cannot hold
        for (int64_t i = 0; i < v->size(); ++i) {
          uint32_t bits;
          std::memcpy(&bits, &p[i], sizeof bits);
          fp32_only += (bits & 0xffffu) != 0;
        }
        // Biases start at 0 and move by lr * g: some may be bf16-exact,
        // but not most of them.
        EXPECT_GT(fp32_only, v->size() / 2)
            << type_config << " step " << step << ": " << name
            << "'s master was rounded to 16 bits";
      }
      w.insert(w.end(), p, p + v->size());
    }
    trajectory.push_back(std::move(w));
  }
  return trajectory;
}

// Tolerance: a step moves a weight by lr * g; the reduced type changes g
// through the roundings of the input, the activations and the activation
// grads (fp32 accumulation throughout), each within eps of the type (2^-11
// half, 2^-8 bfloat16), so after k steps |w_type - w_float| stays within a
// few eps times the largest path |w_k - w_0| a weight took. Measured (max
// over the steps of gap / (eps * path)): 0.37 half, 0.65 bfloat16; the bound
// is 2. Masters rounded to bfloat16 after each update (tried): the half run
// is 8x over the bound at the first step, the bfloat16 run only about at
// it, which is why sgd_trajectory also checks the masters' low bits (that
// fails at the first step in both).
TEST(MixedPrecisionTraining, SgdWeightsFollowFloatStepByStep) {
  const int steps = 12;
  const auto f = sgd_trajectory("float", steps);
  for (const auto& [type_config, eps] :
       {std::pair<std::string, double>{"half", std::ldexp(1.0, -11)},
        {"bfloat16", std::ldexp(1.0, -8)}}) {
    const auto r = sgd_trajectory(type_config, steps);
    double worst = 0;  // max over steps of gap / (eps * path)
    ASSERT_EQ(r.front(), f.front()) << "not the same initial weights";
    for (int k = 1; k <= steps; ++k) {
      double gap = 0, path = 0;
      for (size_t i = 0; i < f[k].size(); ++i) {
        gap = std::max(gap, std::fabs(double(r[k][i]) - f[k][i]));
        path = std::max(path, std::fabs(double(f[k][i]) - f[0][i]));
      }
      EXPECT_LE(gap, 2 * eps * path)
          << type_config << " step " << k << ": path " << path;
      worst = std::max(worst, gap / (eps * path));
    }
    std::printf("%s: max |w - w_float| / (eps * path) over %d steps: %.2f\n",
                type_config.c_str(), steps, worst);
  }
}

}  // namespace
}  // namespace mg
