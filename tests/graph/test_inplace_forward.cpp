// Forward in place: under clearing, a unary function's output takes over
// the buffer of an input that would be freed right after it (the engine's
// takes_input_buffer), and nowhere else; the values and grads are those of
// a run without clearing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include <mixgraph/mixgraph.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

// The buffer a variable's data is in (compared, never dereferenced; no
// reference is kept, which would stop the engine from taking it).
const SyncedArray* buffer(const VariablePtr& v) {
  return v->data()->array_ptr().get();
}

struct Graph {
  VariablePtr x, w, h, y, loss;
  std::vector<VariablePtr> named;  // variables a case looks at
};

// x (2, 3) -> affine (w: 3 x 4) -> h -> build(h) -> y -> sum(y^2).
Graph make(const std::function<VariablePtr(const VariablePtr&)>& build) {
  Graph g;
  g.x = variable_from({2, 3}, {0.5f, -1.0f, 2.0f, -0.25f, 1.5f, -2.0f}, true);
  g.w = variable_from({3, 4},
                      {0.3f, -0.2f, 0.1f, 0.4f, -0.5f, 0.25f, 0.6f, -0.1f, 0.2f,
                       0.35f, -0.45f, 0.05f},
                      true);
  g.h = F::affine(g.x, g.w, nullptr);
  g.y = build(g.h);
  g.loss = F::sum(F::mul2(g.y, g.y));
  return g;
}

// Forward with the clearing flags, backward; checks the output and the
// grads against a run of the same graph without clearing.
void expect_same_as_unclearing(
    Graph& g, const std::function<VariablePtr(const VariablePtr&)>& build,
    bool clear_buffer, bool clear_no_need_grad) {
  Graph ref = make(build);
  ref.loss->forward();
  ref.loss->backward();
  g.loss->forward(clear_buffer, clear_no_need_grad);
  EXPECT_EQ(to_doubles(g.loss), to_doubles(ref.loss));
  if (clear_buffer) return;  // forward for inference: no backward
  g.loss->backward();
  EXPECT_EQ(grad_doubles(g.x), grad_doubles(ref.x));
  EXPECT_EQ(grad_doubles(g.w), grad_doubles(ref.w));
}

TEST(InPlaceForward, ReLUWritesOverTheAffineOutputItFrees) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    const auto build = [](const VariablePtr& h) { return F::relu(h); };
    Graph g = make(build);
    g.loss->forward();  // the buffers exist
    const SyncedArray* h_buffer = buffer(g.h);
    expect_same_as_unclearing(g, build, false, true);
    EXPECT_EQ(buffer(g.y), h_buffer);  // ReLU wrote over h
    EXPECT_NE(buffer(g.h), h_buffer);  // h let go (it reads as zeros)
  }
}

// Reshape moves nothing where it runs in place: y takes h's buffer in
// forward, and h's grad takes y's grad's in backward (the grads then equal
// those of a run that copies).
TEST(InPlaceForward, ReshapeTakesTheBufferOfWhatItReshapes) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    const auto build = [](const VariablePtr& h) {
      return F::reshape(h, {4, 2});
    };
    Graph g = make(build);
    g.loss->forward();
    const SyncedArray* h_buffer = buffer(g.h);
    expect_same_as_unclearing(g, build, false, true);
    EXPECT_EQ(buffer(g.y), h_buffer);
    EXPECT_EQ(to_doubles(g.y).size(), 8u);
  }
  // Without clearing, y is a copy: h keeps its own buffer.
  const auto build = [](const VariablePtr& h) { return F::reshape(h, {8}); };
  Graph g = make(build);
  g.loss->forward();
  EXPECT_NE(buffer(g.y), buffer(g.h));
}

TEST(InPlaceForward, NotOverAnInputBackwardReads) {
  // Sin's backward reads its input: h stays for it.
  const auto sin = [](const VariablePtr& h) { return F::sin(h); };
  Graph g = make(sin);
  g.loss->forward();
  const SyncedArray* h_buffer = buffer(g.h);
  expect_same_as_unclearing(g, sin, false, true);
  EXPECT_NE(buffer(g.y), h_buffer);
  // Sigmoid's backward reads its output, which ReLU reads next.
  const auto sigmoid_relu = [](const VariablePtr& h) {
    return F::relu(F::sigmoid(h));
  };
  Graph s = make(sigmoid_relu);
  s.loss->forward();
  const SyncedArray* s_buffer = buffer(s.y->parent()->inputs()[0]);
  expect_same_as_unclearing(s, sigmoid_relu, false, true);
  EXPECT_NE(buffer(s.y), s_buffer);
}

TEST(InPlaceForward, OnlyTheLastReaderTakesTheBuffer) {
  // h is read by ReLU, then by Tanh: only Tanh, its last reader, takes it.
  VariablePtr relu, tanh;
  const auto both = [&](const VariablePtr& h) {
    relu = F::relu(h);
    tanh = F::tanh(h);
    return F::add2(relu, tanh);
  };
  Graph g = make(both);
  const VariablePtr g_relu = relu, g_tanh = tanh;  // the reference's next
  g.loss->forward();
  const SyncedArray* h_buffer = buffer(g.h);
  expect_same_as_unclearing(g, both, false, true);
  EXPECT_NE(buffer(g_relu), h_buffer);
  EXPECT_EQ(buffer(g_tanh), h_buffer);
}

TEST(InPlaceForward, NotWithoutClearingNorWhenTheDataIsHeld) {
  const auto build = [](const VariablePtr& h) { return F::relu(h); };
  Graph g = make(build);
  g.loss->forward();
  const SyncedArray* h_buffer = buffer(g.h);
  expect_same_as_unclearing(g, build, false, false);
  EXPECT_NE(buffer(g.y), h_buffer);
  EXPECT_EQ(buffer(g.h), h_buffer);

  Graph held = make(build);
  held.loss->forward();
  const NdArrayPtr h_data = held.h->data();  // someone holds h's data
  expect_same_as_unclearing(held, build, false, true);
  EXPECT_NE(buffer(held.y), h_data->array_ptr().get());
}

TEST(InPlaceForward, ClearBufferForInferenceTakesWhatBackwardWouldRead) {
  // forward(clear_buffer): no backward follows, so Sin may take h.
  const auto sin = [](const VariablePtr& h) { return F::sin(h); };
  Graph g = make(sin);
  g.loss->forward();
  const SyncedArray* h_buffer = buffer(g.h);
  expect_same_as_unclearing(g, sin, true, false);
  EXPECT_EQ(buffer(g.y), h_buffer);
}

TEST(InPlaceForward, AFailedForwardLeavesNoSharedBuffer) {
  // Log of a negative number is nan: check_finite throws in the step that
  // took h's buffer. h must let go of it all the same, or a later forward
  // would write Log's output over h, which Log's backward reads.
  const auto log = [](const VariablePtr& h) { return F::log(h); };
  Graph g = make(log);
  {
    CheckFiniteGuard check;
    EXPECT_THROW(g.loss->forward(true, false), NonFiniteError);
  }
  EXPECT_NE(buffer(g.y), buffer(g.h));
  g.loss->forward();
  for (double v : to_doubles(g.h)) EXPECT_FALSE(std::isnan(v));
}

}  // namespace
}  // namespace mg::test
