// A bounded soak test of the mixed precision training loop: 2000 steps of a
// small MLP in half with the dynamic loss scaler (clipping and weight decay
// on, a short growth interval so the scale moves often), inf injected into
// the batch at seeded random steps, and checkpoint + crash + resume cycles
// (in-process: a crash drops the run without saving, then a fresh network,
// solver and updater load the last checkpoint and redo the lost steps).
// The resumed run must end bit-equal to an uninterrupted one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>

namespace mg {
namespace {

constexpr int64_t kSteps = 2000;
constexpr int kBatch = 16, kIn = 8, kHidden = 16, kClasses = 4;

// The steps whose batch holds an inf: about 2 %, from a fixed seed.
const std::vector<bool>& injected_steps() {
  static const std::vector<bool> steps = [] {
    std::mt19937 rng(20);
    std::bernoulli_distribution inject(0.02);
    std::vector<bool> s(kSteps);
    for (int64_t i = 0; i < kSteps; ++i) s[i] = inject(rng);
    return s;
  }();
  return steps;
}

// One training process: the network, its solver and updater, built fresh.
struct SoakRun {
  SoakRun() : ctx(context("cpu", "half")) {
    ContextGuard g(ctx);
    seed(7);
    x = make_variable({kBatch, kIn});
    t = make_variable({kBatch, 1});
    auto h = F::relu(PF::affine(x, kHidden, params["fc1"]));
    h = F::relu(PF::affine(h, kHidden, params["fc2"]));
    loss = F::mean(
        F::softmax_cross_entropy(PF::affine(h, kClasses, params["fc3"]), t));
    solver = solvers::Adam(1e-3f);
    solver->set_parameters(params.parameters());
    DynamicLossScalingOptions o;
    o.interval = 20;  // grows often, so growth and back-off interleave
    o.clip_grad_by_global_norm = 1.0f;
    o.weight_decay = 1e-4f;
    o.at_min_scale = MinScalePolicy::error;  // never expected here
    updater = std::make_unique<DynamicLossScalingUpdater>(
        solver, loss, [this] { feed(); }, o);
  }

  // The batch of step `iteration`, a function of the step alone (as a data
  // iterator restored from a checkpoint would give): a learnable class
  // pattern plus noise, with an inf at an injected step.
  void feed() {
    std::mt19937 rng(static_cast<uint32_t>(1000 + iteration));
    std::normal_distribution<float> noise(0.0f, 0.3f);
    float* px = x->data()->cast<float>(true);
    float* pt = t->data()->cast<float>(true);
    for (int i = 0; i < kBatch; ++i) {
      const int label = static_cast<int>(rng() % kClasses);
      pt[i] = static_cast<float>(label);
      for (int j = 0; j < kIn; ++j) {
        px[i * kIn + j] = (j % kClasses == label ? 1.0f : 0.0f) + noise(rng);
      }
    }
    if (injected_steps()[iteration]) {
      px[rng() % (kBatch * kIn)] = std::numeric_limits<float>::infinity();
    }
  }

  void train_until(int64_t end) {
    ContextGuard g(ctx);
    for (; iteration < end; ++iteration) updater->update();
  }

  void save(const std::string& path) {
    save_checkpoint(path, params, *solver, *updater, iteration);
  }
  void load(const std::string& path) {
    iteration = load_checkpoint(path, params, *solver, updater.get()).iteration;
  }

  std::vector<std::vector<float>> weights_and_states() const {
    std::vector<std::vector<float>> out;
    auto add = [&](const NdArrayPtr& a) {
      const float* d = a->get<const float>();
      out.emplace_back(d, d + a->size());
    };
    for (const auto& [name, v] : params.parameters()) add(v->data());
    for (const auto& [name, st] : solver->states()) {
      for (const auto& [sname, a] : st.pstate) add(a);
      out.push_back({static_cast<float>(st.t)});
    }
    return out;
  }

  Context ctx;
  ParameterScope params;
  VariablePtr x, t, loss;
  SolverPtr solver;
  std::unique_ptr<DynamicLossScalingUpdater> updater;
  int64_t iteration = 0;
};

TEST(Soak, CheckpointCrashResumeCyclesEndBitEqualToAnUninterruptedRun) {
  SoakRun straight;
  straight.train_until(kSteps);
  const LossScalerState s = straight.updater->state();
  int injected = 0;
  for (bool b : injected_steps()) injected += b;
  // The run exercised what it is meant to: skips beyond the injected ones
  // (half overflows at large scales), growths, and it learnt.
  EXPECT_GE(s.skipped_steps, injected);
  EXPECT_GT(s.skipped_steps, injected) << "no overflow of half's own";
  EXPECT_GT(s.applied_steps, kSteps * 9 / 10);
  EXPECT_EQ(s.applied_steps + s.skipped_steps, kSteps);
  float last_loss = 0;
  {
    ContextGuard g(straight.ctx);
    last_loss = straight.loss->data()->get<const float>()[0];
    EXPECT_LT(last_loss, 0.5f) << "the soak run does not learn";
  }

  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mg_soak_" + std::to_string(getpid()) + ".h5"))
                               .string();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> segment(60, 240), lost(1, 50);
  auto run = std::make_unique<SoakRun>();
  run->save(path);  // step 0
  int cycles = 0;
  int64_t redone = 0;
  while (run->iteration < kSteps) {
    // Train and save; then train some more steps that a crash loses.
    const int64_t saved_at = std::min(kSteps, run->iteration + segment(rng));
    run->train_until(saved_at);
    run->save(path);
    if (saved_at == kSteps) break;
    const int64_t crash_at = std::min(kSteps, saved_at + lost(rng));
    run->train_until(crash_at);
    redone += crash_at - saved_at;
    run = std::make_unique<SoakRun>();  // the crash: a fresh process
    run->load(path);
    ASSERT_EQ(run->iteration, saved_at);
    ++cycles;
  }
  std::remove(path.c_str());
  EXPECT_GE(cycles, 8);
  EXPECT_GT(redone, 0);
  const LossScalerState r = run->updater->state();
  EXPECT_EQ(r.scale, s.scale);
  EXPECT_EQ(r.counter, s.counter);
  EXPECT_EQ(r.applied_steps, s.applied_steps);
  EXPECT_EQ(r.skipped_steps, s.skipped_steps);
  const auto want = straight.weights_and_states();
  const auto got = run->weights_and_states();
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k], want[k]) << "array " << k << " differs after resuming";
  }
  std::printf(
      "soak: %lld steps, %d injected infs, %lld skipped, %d "
      "checkpoint/crash/resume cycles, %lld steps redone, final "
      "scale %g, last loss %.4f\n",
      static_cast<long long>(kSteps), injected,
      static_cast<long long>(s.skipped_steps), cycles,
      static_cast<long long>(redone), static_cast<double>(s.scale),
      static_cast<double>(last_loss));
}

}  // namespace
}  // namespace mg
