// The graph engine: forward and backward order, accumulation, clear_buffer,
// eager mode, no_grad, and errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

TEST(Graph, GradientsAddWhereAVariableFeedsSeveralFunctions) {
  auto x = variable_from({3}, {1, 2, 3}, true);
  // y = 2x + 3x + x*x: dy/dx = 5 + 2x
  auto y =
      F::add2(F::add2(F::mul_scalar(x, 2), F::mul_scalar(x, 3)), F::mul2(x, x));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{6, 14, 24}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{7, 9, 11}));
}

TEST(Graph, LeafGradsAccumulateAcrossBackwardUntilZeroed) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(x, 3);
  y->forward();
  y->backward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{6, 6}));
  x->grad()->zero();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{3, 3}));
}

TEST(Graph, BackwardSeedsTheLossScale) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(x, 3);
  y->forward();
  y->backward(128.0f);
  EXPECT_EQ(grad_doubles(x), (Doubles{384, 384}));
}

TEST(Graph, IntermediateGradsDoNotLeakBetweenPasses) {
  auto x = variable_from({2}, {1, 2}, true);
  auto h = F::mul_scalar(x, 2);
  auto y = F::mul2(h, h);
  y->forward();
  y->backward();
  x->grad()->zero();
  y->backward();
  // y = (2x)^2, dy/dx = 8x: the same as after one pass, not twice it.
  EXPECT_EQ(grad_doubles(x), (Doubles{8, 16}));
}

TEST(Graph, ClearBufferFreesIntermediatesAndKeepsTheLoss) {
  auto x = variable_from({4}, {1, 2, 3, 4}, true);
  auto h1 = F::mul_scalar(x, 2);
  auto h2 = F::add_scalar(h1, 1);
  auto y = F::mul_scalar(h2, 3);
  y->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
  EXPECT_EQ(h1->data()->array().num_copies(), 0u)
      << "AddScalar's backward does not read h1, so it is freed";
  y->backward(1.0f, /*clear_buffer=*/true);
  EXPECT_EQ(grad_doubles(x), (Doubles{6, 6, 6, 6}));
  EXPECT_EQ(h2->data()->array().num_copies(), 0u);
  EXPECT_EQ(h2->grad()->array().num_copies(), 0u);
  EXPECT_EQ(to_doubles(y), (Doubles{9, 15, 21, 27})) << "the root is kept";
}

TEST(Graph, ClearNoNeedGradKeepsWhatBackwardReads) {
  auto x = variable_from({2}, {1, 2}, true);
  auto h = F::mul_scalar(x, 1);
  auto y = F::mul2(h, h);  // Mul2's backward reads h
  y->forward(false, true);
  EXPECT_GT(h->data()->array().num_copies(), 0u);
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{2, 4}));
}

// Under clear_buffer a unary function's input grad takes over its output
// grad's buffer: backward through a chain of them holds one grad buffer,
// not two.
TEST(Graph, UnaryBackwardSharesTheGradBufferUnderClearBuffer) {
  const int64_t n = int64_t{1} << 20;  // 4 MB of float per array
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = (i % 7) - 3.0f;
  auto x = variable_from({n}, values);
  auto b = variable_from({1}, {0.5f}, true);
  auto y = F::sum(F::mul_scalar(F::relu(F::add2(x, b)), 2.0f));
  y->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
  const size_t before = cpu_memory_stats().in_use;
  CpuAllocator::instance().reset_peak();
  y->backward(1.0f, /*clear_buffer=*/true);
  const double extra = static_cast<double>(cpu_memory_stats().peak - before);
  double positive = 0;
  for (float v : values) positive += v + 0.5f > 0;
  EXPECT_EQ(grad_doubles(b)[0], 2.0 * positive);
  // One grad array goes from mul_scalar's output to add2's. With separate
  // grads, mul_scalar's and relu's backward would each hold two.
  EXPECT_LT(extra, 1.5 * n * sizeof(float));
}

// Under clear_buffer one of Add2's input grads takes over its output grad's
// buffer (a residual's backward copies one grad, not two), in every type,
// with the values unchanged: against Sub2, the same graph whose grads do not
// share, backward holds one array less at its peak.
TEST(Graph, Add2BackwardSharesTheGradBufferUnderClearBuffer) {
  const int64_t n = int64_t{1} << 20;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = (i % 7) - 3.0f;
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    // a and b are large and their grads go only to the biases w and v, so
    // that Add2's step is backward's peak; y is seeded in its own type (no
    // fp32 loss in between).
    auto peak_and_grads = [&](bool add) {
      auto x = variable_from({n}, values, /*need_grad=*/false);
      auto w = variable_from({1}, {0.25f}, true);
      auto v = variable_from({1}, {-0.5f}, true);
      auto a = F::add2(x, w), b = F::add2(x, v);
      auto s = add ? F::add2(a, b) : F::sub2(a, b);
      auto y = F::mul_scalar(s, 1.0f / 4096);
      y->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
      const size_t before = cpu_memory_stats().in_use;
      CpuAllocator::instance().reset_peak();
      y->backward(1.0f, /*clear_buffer=*/true);
      const size_t peak = cpu_memory_stats().peak - before;
      return std::make_tuple(peak, grad_doubles(w)[0], grad_doubles(v)[0]);
    };
    const auto [add_peak, add_w, add_v] = peak_and_grads(true);
    const auto [sub_peak, sub_w, sub_v] = peak_and_grads(false);
    // Each element's grad 2^-12 (or -2^-12 for Sub2's v), summed: 256.
    EXPECT_EQ(add_w, 256.0);
    EXPECT_EQ(add_v, 256.0);
    EXPECT_EQ(sub_w, 256.0);
    EXPECT_EQ(sub_v, -256.0);
    const size_t array = n * dtype_size(default_context().type_config());
    EXPECT_LT(add_peak + array / 2, sub_peak);  // one array (and bytes) less
  }
}

// With clear_buffer, an intermediate's data goes as soon as the last
// backward that reads it has run, not when its own function's backward
// does. Here v = 2x is read by mul2's backward only; a probe on another
// branch, whose backward runs between mul2's and v's producer's, sees it
// gone.
constexpr FunctionDecl kProbe{"Probe", "probe", {Port{"x"}}, {Port{"y"}}};
class Probe : public Function {
 public:
  explicit Probe(Variable* watched) : watched_(watched) { set_decl(kProbe); }
  size_t copies_seen = 99;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    out[0]->reshape(in[0]->shape());
  }
  void forward_impl(const Variables& in, const Variables& out) override {
    const float* a = in[0]->data()->get<const float>();
    std::copy(a, a + in[0]->size(), out[0]->data()->cast<float>(true));
  }
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>&) override {
    copies_seen = watched_->data()->array().num_copies();
    if (!propagate_down[0]) return;
    const float* g = out[0]->grad()->get<const float>();
    std::copy(g, g + in[0]->size(), in[0]->grad()->cast<float>(true));
  }

 private:
  Variable* watched_;
};

TEST(Graph, ClearBufferFreesDataAfterItsLastBackwardReader) {
  for (bool clear : {false, true}) {
    auto x = variable_from({3}, {1, 2, 3}, true);
    auto z = variable_from({3}, {4, 5, 6}, true);
    auto v = F::mul_scalar(x, 2.0f);
    auto probe = std::make_shared<Probe>(v.get());
    auto w = connect(
        std::make_shared<FunctionNode>(probe, std::vector<VariablePtr>{z}),
        1)[0];
    auto y = F::sum(F::mul2(v, w));
    y->forward();
    y->backward(1.0f, clear);
    EXPECT_EQ(probe->copies_seen, clear ? 0u : 1u) << "clear " << clear;
    EXPECT_EQ(grad_doubles(x), (Doubles{8, 10, 12}));
    EXPECT_EQ(grad_doubles(z), (Doubles{2, 4, 6}));
  }
}

TEST(Graph, ForwardClearBufferFreesEverythingBehindIt) {
  auto x = variable_from({2}, {1, 2});
  auto h = F::mul_scalar(x, 2);
  auto y = F::mul2(h, h);
  y->forward(/*clear_buffer=*/true);
  EXPECT_EQ(h->data()->array().num_copies(), 0u);
  EXPECT_EQ(to_doubles(y), (Doubles{4, 16}));
}

TEST(Graph, PersistentIntermediatesSurviveClearBuffer) {
  auto x = variable_from({2}, {1, 2}, true);
  auto h = F::mul_scalar(x, 2);
  h->set_persistent(true);
  auto y = F::mul_scalar(h, 3);
  y->forward(true);
  y->backward(1.0f, true);
  EXPECT_EQ(to_doubles(h), (Doubles{2, 4}));
}

TEST(Graph, AutoForwardComputesAsTheGraphIsBuilt) {
  AutoForwardGuard eager(true);
  auto x = variable_from({2}, {1, 4});
  auto y = F::add_scalar(F::mul_scalar(x, 2), 1);
  EXPECT_EQ(to_doubles(y), (Doubles{3, 9}));
}

TEST(Graph, NoGradCutsBackward) {
  auto x = variable_from({2}, {1, 2}, true);
  VariablePtr frozen;
  {
    NoGradGuard no_grad;
    frozen = F::mul_scalar(x, 5);
  }
  EXPECT_FALSE(frozen->need_grad());
  auto y = F::add2(F::mul_scalar(x, 2), frozen);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{2, 2}));
}

TEST(Graph, NeedGradPropagatesAndLeavesWithoutItGetNone) {
  auto x = variable_from({2}, {1, 2}, false);
  auto w = variable_from({2}, {3, 4}, true);
  auto y = F::mul2(x, w);
  EXPECT_TRUE(y->need_grad());
  EXPECT_FALSE(F::mul_scalar(x, 2)->need_grad());
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(w), (Doubles{1, 2}));
  EXPECT_TRUE(x->grad()->array().zeroing()) << "x's grad was never written";
}

TEST(Graph, BranchesTheLossDoesNotReachGetNoGrad) {
  auto x = variable_from({2}, {1, 2}, true);
  auto h = F::mul_scalar(x, 2);
  auto unused = F::mul_scalar(h, 10);  // a second consumer outside the loss
  auto y = F::mul_scalar(h, 3);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{6, 6}));
}

TEST(Graph, DeepChainsDoNotOverflowTheStack) {
  auto x = variable_from({1}, {1}, true);
  VariablePtr h = x;
  for (int i = 0; i < 20000; ++i) h = F::add_scalar(h, 1);
  h->forward(true);
  EXPECT_EQ(to_doubles(h)[0], 20001.0);
  h->backward(1.0f, true);
  EXPECT_EQ(grad_doubles(x)[0], 1.0);
}

TEST(Graph, BackwardWithAnArrayOfTheWrongShapeIsAnError) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(x, 2);
  y->set_name("y");
  y->forward();
  try {
    y->backward(make_ndarray({3}));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[backward] the grad has shape (3,), but variable 'y' has "
                 "shape (2,)");
  }
}

TEST(Graph, BackwardCopiesTheSeedArray) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::mul_scalar(x, 2);
  y->forward();
  auto seed = make_ndarray({2});
  seed->cast<float>()[0] = 3;
  seed->cast<float>()[1] = 4;
  y->backward(seed);
  EXPECT_EQ(grad_doubles(x), (Doubles{6, 8}));
  EXPECT_NE(y->grad()->array_ptr(), seed->array_ptr());
  // A later seed fills the loss's grad, never the caller's array.
  y->backward(5.0f);
  EXPECT_EQ(seed->get<const float>()[0], 3.0f);
  EXPECT_EQ(seed->get<const float>()[1], 4.0f);
  // Writing the caller's array after backward changes nothing of the graph.
  seed->cast<float>()[0] = 100;
  EXPECT_EQ(grad_doubles(y), (Doubles{5, 5}));
}

TEST(Graph, UnlinkCutsTheGrad) {
  auto x = variable_from({2}, {1, 2}, true);
  auto h = F::mul_scalar(x, 2);
  ASSERT_TRUE(h->need_grad());
  h->forward();
  h->unlink();
  EXPECT_EQ(h->parent(), nullptr);
  EXPECT_FALSE(h->need_grad()) << "a leaf cut from the graph asks no grad";
  auto y = F::mul_scalar(h, 3);
  EXPECT_FALSE(y->need_grad());
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{6, 12})) << "the data stays";
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{0, 0}));
  EXPECT_TRUE(h->grad()->array().zeroing()) << "no grad was written to h";
}

TEST(Graph, SetDataChecksTheShape) {
  auto x = make_variable({2, 3});
  x->set_name("x");
  EXPECT_THROW(x->set_data(make_ndarray({3, 2})), std::invalid_argument);
  x->set_data(make_ndarray({2, 3}));
}

TEST(Graph, ADroppedOutputIsRecreatedForForward) {
  auto x = variable_from({2}, {1, 2});
  auto y = F::mul_scalar(F::add_scalar(x, 1), 2);  // the middle is dropped
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4, 6}));
}

TEST(Graph, HalfContextStoresOutputsInHalf) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2}, {1, 2});
  auto y = F::relu(x);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f16);
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2}));
  EXPECT_TRUE(x->data()->array().has_copy(Dtype::f16))
      << "the input was read through get(half)";
  EXPECT_TRUE(x->data()->array().has_copy(Dtype::f32))
      << "get keeps the fp32 master";
}

}  // namespace
}  // namespace mg::test
