// Solver::backward_and_update (the update inside backward): the same step
// as backward then update(), each grad zeroed and its memory given back as
// soon as its parameter is updated, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

std::vector<float> data_of(const mg::Variable& v) {
  const float* d = v.data()->get<const float>();
  return std::vector<float>(d, d + v.size());
}

// An MLP whose fc2 weights are read by two layers (tied): their grad is
// final, and the weights free to change, only after the second reader's
// backward (the first in forward order).
struct Net {
  mg::ParameterScope params;
  mg::VariablePtr x, t, loss;
  Net(const std::string& type_config, int width, int features = 12) {
    mg::ContextGuard ctx(mg::context("cpu", type_config));
    mg::seed(5);
    x = mg::make_variable({8, features});
    t = mg::make_variable({8, 1});
    float* xs = x->data()->cast<float>();
    for (int i = 0; i < 8 * features; ++i) {
      xs[i] = 0.1f * ((i * 7) % 13) - 0.6f;
    }
    float* ts = t->data()->cast<float>();
    for (int i = 0; i < 8; ++i) ts[i] = static_cast<float>(i % 4);
    auto h = F::tanh(PF::affine(x, width, params["fc1"]));
    h = F::tanh(PF::affine(h, width, params["fc2"]));
    h = F::tanh(PF::affine(h, width, params["fc2"]));
    loss =
        F::mean(F::softmax_cross_entropy(PF::affine(h, 4, params["fc3"]), t));
  }
};

using MakeSolver = std::function<mg::SolverPtr()>;

// Three steps of backward then update against three of
// backward_and_update(scale, weight_decay) from the same start: the same
// weights, bit for bit (the same grads reach the same kernels). The update
// after backward is update(1 / scale), or, with weight decay (which goes
// into unscaled grads), scale_grad(1 / scale), weight_decay and update().
void expect_same_steps(const std::string& type_config, const MakeSolver& make,
                       float scale, float weight_decay = 0.0f, int width = 6) {
  Net after(type_config, width), inside(type_config, width);
  auto s_after = make(), s_inside = make();
  s_after->set_parameters(after.params.parameters());
  s_inside->set_parameters(inside.params.parameters());
  s_inside->zero_grad();
  for (int step = 0; step < 3; ++step) {
    s_after->zero_grad();
    after.loss->forward(false, true);
    after.loss->backward(scale, true);
    if (weight_decay != 0.0f) {
      if (scale != 1.0f) s_after->scale_grad(1.0f / scale);
      s_after->weight_decay(weight_decay);
      s_after->update();
    } else {
      s_after->update(1.0f / scale);
    }
    inside.loss->forward(false, true);
    s_inside->backward_and_update(*inside.loss, scale, weight_decay);
  }
  const auto pa = after.params.parameters(), pi = inside.params.parameters();
  ASSERT_EQ(pa.size(), pi.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(data_of(*pa[i].second), data_of(*pi[i].second))
        << type_config << ", " << s_after->name() << ", scale " << scale
        << ", weight decay " << weight_decay << ": " << pa[i].first;
    EXPECT_TRUE(pi[i].second->grad()->array().zeroing())
        << pi[i].first << ": grad not zeroed after its update";
  }
  EXPECT_EQ(s_after->t(), 3u);
  EXPECT_EQ(s_inside->t(), 3u);
}

}  // namespace

TEST(BackwardAndUpdate, SameStepsAsUpdateAfterBackward) {
  expect_same_steps(
      "float", [] { return mg::solvers::Adam(0.01f); }, 1.0f);
  expect_same_steps(
      "float", [] { return mg::solvers::Sgd(0.1f); }, 1.0f);
  // Decoupled decay runs inside the update.
  expect_same_steps(
      "float",
      [] { return mg::solvers::AdamW(0.01f, 0.9f, 0.999f, 1e-8f, 0.05f); },
      1.0f);
}

// update() runs every parameter's rule on one team, the elements of all
// split evenly (HostRuleBatch), where backward_and_update() runs each
// parameter's as its grad is done: at width 200 (43,604 weights, fc2's
// 40,000 split between the threads) the same bits still.
TEST(BackwardAndUpdate, OneTeamForAllParametersGivesTheSameBits) {
  expect_same_steps(
      "float", [] { return mg::solvers::Adam(0.01f); }, 1.0f, 0.0f, 200);
  expect_same_steps(
      "float", [] { return mg::solvers::Momentum(0.1f, 0.9f); }, 1.0f, 0.0f,
      200);
  expect_same_steps(
      "half", [] { return mg::solvers::Adam(0.01f); }, 64.0f, 0.05f, 200);
}

TEST(BackwardAndUpdate, StaticLossScaleUnscalesInsideTheUpdate) {
  expect_same_steps(
      "half", [] { return mg::solvers::Adam(0.01f); }, 64.0f);
  expect_same_steps(
      "bfloat16", [] { return mg::solvers::Adam(0.01f); }, 8.0f);
}

TEST(BackwardAndUpdate, FusedWeightDecay) {
  expect_same_steps(
      "float", [] { return mg::solvers::Lion(1e-3f); }, 1.0f, 0.1f);
}

TEST(BackwardAndUpdate, L2WeightDecayOnUnscaledGrads) {
  // weight_decay(rate) between backward and update(), on grads unscaled
  // first where a loss scale was used (as the loss scaler does).
  expect_same_steps(
      "float", [] { return mg::solvers::Adam(0.01f); }, 1.0f, 0.05f);
  expect_same_steps(
      "half", [] { return mg::solvers::Adam(0.01f); }, 64.0f, 0.05f);
}

TEST(BackwardAndUpdate, DecoupledDecayAtAnotherRateIsAnError) {
  Net net("float", 6);
  auto solver = mg::solvers::AdamW(0.01f, 0.9f, 0.999f, 1e-8f, 0.05f);
  solver->set_parameters(net.params.parameters());
  solver->zero_grad();
  net.loss->forward();
  const auto before = data_of(*net.params.get("fc1/affine/W"));
  try {
    solver->backward_and_update(*net.loss, 1.0f, 0.01f);
    FAIL() << "another decay rate accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[AdamW::backward_and_update] AdamW "
                                         "decays the weights inside update() "
                                         "at wd = 0.05 given at "
                                         "construction; weight_decay = 0.01 "
                                         "asks for another rate"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(data_of(*net.params.get("fc1/affine/W")), before);
}

TEST(BackwardAndUpdate, TwoNamesAndLeavesThatAreNotParameters) {
  // fc2's weights held under a second name too: two parameters, each with
  // its own state, as update() steps them. x needs a grad but is no
  // parameter: it keeps its grad.
  auto run = [](bool inside) {
    Net net("float", 6);
    net.x->set_need_grad(true);
    auto params = net.params.parameters();
    params.emplace_back("alias", net.params.get("fc2/affine/W"));
    auto solver = mg::solvers::Adam(0.01f);
    solver->set_parameters(params);
    solver->zero_grad();
    net.x->grad()->zero();
    net.loss->forward();
    if (inside) {
      solver->backward_and_update(*net.loss);
    } else {
      net.loss->backward(1.0f, true);
      solver->update();
    }
    EXPECT_FALSE(net.x->grad()->array().zeroing()) << "x's grad was zeroed";
    std::vector<std::vector<float>> out{data_of(*net.x) /* unchanged */};
    const float* gx = net.x->grad()->get<const float>();
    out.emplace_back(gx, gx + net.x->size());
    for (const auto& [name, v] : params) out.push_back(data_of(*v));
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(BackwardAndUpdate, UpdatesAnEarlierGradBackwardDoesNotReach) {
  // A parameter outside the loss's graph with a grad written before the
  // call: update() would step it, so the call does too.
  Net net("float", 6);
  auto extra = mg::make_variable({3}, /*need_grad=*/true);
  extra->data()->fill(1.0);
  extra->grad()->fill(0.5);
  auto params = net.params.parameters();
  params.emplace_back("extra", extra);
  auto solver = mg::solvers::Sgd(0.1f);
  solver->set_parameters(params);
  net.loss->forward();
  solver->backward_and_update(*net.loss);
  EXPECT_EQ(data_of(*extra), std::vector<float>(3, 1.0f - 0.1f * 0.5f));
  EXPECT_TRUE(extra->grad()->array().zeroing());
}

TEST(BackwardAndUpdate, HoldsFewerGradsAtOnce) {
  // Wide layers: the grads dominate the pass's memory. With the update
  // inside backward, fc2's grad goes back before fc1's is made.
  auto peak_bytes = [](bool inside) {
    Net net("float", 256, 256);
    auto solver = mg::solvers::Adam(1e-3f);
    solver->set_parameters(net.params.parameters());
    auto step = [&](bool measure) {
      solver->zero_grad();
      net.loss->forward(false, true);
      mg::CpuAllocator::instance().reset_peak();
      const size_t start = mg::cpu_memory_stats().in_use;
      if (inside) {
        solver->backward_and_update(*net.loss);
      } else {
        net.loss->backward(1.0f, true);
        solver->update();
      }
      return measure ? mg::cpu_memory_stats().peak - start : 0;
    };
    step(false);  // the first update makes Adam's states
    return step(true);
  };
  const size_t after = peak_bytes(false), inside = peak_bytes(true);
  const size_t layer_grad = 256 * 256 * sizeof(float);
  // Less by about one layer's grad (activations freed meanwhile blur it).
  EXPECT_LE(inside + layer_grad * 3 / 4, after)
      << "inside backward " << inside << " bytes, after " << after;
}

TEST(BackwardAndUpdate, BadLossScaleChangesNothing) {
  Net net("float", 6);
  auto solver = mg::solvers::Adam(0.01f);
  solver->set_parameters(net.params.parameters());
  solver->zero_grad();
  net.loss->forward();
  const auto before = data_of(*net.params.get("fc1/affine/W"));
  for (float bad : {0.0f, -2.0f, std::nanf(""), INFINITY}) {
    try {
      solver->backward_and_update(*net.loss, bad);
      FAIL() << "loss_scale " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("[Adam::backward_and_update] loss_scale"),
                std::string::npos)
          << what;
    }
  }
  EXPECT_EQ(data_of(*net.params.get("fc1/affine/W")), before);
  EXPECT_EQ(solver->t(), 0u);
}
