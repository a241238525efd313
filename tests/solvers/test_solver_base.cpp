// The Solver base: parameters, grad operations, master weights, states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/solvers/update_rule.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

VariablePtr param(const std::vector<float>& w, const std::vector<float>& g) {
  auto v = variable_from({static_cast<int64_t>(w.size())}, w, true);
  std::copy(g.begin(), g.end(), v->grad()->cast<float>(true));
  return v;
}

TEST(Solver, ParametersKeepInsertionOrderAndCanBeRemoved) {
  auto s = solvers::Sgd(0.1f);
  s->set_parameters({{"b", param({1}, {1})}, {"a", param({1}, {1})}});
  ASSERT_EQ(s->parameters().size(), 2u);
  EXPECT_EQ(s->parameters()[0].first, "b");
  s->remove_parameters({"b"});
  ASSERT_EQ(s->parameters().size(), 1u);
  EXPECT_EQ(s->parameters()[0].first, "a");
  EXPECT_THROW(s->remove_parameters({"zzz"}), std::invalid_argument);
  s->clear_parameters();
  EXPECT_TRUE(s->parameters().empty());
}

TEST(Solver, SetParametersCanRetainState) {
  auto s = solvers::Momentum(0.1f, 0.9f);
  auto w = param({1}, {1});
  s->set_parameters({{"w", w}});
  s->update();
  EXPECT_FLOAT_EQ(s->states().at("w").pstate.at("m")->get<const float>()[0],
                  0.1f);
  s->set_parameters({{"w", w}}, /*reset=*/true, /*retain_state=*/true);
  EXPECT_EQ(s->states().at("w").t, 1u);
  s->set_parameters({{"w", w}}, /*reset=*/true, /*retain_state=*/false);
  EXPECT_EQ(s->states().at("w").t, 0u);
}

TEST(Solver, ParametersWhoseGradWasNeverWrittenAreSkipped) {
  auto s = solvers::Sgd(0.5f);
  auto a = param({1}, {2});
  auto b = variable_from({1}, {1}, true);  // never written
  s->set_parameters({{"a", a}, {"b", b}});
  s->update();
  EXPECT_EQ(to_doubles(a)[0], 0.0);
  EXPECT_EQ(to_doubles(b)[0], 1.0);
  EXPECT_EQ(s->states().at("b").t, 0u);
  s->zero_grad();
  s->update();  // everything is zeroing now: nothing moves
  EXPECT_EQ(to_doubles(a)[0], 0.0);
  EXPECT_EQ(s->states().at("a").t, 1u);
}

TEST(Solver, GradOperations) {
  auto s = solvers::Sgd(1.0f);
  auto a = param({1, 1}, {3, 4});  // norm 5
  auto b = param({2}, {0});        // norm 0
  s->set_parameters({{"a", a}, {"b", b}});
  s->scale_grad(2.0f);
  EXPECT_EQ(grad_doubles(a), (Doubles{6, 8}));
  s->clip_grad_by_norm(5.0f);
  expect_near(grad_doubles(a), {3, 4}, 1e-6, 0, "clip by norm");
  EXPECT_FLOAT_EQ(s->clip_grad_by_global_norm(1.0f), 5.0f);
  expect_near(grad_doubles(a), {0.6, 0.8}, 1e-6, 0, "clip by global norm");
  s->weight_decay(0.5f);
  expect_near(grad_doubles(a), {1.1, 1.3}, 1e-6, 0, "weight decay");
  EXPECT_FALSE(s->check_inf_or_nan_grad());
  a->grad()->cast<float>()[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(s->check_inf_or_nan_grad());
  a->grad()->cast<float>()[1] = std::nanf("");
  EXPECT_TRUE(s->check_inf_or_nan_grad());
  EXPECT_THROW(s->clip_grad_by_norm(0.0f), std::invalid_argument);
}

// A check alone takes the word of a grad's writer that every value is
// finite (SyncedArray::mark_finite: our product's epilogue saw them) and
// does not read it: shown here with a writer that lies. A pass that scales,
// writes or sums reads every grad; a grad written since is read again.
TEST(Solver, ACheckSkipsGradsTheirWriterSawFinite) {
  auto s = solvers::Sgd(1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  auto a = param({1, 2}, {3, inf});
  s->set_parameters({{"a", a}});
  EXPECT_TRUE(s->check_inf_or_nan_grad()) << "not marked: read";
  a->grad()->array().mark_finite();
  EXPECT_FALSE(s->check_inf_or_nan_grad()) << "marked: taken at its word";
  EXPECT_FALSE(s->scale_grad_and_check_inf_or_nan({a.get()}, 1.0f, false))
      << "the scaler's check of one grad as backward finishes it";
  double norm2 = 0;
  EXPECT_TRUE(s->check_inf_or_nan_grad(&norm2)) << "a norm reads every value";
  a->grad()->array().mark_finite();
  EXPECT_TRUE(s->scale_grad_and_check_inf_or_nan({a.get()}, 2.0f, false))
      << "a scale reads every value";
  a->grad()->array().mark_finite();
  a->grad()->cast<float>()[0] = 5.0f;  // written since: read again
  EXPECT_TRUE(s->check_inf_or_nan_grad());
}

TEST(Solver, FusedUnscaleAndCheckReadsHalfGrads) {
  auto s = solvers::Sgd(1.0f);
  auto a = variable_from({2}, {0, 0}, true);
  Half* g = a->grad()->cast<Half>(true);
  g[0] = Half(1024.0f), g[1] = Half(-512.0f);
  s->set_parameters({{"a", a}});
  EXPECT_FALSE(s->scale_grad_and_check_inf_or_nan(1.0f / 1024));
  EXPECT_EQ(grad_doubles(a), (Doubles{1, -0.5}));
  a->grad()->cast<Half>()[0] = std::numeric_limits<Half>::infinity();
  EXPECT_TRUE(s->scale_grad_and_check_inf_or_nan(0.5f));
}

// The check of some grads (the loss scaler's, as the backward finishes
// each) finds its parameters after they are set, removed or set again, and
// ignores a variable the solver does not hold.
TEST(Solver, CheckOfSomeGradsFollowsTheParameterList) {
  auto s = solvers::Sgd(1.0f);
  auto a = param({0, 0}, {1, 2});
  auto b = param({0}, {std::numeric_limits<float>::infinity()});
  auto stranger = param({0}, {std::nanf("")});
  s->set_parameters({{"a", a}, {"b", b}});
  double norm2 = -1;
  EXPECT_FALSE(
      s->scale_grad_and_check_inf_or_nan({a.get()}, 2.0f, false, &norm2));
  EXPECT_EQ(norm2, 20.0);  // (2 * 1)^2 + (2 * 2)^2, nothing written
  EXPECT_EQ(grad_doubles(a), (Doubles{1, 2}));
  EXPECT_TRUE(s->scale_grad_and_check_inf_or_nan({a.get(), b.get()}, 1.0f,
                                                 false, nullptr));
  EXPECT_FALSE(s->scale_grad_and_check_inf_or_nan({stranger.get()}, 1.0f, false,
                                                  &norm2));
  EXPECT_EQ(norm2, 0.0);
  s->remove_parameters({"b"});
  EXPECT_FALSE(s->scale_grad_and_check_inf_or_nan({a.get(), b.get()}, 0.5f,
                                                  true, nullptr));
  EXPECT_EQ(grad_doubles(a), (Doubles{0.5, 1}));  // written once, a named once
  s->set_parameters({{"b", b}});
  EXPECT_TRUE(
      s->scale_grad_and_check_inf_or_nan({b.get()}, 1.0f, false, nullptr));
  s->clear_parameters();
  EXPECT_FALSE(
      s->scale_grad_and_check_inf_or_nan({b.get()}, 1.0f, false, nullptr));
}

// The pass over grads runs on the calling thread below cpu::parallel_min()
// values (a million under OMP_WAIT_POLICY=passive, 32K otherwise; 32K where
// it also sums the squares) and on the team from there: both find an inf or
// a NaN wherever it is (here in the last value, the last thread's share),
// unscale every value and sum the squares.
TEST(Solver, GradPassOnEitherSideOfTheTeamThreshold) {
  for (const int64_t n : {int64_t{1000}, int64_t{(1 << 20) + 13}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    auto s = solvers::Sgd(1.0f);
    auto a = param(std::vector<float>(n, 0.0f), std::vector<float>(n, 2.0f));
    s->set_parameters({{"a", a}});
    double norm2 = -1;
    EXPECT_FALSE(
        s->scale_grad_and_check_inf_or_nan({a.get()}, 0.5f, true, &norm2));
    EXPECT_EQ(norm2, static_cast<double>(n));  // n ones
    const float* unscaled = a->grad()->get<const float>();
    EXPECT_EQ(std::count(unscaled, unscaled + n, 1.0f), n);
    a->grad()->cast<float>()[n - 1] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(s->check_inf_or_nan_grad());
    a->grad()->cast<float>()[n - 1] = std::nanf("");
    EXPECT_TRUE(
        s->scale_grad_and_check_inf_or_nan({a.get()}, 1.0f, false, nullptr));
  }
}

// An update of 1e-4 on a weight of 1 is below half's resolution there
// (spacing 2^-11 below 1): a pure fp16 update never moves the weight; the fp32
// master moves it by 1e-4 every step.
TEST(Solver, MasterWeightsKeepUpdatesBelowHalfResolution) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope params;
  auto x = variable_from({1, 1}, {1});
  auto y =
      F::affine(x, params.get_or_create("W", {1, 1}, constant_initializer(1)));
  auto s = solvers::Sgd(1e-4f);
  s->set_parameters(params.parameters());
  for (int i = 0; i < 100; ++i) {
    s->zero_grad();
    y->forward();
    y->backward();
    EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
    s->update();
  }
  auto W = params.get("W");
  EXPECT_NEAR(W->data()->get<const float>()[0], 0.99, 1e-5);
  EXPECT_EQ(W->data()->array().dtype(), Dtype::f32) << "fp32 is the master";
  Half pure(1.0f);
  for (int i = 0; i < 100; ++i) pure = Half(static_cast<float>(pure) - 1e-4f);
  EXPECT_EQ(static_cast<float>(pure), 1.0f) << "fp16 alone cannot move it";
  // The forward of the next pass reads the updated weight as half.
  y->forward();
  EXPECT_NEAR(to_doubles(y)[0], 0.99, 1e-3);
}

// The 16-bit copy a bfloat16 or half pass read is rewritten by the update
// (UpdateContext::copy), with the bits get() gives the fp32 master: on one
// team (update), parameter by parameter (backward_and_update), across the
// rules' chunks and the team's split. Weights no pass read as 16 bits get
// no copy, and a variable held under two names keeps none.
TEST(Solver, UpdatesRewriteTheSixteenBitCopyThePassRead) {
  const int64_t n = 70001;  // several chunks, over the team's threshold
  for (Dtype copy : {Dtype::bf16, Dtype::f16}) {
    for (bool during_backward : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(copy)) +
                   (during_backward ? ", backward_and_update" : ", update"));
      std::vector<float> w0(n), g0(n);
      for (int64_t i = 0; i < n; ++i) {
        w0[i] = 0.37f * static_cast<float>(i % 101) - 17.0f;
        g0[i] = 0.01f * static_cast<float>(i % 89) - 0.4f;
      }
      auto w = variable_from({n}, w0, true);
      auto plain = variable_from({n}, w0, true);   // no copy read
      auto shared = variable_from({n}, w0, true);  // under two names
      auto s = solvers::Adam(0.01f);
      s->set_parameters(
          {{"w", w}, {"plain", plain}, {"a", shared}, {"b", shared}});
      for (int step = 0; step < 3; ++step) {
        for (const auto& v : {w, plain, shared}) {
          std::copy(g0.begin(), g0.end(), v->grad()->cast<float>(true));
        }
        w->data()->array().get(copy);  // as a pass in that type reads it
        shared->data()->array().get(copy);
        if (during_backward) {
          // A loss on w alone; the other grads, written before, take
          // their step after backward.
          auto loss = F::sum(w);
          s->backward_and_update(*loss);
        } else {
          s->update();
        }
        const float* master = w->data()->get<const float>();
        ASSERT_TRUE(w->data()->array().has_copy(copy)) << "step " << step;
        std::vector<char> want(n * dtype_size(copy));
        convert(master, Dtype::f32, want.data(), copy, n);
        const void* held = w->data()->array().get(copy);
        ASSERT_EQ(std::memcmp(held, want.data(), want.size()), 0)
            << "step " << step << ": the copy is not the master's rounding";
        EXPECT_FALSE(plain->data()->array().has_copy(copy));
        EXPECT_FALSE(shared->data()->array().has_copy(copy));
        EXPECT_NE(master[5], w0[5]);
      }
    }
  }
}

TEST(Solver, StatesRoundTripAndBadStatesAreRejected) {
  auto s = solvers::Adam(0.01f);
  auto w = param({1, 2, 3}, {1, 1, 1});
  s->set_parameters({{"w", w}});
  s->update();
  auto states = s->states();
  EXPECT_EQ(states.at("w").t, 1u);
  auto other = solvers::Adam(0.01f);
  other->set_parameters({{"w", param({1, 2, 3}, {1, 1, 1})}});
  other->set_states(states);
  EXPECT_EQ(other->states().at("w").t, 1u);

  auto bad = states;
  bad["nope"] = states.at("w");
  EXPECT_THROW(other->set_states(bad), std::invalid_argument);
  bad = states;
  bad["w"].pstate["mean"] = make_ndarray({2});
  try {
    other->set_states(bad);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[Adam::set_states] state 'mean' of 'w' has shape (2,), but "
                 "the parameter has shape (3,)");
  }
  bad = states;
  bad["w"].pstate["velocity"] = make_ndarray({3});
  EXPECT_THROW(other->set_states(bad), std::invalid_argument);
  bad = states;
  bad["w"].pstate.erase("var");
  EXPECT_THROW(other->set_states(bad), std::invalid_argument);
}

TEST(Solver, NegativeLearningRateIsRejected) {
  EXPECT_THROW(solvers::Sgd(-1.0f), std::invalid_argument);
  auto s = solvers::Adam();
  try {
    s->set_learning_rate(-0.1f);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[Adam] learning rate must be >= 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(Solver, DecoupledDecayRejectsAnotherRate) {
  auto s = solvers::AdamW(1e-3f, 0.9f, 0.999f, 1e-8f, 1e-4f);
  s->weight_decay(1e-4f);  // the same rate: accepted, applied in update()
  try {
    s->weight_decay(1e-2f);
    FAIL() << "another rate was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[AdamW::weight_decay] AdamW decays the weights inside "
                 "update() at wd = 0.0001 given at construction; "
                 "weight_decay(0.01) asks for another rate");
  }
}

// Hyper-parameters print with their digits (not std::to_string's 0.000000).
TEST(Solver, BadHyperParametersAreNamedWithTheirValues) {
  try {
    solvers::Adam(1e-3f, -0.05f);
    FAIL() << "a negative beta1 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[Adam] beta1 must be >= 0, got -0.05");
  }
  try {
    solvers::Lamb(1e-3f, 0.9f, 0.999f, 0.5f, 0.25f);
    FAIL() << "gamma_u below gamma_l was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[Lamb] gamma_u must be >= 0.5, got 0.25");
  }
}

// Solver::update()'s gathering of the host's rules (HostRuleBatch): held
// until run(), run on one team with the elements of all split evenly, a
// second rule on the same weights after the first (its state too), and
// what was gathered run when the batch ends without run() (an exception in
// an update): the bits of one application at a time.
TEST(HostRuleBatch, GatheredRulesRunInOrderWithTheBitsOfOneAtATime) {
  const int64_t n = 100000;  // two parameters of it: one team, split
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = 0.001f * static_cast<float>(i % 97) - 0.05f;
  }
  const UpdateContext host;
  auto run = [&](bool gather, bool call_run) {
    std::vector<float> w(n, 1.0f), m(n, 0.0f), w2(n, 1.0f), m2(n, 0.0f);
    {
      detail::HostRuleBatch batch(gather);
      EXPECT_EQ(detail::HostRuleBatch::current(), gather ? &batch : nullptr);
      apply_rule(host, MomentumRule{0.1f, 0.9f}, n, w.data(), g.data(),
                 m.data());
      EXPECT_EQ(w[5], gather ? 1.0f : 1.0f - 0.1f * g[5]);  // held, or run
      // The same weights and state again: after the first, which read m
      // (without the order, the team's second thread would run this
      // application's second half beside the first's).
      apply_rule(host, MomentumRule{0.2f, 0.5f}, n, w.data(), g.data(),
                 m.data());
      apply_rule(host, MomentumRule{0.1f, 0.9f}, n, w2.data(), g.data(),
                 m2.data());
      if (call_run) batch.run();
    }
    EXPECT_EQ(detail::HostRuleBatch::current(), nullptr);
    for (auto* v : {&m, &w2, &m2}) w.insert(w.end(), v->begin(), v->end());
    return w;
  };
  const std::vector<float> one_at_a_time = run(false, false);
  EXPECT_EQ(run(true, true), one_at_a_time);
  EXPECT_EQ(run(true, false), one_at_a_time);  // run as the batch ends
}

}  // namespace
}  // namespace mg::test
