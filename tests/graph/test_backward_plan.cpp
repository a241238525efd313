// The backward plan alone: which functions run, which grads are added to,
// which buffers are shared and freed, decided before any grad is computed;
// and running a plan is backward().
#include <gtest/gtest.h>

#include <algorithm>

#include <mixgraph/graph/backward_plan.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

namespace F = functions;
using detail::plan_backward;
using detail::PlannedStep;

const PlannedStep& step_of(const std::vector<PlannedStep>& plan,
                           const std::string& name) {
  for (const auto& p : plan) {
    if (p.node->function().name() == name) return p;
  }
  throw std::runtime_error("no step " + name);
}

bool contains(const Variables& vars, const VariablePtr& v) {
  return std::find(vars.begin(), vars.end(), v.get()) != vars.end();
}

TEST(BackwardPlan, RunsInReverseOrderAndSharesInPlaceGrads) {
  auto x = make_variable({2, 3}, true);
  auto h = F::relu(x);
  auto t = F::tanh(h);
  auto y = F::sum(t);
  y->forward();
  const auto plan = plan_backward(y.get(), /*clear_buffer=*/true);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].node->function().name(), "Sum");
  EXPECT_EQ(plan[1].node->function().name(), "Tanh");
  EXPECT_EQ(plan[2].node->function().name(), "ReLU");
  for (const auto& p : plan) {
    EXPECT_TRUE(p.run);
    EXPECT_EQ(p.propagate_down, std::vector<bool>{true});
    EXPECT_EQ(p.accum, std::vector<bool>{false});
  }
  // Tanh writes h's grad in place of t's (both intermediates); ReLU's input
  // is the leaf x, which keeps its own grad; Sum's output is the root.
  EXPECT_EQ(plan[1].share_input, 0);
  EXPECT_EQ(plan[2].share_input, -1);
  EXPECT_EQ(plan[0].share_input, -1);
  // Each intermediate's grad is freed once, by its producer; the root's and
  // the leaf's never.
  EXPECT_TRUE(contains(plan[1].free_grads, t));
  EXPECT_TRUE(contains(plan[2].free_grads, h));
  for (const auto& p : plan) {
    EXPECT_FALSE(contains(p.free_grads, y));
    EXPECT_FALSE(contains(p.free_data, x));
    EXPECT_FALSE(contains(p.free_data, y));
  }
  // Without clear_buffer nothing is shared or freed.
  for (const auto& p : plan_backward(y.get(), false)) {
    EXPECT_EQ(p.share_input, -1);
    EXPECT_TRUE(p.free_data.empty());
    EXPECT_TRUE(p.free_grads.empty());
  }
}

TEST(BackwardPlan, TheSecondReaderOfAVariableAddsToItsGrad) {
  auto x = make_variable({4}, true);
  auto h = F::relu(x);
  auto y = F::sum(F::add2(F::tanh(h), F::sigmoid(h)));
  y->forward();
  const auto plan = plan_backward(y.get(), true);
  // Backward runs Sigmoid (created last) before Tanh: Sigmoid writes h's
  // grad, Tanh adds to it; neither may share its buffer then.
  const PlannedStep& sigmoid = step_of(plan, "Sigmoid");
  const PlannedStep& tanh = step_of(plan, "Tanh");
  EXPECT_EQ(sigmoid.accum, std::vector<bool>{false});
  EXPECT_EQ(tanh.accum, std::vector<bool>{true});
  EXPECT_EQ(tanh.share_input, -1);
  EXPECT_LT(&sigmoid - plan.data(), &tanh - plan.data());
}

// Add2's grads are dy itself, so either input's grad may take dy's buffer
// (the first one read once and not added to); Mul2's are not.
TEST(BackwardPlan, Add2SharesItsGradBuffer) {
  auto x = make_variable({4}, true);
  auto a = F::mul_scalar(x, 2.0f), b = F::mul_scalar(x, 3.0f);
  auto y = F::sum(F::mul2(F::add2(a, b), F::add2(a, b)));
  y->forward();
  const auto plan = plan_backward(y.get(), true);
  const PlannedStep& mul = step_of(plan, "Mul2");
  EXPECT_EQ(mul.share_input, -1);
  // Two Add2 steps on (a, b): the first to run writes a's and b's grads
  // and shares one of them; the second adds to both and shares none.
  std::vector<int> shares;
  for (const auto& p : plan) {
    if (p.node->function().name() == "Add2") shares.push_back(p.share_input);
  }
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0], 0);
  EXPECT_EQ(shares[1], -1);
  // An input read twice by the same Add2 never takes the buffer.
  auto z = F::sum(F::add2(a, a));
  z->forward();
  EXPECT_EQ(step_of(plan_backward(z.get(), true), "Add2").share_input, -1);
}

TEST(BackwardPlan, FunctionsWithoutAGradToComputeDoNotRun) {
  auto data = make_variable({3}, /*need_grad=*/false);
  auto w = make_variable({3}, true);
  auto features = F::exp(data);  // reads no variable that needs a grad
  auto y = F::sum(F::mul2(features, w));
  y->forward();
  const auto plan = plan_backward(y.get(), false);
  EXPECT_FALSE(step_of(plan, "Exp").run);
  const PlannedStep& mul = step_of(plan, "Mul2");
  EXPECT_TRUE(mul.run);
  EXPECT_EQ(mul.propagate_down, (std::vector<bool>{false, true}));
}

TEST(BackwardPlan, OutputsNoPathReachesGetZeroGrads) {
  auto x = make_variable({4, 2}, true);
  auto parts = F::split(x, 1);
  ASSERT_EQ(parts.size(), 2u);
  auto y = F::sum(parts[0]);
  y->forward();
  const auto plan = plan_backward(y.get(), false);
  const PlannedStep& split = step_of(plan, "Split");
  EXPECT_TRUE(split.run);
  EXPECT_EQ(split.zero_outputs, std::vector<int>{1});
}

TEST(BackwardPlan, RunningAPlanIsBackward) {
  auto make = [](const VariablePtr& x) {
    auto h = F::relu(F::mul_scalar(x, 3.0f));
    return F::sum(F::add2(F::tanh(h), F::mul2(h, h)));
  };
  auto x1 = make_variable({5}, true);
  auto x2 = make_variable({5}, true);
  for (int i = 0; i < 5; ++i) {
    x1->data()->cast<float>()[i] = x2->data()->cast<float>()[i] =
        0.3f * static_cast<float>(i) - 0.5f;
  }
  auto y1 = make(x1), y2 = make(x2);
  y1->forward();
  y2->forward();
  x1->grad()->zero();
  x2->grad()->zero();
  y1->backward(1.0f, true);
  y2->grad()->fill(1.0f);
  auto plan = plan_backward(y2.get(), true);
  detail::run_backward(plan, "");
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(x1->grad()->get<const float>()[i],
              x2->grad()->get<const float>()[i]);
  }
}

}  // namespace
}  // namespace mg
