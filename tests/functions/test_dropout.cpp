// Dropout: the mask it shows, its gradient, its rate and its seeding.
//
// Tolerances: the checker's defaults (half 1e-2, bfloat16 5e-2). With a
// fixed seed the mask is the same in every type, so a reduced run differs
// from float only by rounding x, dy and y: x / (1 - p) for x in [-1, 1] and
// p = 0.3 stays below 1.5, where half is within 4e-4 and bfloat16 3e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::dropout_tests {
namespace {

VariablePtr uniform(const Shape& shape, float low, float high, uint32_t seed,
                    bool need_grad = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  auto x = make_variable(shape, need_grad);
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) p[i] = dist(rng);
  return x;
}

// The mask as documented (Dropout::draw_mask), from the standard's mt19937
// alone: element i is kept when the i-th 32-bit draw of the function's
// generator is at least p 2^32.
std::vector<bool> documented_mask(float p, uint32_t seed, size_t n) {
  std::mt19937 g(seed);
  const auto threshold =
      static_cast<uint64_t>(std::ldexp(static_cast<double>(p), 32));
  std::vector<bool> keep(n);
  for (size_t i = 0; i < n; ++i) keep[i] = g() >= threshold;
  return keep;
}

const bool kDropoutCheckerWithAFixedSeed = harness::add(
    decl::Dropout,
    {{"checker with a fixed seed",
      [] {
        // The checker rebuilds the graph for each evaluation; a fixed seed
        // gives every build the same mask, the documented one (below), so
        // the reference, its numerical gradient and the reduced types all
        // see that mask.
        FunctionCheck c;
        c.inputs = {{{4, 5, 6}}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::dropout(in[0], 0.3f, 42);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          const std::vector<bool> keep = documented_mask(0.3f, 42, 120);
          Doubles y(in[0].size());
          for (size_t i = 0; i < y.size(); ++i) {
            y[i] = keep[i] ? in[0][i] / (1.0 - 0.3f) : 0.0;
          }
          return y;
        };
        return c;
      },
      false,
      true,
      {},
      // The harness compares a graph set up again with a fresh one; Dropout
      // draws a new mask at each forward, so no fresh graph has the same one.
      "a new mask at each forward (Dropout.ANewBatchSizeKeepsTheMaskRule "
      "checks "
      "it at b -> b + 3 -> 1)"}});

TEST(Dropout, ForwardMatchesTheMaskItShows) {
  const float p = 0.3f;
  // x in [0.5, 1.5): never zero, so a zero in y can only be a dropped value.
  auto x = uniform({50, 40}, 0.5f, 1.5f, 1, true);
  auto y = F::dropout(x, p, 7);
  y->forward();
  const Doubles xd = to_doubles(x), yd = to_doubles(y);
  const auto& mask = static_cast<Dropout&>(y->parent()->function()).mask();
  ASSERT_EQ(mask.size(), xd.size());
  Doubles expected(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) {
    const bool kept = yd[i] != 0.0;
    EXPECT_EQ(kept, mask[i] != 0) << i;
    expected[i] = kept ? xd[i] / (1.0 - p) : 0.0;
  }
  expect_near(yd, expected, 0, 1e-6, "y against the mask y shows");

  // The gradient uses the same mask and scale.
  y->backward();
  Doubles expected_grad(xd.size());
  for (size_t i = 0; i < xd.size(); ++i) {
    expected_grad[i] = yd[i] != 0.0 ? 1.0 / (1.0 - p) : 0.0;
  }
  expect_near(grad_doubles(x), expected_grad, 0, 1e-6, "dx against the mask");
}

// A known answer: seed 7, p = 0.3, written out (from NumPy's MT19937 with
// the legacy seeding, the same generator as std::mt19937(7)), so that a
// change to the draws fails here whatever the implementation's own mask
// says. In every type, with output weights that are not all ones.
TEST(Dropout, KnownMaskForSeed7InEveryType) {
  const std::vector<int> kept = {0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
                                 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1};
  std::vector<float> x(kept.size()), w(kept.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.5f + static_cast<float>(i) / 16;  // exact in every type
    w[i] = -1.0f + static_cast<float>(i % 5) / 4;
  }
  const double scale = 1.0 / (1.0 - 0.3f);
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    const double rtol = std::string(type) == "float"  ? 3e-7
                        : std::string(type) == "half" ? 1e-3
                                                      : 8e-3;
    auto xv = variable_from({24}, x, true);
    auto y = F::dropout(xv, 0.3f, 7);
    y->forward();
    auto seed = make_ndarray({24});
    std::copy(w.begin(), w.end(), seed->cast<float>(true));
    y->backward(seed);
    Doubles want_y(x.size()), want_dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      want_y[i] = kept[i] ? x[i] * scale : 0.0;
      want_dx[i] = kept[i] ? w[i] * scale : 0.0;
    }
    expect_near(to_doubles(y), want_y, 0, rtol, "y for the known mask");
    expect_near(grad_doubles(xv), want_dx, 0, rtol, "dx for the known mask");
  }
}

// The harness's batch-change check, for a function whose output is random:
// after the batch size changes, y and dx follow the new size and the rule
// (each element dropped or scaled by 1 / (1 - p), dx by the same mask).
TEST(Dropout, ANewBatchSizeKeepsTheMaskRule) {
  const float p = 0.3f;
  auto x = uniform({4, 5, 6}, 0.5f, 1.5f, 1, true);
  auto y = F::dropout(x, p, 42);
  y->forward();
  for (int64_t batch : {7, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    auto fresh =
        uniform({batch, 5, 6}, 0.5f, 1.5f, static_cast<uint32_t>(batch));
    x->reshape({batch, 5, 6});
    std::copy_n(fresh->data()->get<const float>(), fresh->size(),
                x->data()->cast<float>(true));
    x->grad()->zero();
    y->forward();
    y->backward();
    ASSERT_EQ(y->shape(), (Shape{batch, 5, 6}));
    const Doubles xd = to_doubles(x), yd = to_doubles(y), gd = grad_doubles(x);
    const auto& mask = static_cast<Dropout&>(y->parent()->function()).mask();
    ASSERT_EQ(mask.size(), xd.size());
    for (size_t i = 0; i < xd.size(); ++i) {
      const bool kept = mask[i] != 0;
      EXPECT_NEAR(yd[i], kept ? xd[i] / (1.0 - p) : 0.0, 1e-6) << i;
      EXPECT_NEAR(gd[i], kept ? 1.0 / (1.0 - p) : 0.0, 1e-6) << i;
    }
  }
}

// Under clearing, y is written over x and dx over dy (both intermediates
// read once): the same values and grads as without clearing, in every type;
// forward holds two large arrays less than without clearing (Dropout's and
// MulScalar's outputs each over their input), backward one.
TEST(Dropout, RunsInPlaceUnderClearing) {
  const int64_t n = int64_t{1} << 20;
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    struct Run {
      Doubles y, grad;
      size_t forward_peak, backward_peak;
    };
    auto run = [&](bool clear) {
      auto x = uniform({n}, -1, 1, 3);
      auto w = variable_from({1}, {0.5f}, true);
      // h: an intermediate that only Dropout reads; d's grad goes to w.
      auto h = F::add2(x, w);
      auto d = F::dropout(h, 0.25f, 7);
      auto y = F::mul_scalar(d, 1.0f / 4096);
      Run r;
      auto& allocator = CpuAllocator::instance();
      size_t before = allocator.stats().in_use;
      allocator.reset_peak();
      y->forward(clear, clear);
      r.forward_peak = allocator.stats().peak - before;
      r.y = to_doubles(y);
      before = allocator.stats().in_use;
      allocator.reset_peak();
      y->backward(1.0f, clear);
      r.backward_peak = allocator.stats().peak - before;
      r.grad = grad_doubles(w);
      return r;
    };
    const Run plain = run(false), cleared = run(true);
    ASSERT_EQ(cleared.y, plain.y);
    ASSERT_EQ(cleared.grad, plain.grad);
    EXPECT_GT(plain.grad[0], 0.0);
    const size_t array = n * dtype_size(default_context().type_config());
    // Two arrays less in forward: y of MulScalar over d, d over h.
    EXPECT_LT(cleared.forward_peak + array + array / 2, plain.forward_peak);
    EXPECT_LT(cleared.backward_peak + array / 2, plain.backward_peak);
  }
}

TEST(Dropout, KeptFractionIsNearOneMinusP) {
  for (float p : {0.1f, 0.5f, 0.9f}) {
    auto x = uniform({1000, 1000}, 0.5f, 1.5f, 2);
    auto y = F::dropout(x, p, 3);
    y->forward();
    const Doubles yd = to_doubles(y);
    int64_t kept = 0;
    for (double v : yd) kept += v != 0.0;
    // The standard deviation of the fraction is at most 5e-4 here.
    EXPECT_NEAR(static_cast<double>(kept) / yd.size(), 1.0 - p, 5e-3) << p;
  }
}

TEST(Dropout, ZeroPIsTheIdentity) {
  auto x = uniform({100}, -1.0f, 1.0f, 4);
  auto y = F::dropout(x, 0.0f, 5);
  y->forward();
  EXPECT_EQ(to_doubles(y), to_doubles(x));
}

Doubles dropout_output(const VariablePtr& x, int seed) {
  auto y = F::dropout(x, 0.5f, seed);
  y->forward();
  return to_doubles(y);
}

TEST(Dropout, SeedsDecideTheMask) {
  auto x = uniform({2000}, 0.5f, 1.5f, 6);
  EXPECT_EQ(dropout_output(x, 11), dropout_output(x, 11));
  EXPECT_NE(dropout_output(x, 11), dropout_output(x, 12));
  // seed -1 draws from the global generator at each forward: reseeding it
  // reproduces the masks, and two functions in a row differ.
  mg::seed(99);
  const Doubles a = dropout_output(x, -1), b = dropout_output(x, -1);
  EXPECT_NE(a, b);
  mg::seed(99);
  EXPECT_EQ(dropout_output(x, -1), a);
}

TEST(Dropout, MinusOneResumesFromASavedGeneratorState) {
  auto x = uniform({2000}, 0.5f, 1.5f, 9);
  auto y = F::dropout(x, 0.5f);  // seed -1: the library's generator
  mg::seed(21);
  y->forward();
  const Doubles first = to_doubles(y);
  const std::string state = mg::random_state();  // a checkpoint
  y->forward();
  const Doubles second = to_doubles(y);
  EXPECT_NE(second, first);
  mg::set_random_state(state);  // resumed: the same next mask
  y->forward();
  EXPECT_EQ(to_doubles(y), second);
  mg::seed(21);
  y->forward();
  EXPECT_EQ(to_doubles(y), first);
}

TEST(Dropout, EachForwardDrawsANewMask) {
  auto x = uniform({2000}, 0.5f, 1.5f, 7);
  auto y = F::dropout(x, 0.5f, 13);
  y->forward();
  const Doubles first = to_doubles(y);
  y->forward();
  EXPECT_NE(to_doubles(y), first);
}

TEST(Dropout, RunsInTheReducedType) {
  ContextGuard guard(context("cpu", "half"));
  auto y = F::dropout(uniform({8}, 0.5f, 1.5f, 8), 0.5f, 1);
  EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::f16);
}

TEST(Dropout, POutsideZeroOneIsRejected) {
  for (float p : {1.0f, -0.5f, 1.5f}) {
    try {
      F::dropout(make_variable({3}), p);
      FAIL() << "expected an exception for p = " << p;
    } catch (const std::invalid_argument& e) {
      std::ostringstream expected;
      expected << "[dropout] p must be in [0, 1), got " << p;
      EXPECT_EQ(e.what(), expected.str());
    }
  }
  EXPECT_THROW(F::dropout(make_variable({3}), std::nanf("")),
               std::invalid_argument);
}

}  // namespace
}  // namespace mg::test::dropout_tests
