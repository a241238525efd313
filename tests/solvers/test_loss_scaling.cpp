// DynamicLossScalingUpdater under scripted overflow sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/solvers/loss_scaling.hpp>
#include <mixgraph/solvers/sgd.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

// loss = x . W with x fed by a script: a step marked 'i' feeds an inf, 'n' a
// nan, '.' a finite batch, so grads of W overflow exactly where scripted.
struct Scripted {
  explicit Scripted(const std::string& script,
                    const std::string& type_config = "float")
      : script(script), ctx(context("cpu", type_config)) {
    ContextGuard g(ctx);
    W = params.get_or_create("W", {3, 1}, constant_initializer(1.0f));
    x = make_variable({1, 3});
    loss = F::affine(x, W);
  }
  DynamicLossScalingUpdater::Feeder feeder() {
    return [this] {
      const char c = script.at(fed++);
      float* p = x->data()->cast<float>(true);
      for (int i = 0; i < 3; ++i) p[i] = 0.5f * (i + 1);
      if (c == 'i') p[1] = std::numeric_limits<float>::infinity();
      if (c == 'n') p[2] = std::nanf("");
    };
  }
  std::string script;
  size_t fed = 0;
  Context ctx;
  ParameterScope params;
  VariablePtr W, x, loss;
};

// NNabla's, except the initial scale: 2^16 as PyTorch's GradScaler.
TEST(DynamicLossScaling, DefaultsAreNNablasButTheScaleIsPyTorchs) {
  DynamicLossScalingOptions o;
  EXPECT_EQ(o.scale, 65536.0f);
  EXPECT_EQ(LossScalerState().scale, 65536.0f);
  EXPECT_EQ(o.scale_history_length, 1024);
  EXPECT_EQ(o.scaling_factor, 2.0f);
  EXPECT_EQ(o.interval, 2000);
  EXPECT_TRUE(o.clear_buffer);
  EXPECT_EQ(o.accum_grad, 1);
  EXPECT_FALSE(o.weight_decay.has_value());
}

TEST(DynamicLossScaling, ScriptedOverflowsBackOffSkipAndGrow) {
  Scripted s("..i...n....");
  auto solver = solvers::Momentum(0.1f, 0.9f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 8;
  o.interval = 3;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  const std::vector<bool> expected_applied = {1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1};
  // The scale each step runs with: 8, 8, back off to 4 at step 2, three
  // clean steps (3, 4, 5) grow it to 8, back off to 4 at step 6, three clean
  // steps (7, 8, 9) grow it to 8.
  const std::vector<float> expected_scale = {8, 8, 8, 4, 4, 4, 8, 4, 4, 4, 8};
  for (size_t k = 0; k < expected_applied.size(); ++k) {
    ContextGuard g(s.ctx);
    const auto w_before = to_doubles(s.W);
    const auto m_before =
        solver->states().at("W").pstate.at("m")->get<const float>()[0];
    const uint32_t t_before = solver->states().at("W").t;
    const bool applied = up.update();
    EXPECT_EQ(applied, expected_applied[k]) << "step " << k;
    if (!applied) {
      EXPECT_EQ(to_doubles(s.W), w_before) << "a skipped step moved W";
      EXPECT_EQ(solver->states().at("W").pstate.at("m")->get<const float>()[0],
                m_before)
          << "a skipped step moved the momentum";
      EXPECT_EQ(solver->states().at("W").t, t_before) << "t moved on a skip";
    } else {
      EXPECT_EQ(solver->states().at("W").t, t_before + 1);
    }
  }
  EXPECT_EQ(up.scale_history(), expected_scale);
  EXPECT_EQ(up.applied_steps(), 9);
  EXPECT_EQ(up.skipped_steps(), 2);
  EXPECT_EQ(up.scale(), 8.0f);
  EXPECT_EQ(s.fed, 11u) << "no extra batches were pulled";
}

TEST(DynamicLossScaling, GrowsAfterExactlyIntervalSteps) {
  Scripted s("....");
  auto solver = solvers::Sgd(0.01f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 8;
  o.interval = 2;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  EXPECT_EQ(up.scale(), 8.0f);
  up.update();
  EXPECT_EQ(up.scale(), 16.0f) << "grows after N steps, not N + 1";
  up.update();
  up.update();
  EXPECT_EQ(up.scale(), 32.0f);
}

TEST(DynamicLossScaling, AppliedStepSeesUnscaledGrads) {
  Scripted s(".");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 1024;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  // dloss/dW = x = (0.5, 1, 1.5): W = 1 - x whatever the scale.
  expect_near(to_doubles(s.W), {0.5, 0, -0.5}, 1e-6, 0, "W after one step");
  // The unscale happened inside the update's pass: the grads were only read.
  expect_near(grad_doubles(s.W), {512, 1024, 1536}, 0, 0, "grads stay scaled");
}

// How the updater reaches the grads: read-only check + update(1 / scale);
// weight decay (of rate 0), which unscales in memory first; clipping,
// which folds its factor into update's scale.
enum class Path { check_then_unscale_in_update, unscale_first, clip };
const char* const kPathNames[] = {"check, then unscale in update",
                                  "unscale first", "clip"};

// Every applied step, in particular the first after a back-off and the
// first after a growth, moves W by exactly lr * x with plain SGD: a step
// unscaled by a stale scale moves it by twice or half that.
TEST(DynamicLossScaling, EveryAppliedStepAfterABackOffOrAGrowthIsExact) {
  for (const char* type_config : {"float", "half"}) {
    for (Path path : {Path::check_then_unscale_in_update, Path::unscale_first,
                      Path::clip}) {
      SCOPED_TRACE(std::string(type_config) + ", " +
                   kPathNames[static_cast<int>(path)]);
      Scripted s("..i...i..", type_config);
      auto solver = solvers::Sgd(0.25f);
      solver->set_parameters(s.params.parameters());
      DynamicLossScalingOptions o;
      o.scale = 8;
      o.interval = 2;
      if (path == Path::unscale_first) o.weight_decay = 0.0f;
      // |x| = sqrt(3.5) > 1: every step is clipped to norm 1.
      if (path == Path::clip) o.clip_grad_by_global_norm = 1.0f;
      DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
      const double k = path == Path::clip ? 1.0 / std::sqrt(3.5) : 1.0;
      std::vector<double> w = {1, 1, 1};
      for (int step = 0; step < 9; ++step) {
        const bool applied = up.update();
        ASSERT_EQ(applied, s.script[step] == '.') << "step " << step;
        ContextGuard g(s.ctx);
        if (applied) {
          for (int i = 0; i < 3; ++i) w[i] -= 0.25 * k * 0.5 * (i + 1);
        }
        if (path == Path::clip) {
          expect_near(to_doubles(s.W), w, 1e-6, 0,
                      "W after step " + std::to_string(step));
        } else {
          EXPECT_EQ(to_doubles(s.W), w) << "W after step " << step;
        }
      }
      // Steps 3 and 7 follow a back-off (16 -> 8), step 5 a growth (8 -> 16).
      EXPECT_EQ(up.scale_history(),
                (std::vector<float>{8, 8, 16, 8, 8, 16, 16, 8, 8}));
    }
  }
}

// Two parameters; the overflow is in the second one's grad only. The step
// is skipped for both (the first is not stepped before the check sees the
// second), and the next clean step moves both exactly.
TEST(DynamicLossScaling, AnOverflowInTheSecondParameterSkipsTheWholeStep) {
  for (const char* type_config : {"float", "half"}) {
    SCOPED_TRACE(type_config);
    const Context ctx = context("cpu", type_config);
    ContextGuard g(ctx);
    ParameterScope params;
    auto W1 = params.get_or_create("W1", {3, 1}, constant_initializer(1.0f));
    auto W2 = params.get_or_create("W2", {3, 1}, constant_initializer(1.0f));
    auto x1 = make_variable({1, 3}), x2 = make_variable({1, 3});
    auto loss = F::add2(F::affine(x1, W1), F::affine(x2, W2));
    const std::string script = ".i.";
    size_t fed = 0;
    auto feeder = [&] {
      const char c = script.at(fed++);
      float* p1 = x1->data()->cast<float>(true);
      float* p2 = x2->data()->cast<float>(true);
      for (int i = 0; i < 3; ++i)
        p1[i] = 0.5f * (i + 1), p2[i] = 0.25f * (i + 1);
      if (c == 'i') p2[2] = std::numeric_limits<float>::infinity();
    };
    auto solver = solvers::Momentum(0.25f, 0.5f);
    solver->set_parameters(params.parameters());
    DynamicLossScalingOptions o;
    o.scale = 8;
    DynamicLossScalingUpdater up(solver, loss, feeder, o);
    auto m_of = [&](const std::string& name) {
      // states() returns a copy: hold it while reading.
      const auto states = solver->states();
      const auto& m = states.at(name).pstate.at("m");
      const float* d = m->get<const float>();
      return std::vector<double>(d, d + 3);
    };
    EXPECT_TRUE(up.update());
    // m = lr g: W1 -= (0.125, 0.25, 0.375), W2 -= (0.0625, 0.125, 0.1875).
    const std::vector<double> w1 = {0.875, 0.75, 0.625},
                              w2 = {0.9375, 0.875, 0.8125};
    EXPECT_EQ(to_doubles(W1), w1);
    EXPECT_EQ(to_doubles(W2), w2);
    const auto m1 = m_of("W1"), m2 = m_of("W2");
    EXPECT_FALSE(up.update());
    EXPECT_EQ(up.scale(), 4.0f);
    EXPECT_EQ(to_doubles(W1), w1) << "the first parameter moved on a skip";
    EXPECT_EQ(to_doubles(W2), w2);
    EXPECT_EQ(m_of("W1"), m1) << "the first parameter's momentum moved";
    EXPECT_EQ(m_of("W2"), m2);
    EXPECT_EQ(solver->states().at("W1").t, 1u);
    EXPECT_TRUE(up.update());
    // m = 0.5 m + lr g = 1.5 lr g: W -= 1.5 (the first step's move).
    EXPECT_EQ(to_doubles(W1), (std::vector<double>{0.6875, 0.375, 0.0625}));
    EXPECT_EQ(to_doubles(W2), (std::vector<double>{0.84375, 0.6875, 0.53125}));
  }
}

// scale_history() is a ring of the latest scale_history_length scales.
TEST(DynamicLossScaling, TheScaleHistoryKeepsOnlyTheLatestScales) {
  Scripted s("..i.." + std::string(95, '.'));
  auto solver = solvers::Sgd(0.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 8;
  o.interval = 1;
  o.max_scale = 64;
  o.scale_history_length = 4;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  up.update();
  EXPECT_EQ(up.scale_history(), (std::vector<float>{8, 16}));
  up.update();  // overflow at 32
  up.update();
  EXPECT_EQ(up.scale_history(), (std::vector<float>{8, 16, 32, 16}));
  up.update();
  EXPECT_EQ(up.scale_history(), (std::vector<float>{16, 32, 16, 32}))
      << "full: the oldest goes";
  for (int i = 5; i < 100; ++i) up.update();
  EXPECT_EQ(up.scale_history(), (std::vector<float>{64, 64, 64, 64}));
  EXPECT_EQ(up.applied_steps() + up.skipped_steps(), 100);
}

// Below 1 the unscaled grads can overflow where the scaled ones do not, so
// the updater unscales (and checks) them first; the step is the same.
TEST(DynamicLossScaling, AScaleBelowOneUnscalesBeforeTheCheck) {
  Scripted s(".");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 0.5f;
  o.min_scale = 0.25f;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  EXPECT_TRUE(up.update());
  expect_near(to_doubles(s.W), {0.5, 0, -0.5}, 1e-6, 0, "W after one step");
  expect_near(grad_doubles(s.W), {0.5, 1, 1.5}, 0, 0, "grads unscaled");
}

TEST(DynamicLossScaling, BoundsHoldAndTheFloorWarnsOrThrows) {
  Scripted s("iiii....");
  auto solver = solvers::Sgd(0.01f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 4;
  o.min_scale = 2;
  o.max_scale = 4;
  o.interval = 1;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  EXPECT_EQ(up.scale(), 2.0f);
  ::testing::internal::CaptureStderr();
  up.update();  // overflow at the floor: warns, stays at 2
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("minimum loss scale"), std::string::npos) << err;
  EXPECT_EQ(up.scale(), 2.0f);

  DynamicLossScalingOptions strict = o;
  strict.at_min_scale = MinScalePolicy::error;
  strict.scale = 2;
  DynamicLossScalingUpdater up2(solver, s.loss, s.feeder(), strict);
  EXPECT_THROW(up2.update(), std::runtime_error);
  EXPECT_THROW(up2.update(), std::runtime_error);
  EXPECT_EQ(up2.skipped_steps(), 2) << "the error still counts the skip";
  EXPECT_EQ(up2.scale(), 2.0f);
  EXPECT_TRUE(up2.update()) << "a clean batch after the error trains";
}

TEST(DynamicLossScaling, NeverGrowsToInfinity) {
  Scripted s(std::string(20, '.'));
  auto solver = solvers::Sgd(0.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.interval = 1;
  o.scale = 1e6f;
  o.max_scale = 4e6f;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  for (int i = 0; i < 20; ++i) up.update();
  EXPECT_EQ(up.scale(), 4e6f);
}

TEST(DynamicLossScaling, AccumulationKeepsTheScaleAndSumsBatches) {
  Scripted s("......");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 8;
  o.accum_grad = 3;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  EXPECT_EQ(s.fed, 3u);
  // Three identical batches: W = 1 - 3x.
  expect_near(to_doubles(s.W), {-0.5, -2, -3.5}, 1e-5, 0, "accumulated step");
  EXPECT_EQ(up.scale_history(), (std::vector<float>{8}));
}

// The counter counts applied updates, not the batches accumulated into
// them: with accum_grad 3 and interval 2 the scale grows after 2 updates (6
// batches), and an overflow in any batch of an update resets it.
TEST(DynamicLossScaling, UnderAccumulationTheCounterCountsUpdates) {
  Scripted s(
      "......"
      "i.....");
  auto solver = solvers::Sgd(0.01f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 8;
  o.interval = 2;
  o.accum_grad = 3;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  EXPECT_TRUE(up.update());
  EXPECT_EQ(up.state().counter, 1);
  EXPECT_EQ(up.scale(), 8.0f) << "grew after 3 batches of one update";
  EXPECT_TRUE(up.update());
  EXPECT_EQ(up.state().counter, 0);
  EXPECT_EQ(up.scale(), 16.0f) << "did not grow after 2 updates";
  EXPECT_FALSE(up.update());  // the inf in its first batch
  EXPECT_EQ(up.scale(), 8.0f);
  EXPECT_EQ(up.state().counter, 0);
  EXPECT_TRUE(up.update());
  EXPECT_EQ(up.state().counter, 1);
  EXPECT_EQ(up.scale(), 8.0f);
  EXPECT_EQ(s.fed, 12u);
  EXPECT_EQ(up.applied_steps(), 3);
  EXPECT_EQ(up.skipped_steps(), 1);
}

TEST(DynamicLossScaling, ClippingSeesUnscaledGradsAndWeightDecayApplies) {
  Scripted s("..");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 512;
  o.clip_grad_by_global_norm = 0.5f;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  up.update();
  // |x| = sqrt(0.25 + 1 + 2.25) = 1.8708: clipped to 0.5 whatever the scale.
  const double k = 0.5 / std::sqrt(3.5);
  expect_near(to_doubles(s.W), {1 - 0.5 * k, 1 - k, 1 - 1.5 * k}, 1e-5, 0,
              "clipped step");
}

// Weight decay adds to the unscaled grads after clipping: g = k x + wd W.
TEST(DynamicLossScaling, WeightDecayAddsToTheClippedUnscaledGrads) {
  Scripted s(".");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 512;
  o.clip_grad_by_global_norm = 0.5f;
  o.weight_decay = 0.1f;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  EXPECT_TRUE(up.update());
  const double k = 0.5 / std::sqrt(3.5);
  expect_near(to_doubles(s.W),
              {1 - 0.5 * k - 0.1, 1 - k - 0.1, 1 - 1.5 * k - 0.1}, 1e-5, 0,
              "clipped and decayed step");
}

TEST(DynamicLossScaling, HalfTrainingOverflowIsCaughtInHalfGrads) {
  Scripted s("...", "half");
  auto solver = solvers::Sgd(0.01f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.scale = 65536.0f;  // x * 65536 overflows half for x >= 1
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  EXPECT_FALSE(up.update());
  EXPECT_EQ(up.scale(), 32768.0f);
  EXPECT_TRUE(up.update());
}

TEST(DynamicLossScaling, StateRoundTrip) {
  Scripted s("..");
  auto solver = solvers::Sgd(0.01f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder());
  up.update();
  LossScalerState st = up.state();
  EXPECT_EQ(st.applied_steps, 1);
  st.scale = 64;
  up.set_state(st);
  EXPECT_EQ(up.scale(), 64.0f);
  st.scale = std::numeric_limits<float>::infinity();
  EXPECT_THROW(up.set_state(st), std::invalid_argument);
}

// loss_scaling = false: a plain updater for float and bfloat16. Two
// accumulated batches and weight decay, seeded with 1: the grads in memory
// are 2x + wd W and W moves by lr times that, exactly (every value is a
// short binary fraction, exact in bfloat16 too).
TEST(PlainUpdater, AccumulatesAndDecaysWithoutAScaleInFloatAndBfloat16) {
  for (const char* type_config : {"float", "bfloat16"}) {
    SCOPED_TRACE(type_config);
    Scripted s("....", type_config);
    auto solver = solvers::Sgd(0.25f);
    solver->set_parameters(s.params.parameters());
    DynamicLossScalingOptions o;
    o.loss_scaling = false;
    o.accum_grad = 2;
    o.weight_decay = 0.5f;
    o.interval = 1;  // not used: the scale never grows
    DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
    EXPECT_EQ(up.scale(), 1.0f);
    EXPECT_EQ(up.options().scale, 1.0f);
    EXPECT_EQ(up.options().max_scale, 1.0f);
    ContextGuard g(s.ctx);
    EXPECT_TRUE(up.update());
    EXPECT_EQ(s.fed, 2u);
    EXPECT_EQ(grad_doubles(s.W), (std::vector<double>{1.5, 2.5, 3.5}))
        << "seeded with 1, then decayed: 2x + 0.5 W";
    EXPECT_EQ(to_doubles(s.W), (std::vector<double>{0.625, 0.375, 0.125}));
    EXPECT_TRUE(up.update());
    // g = 2x + 0.5 W = (1.3125, 2.1875, 3.0625); W -= g / 4.
    EXPECT_EQ(to_doubles(s.W),
              (std::vector<double>{0.296875, -0.171875, -0.640625}));
    EXPECT_EQ(up.scale(), 1.0f);
    EXPECT_EQ(up.scale_history(), (std::vector<float>{1, 1}));
  }
}

TEST(PlainUpdater, ClipsToTheGlobalNormWithoutAScale) {
  Scripted s(".", "bfloat16");
  auto solver = solvers::Sgd(1.0f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.loss_scaling = false;
  o.clip_grad_by_global_norm = 0.5f;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  EXPECT_TRUE(up.update());
  const double k = 0.5 / std::sqrt(3.5);
  expect_near(to_doubles(s.W), {1 - 0.5 * k, 1 - k, 1 - 1.5 * k}, 1e-6, 0,
              "clipped step");
  expect_near(grad_doubles(s.W), {0.5, 1, 1.5}, 0, 0,
              "the grads stay as backward wrote them, seeded with 1");
}

TEST(PlainUpdater, SkipsANonFiniteStepAndWarnsOrThrows) {
  Scripted s("i.n", "float");
  auto solver = solvers::Sgd(0.25f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.loss_scaling = false;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(up.update());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gradients are inf or nan (step 1) with loss scaling off"),
            std::string::npos)
      << err;
  EXPECT_EQ(to_doubles(s.W), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(up.scale(), 1.0f);
  EXPECT_TRUE(up.update());
  EXPECT_EQ(to_doubles(s.W), (std::vector<double>{0.875, 0.75, 0.625}));
  DynamicLossScalingOptions strict = o;
  strict.at_min_scale = MinScalePolicy::error;
  DynamicLossScalingUpdater up2(solver, s.loss, s.feeder(), strict);
  EXPECT_THROW(up2.update(), std::runtime_error);
  EXPECT_EQ(up2.skipped_steps(), 1);
  EXPECT_EQ(up.applied_steps() + up.skipped_steps(), 2);
}

TEST(PlainUpdater, RefusesAScaledState) {
  Scripted s(".");
  auto solver = solvers::Sgd(0.25f);
  solver->set_parameters(s.params.parameters());
  DynamicLossScalingOptions o;
  o.loss_scaling = false;
  DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
  LossScalerState st;
  st.scale = 1.0f;
  st.applied_steps = 7;
  up.set_state(st);
  EXPECT_EQ(up.applied_steps(), 7);
  st.scale = 8.0f;
  try {
    up.set_state(st);
    FAIL() << "a scale of 8 was accepted with loss scaling off";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "loss scaling is off (options.loss_scaling = false), so the "
                  "scale must be 1, got 8"),
              std::string::npos)
        << e.what();
  }
}

void expect_bad_option(
    const std::function<void(DynamicLossScalingOptions&)>& set,
    const std::string& part) {
  Scripted s(".");
  auto solver = solvers::Sgd(0.01f);
  DynamicLossScalingOptions o;
  set(o);
  try {
    DynamicLossScalingUpdater up(solver, s.loss, s.feeder(), o);
    FAIL() << "expected: " << part;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(DynamicLossScaling, BadOptionsAreRejected) {
  expect_bad_option([](auto& o) { o.scaling_factor = 1.0f; },
                    "scaling_factor must be > 1, got 1");
  expect_bad_option([](auto& o) { o.scaling_factor = 0.5f; },
                    "scaling_factor must be > 1");
  expect_bad_option(
      [](auto& o) {
        o.min_scale = 8;
        o.max_scale = 4;
      },
      "min_scale 8 is above max_scale 4");
  expect_bad_option([](auto& o) { o.interval = 0; }, "interval must be >= 1");
  expect_bad_option([](auto& o) { o.accum_grad = 0; },
                    "accum_grad must be >= 1");
  expect_bad_option([](auto& o) { o.scale_history_length = 0; },
                    "scale_history_length must be >= 1, got 0");
  expect_bad_option(
      [](auto& o) { o.scale = 1e9f; },
      "scale 1e+09 must be in [min_scale 1, max_scale 1.67772e+07]");
  Scripted s(".");
  EXPECT_THROW(DynamicLossScalingUpdater(nullptr, s.loss, s.feeder()),
               std::invalid_argument);
}

}  // namespace
}  // namespace mg::test
