// CheckFiniteGuard: the first non-finite output (forward) or input grad
// (backward) throws, naming the function, the pass, the variable, the
// element and, for backward, the loss scale; without a guard nothing is
// checked and the values are the same.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

namespace F = functions;

VariablePtr from(const Shape& shape, const std::vector<float>& values,
                 bool need_grad = false) {
  auto v = make_variable(shape, need_grad);
  float* p = v->data()->cast<float>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return v;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const NonFiniteError& e) {
    return e.what();
  }
  return "(no NonFiniteError)";
}

void expect_has(const std::string& what, const std::string& part) {
  EXPECT_NE(what.find(part), std::string::npos)
      << "missing \"" << part << "\" in: " << what;
}

TEST(CheckFinite, ALogOfANegativeNumberIsNamedInForward) {
  auto x = from({2, 3}, {1, 2, 3, -4, 5, 6});
  auto y = F::sum(F::log(F::relu(F::mul_scalar(x, 2.0f))));
  // Without the guard the nan goes through silently.
  y->forward();
  EXPECT_FALSE(std::isfinite(y->data()->get<const float>()[0]));

  CheckFiniteGuard check;
  auto x2 = from({2, 3}, {1, 2, 3, -4, 5, 6});
  auto z = F::sum(F::log(x2));
  try {
    z->forward();
    FAIL() << "no NonFiniteError";
  } catch (const NonFiniteError& e) {
    const std::string what = e.what();
    expect_has(what, "[check_finite] Log (log) forward: output y is nan");
    expect_has(what, "at index 3 (1 of its 6 elements are not finite)");
    expect_has(what, "inputs: x (2, 3) float; outputs: y (2, 3) float");
    EXPECT_EQ(e.function, "Log");
    EXPECT_EQ(e.pass, "forward");
    EXPECT_EQ(e.index, 3);
    EXPECT_TRUE(std::isnan(e.value));
  }
}

TEST(CheckFinite, AnOverflowingHalfGradNamesTheFunctionAndTheLossScale) {
  ContextGuard half(context("cpu", "half"));
  // The loss and its seed are fp32; the grads of the fp16 activations are
  // 1024 * 8 = 8192 (h2) and 8192 * 8 = 65536 (h1), beyond fp16's 65504:
  // the middle MulScalar is where it overflows.
  auto x = from({1, 4}, {1, 1, 1, 1}, true);
  auto h1 = F::mul_scalar(x, 8.0f);
  auto h2 = F::mul_scalar(h1, 8.0f);
  auto loss = F::sum(F::mul_scalar(h2, 8.0f));
  loss->forward();
  {
    // Off: backward finishes, with inf grads for the updater to find.
    loss->backward(1024.0f);
    EXPECT_TRUE(std::isinf(x->grad()->get<const float>()[0]));
  }
  CheckFiniteGuard check;
  x->grad()->zero();
  const std::string what = message_of([&] { loss->backward(1024.0f); });
  expect_has(what,
             "MulScalar (mul_scalar) backward: the grad of input x is inf");
  expect_has(what, "its output grads are finite: the overflow started here");
  expect_has(what, "backward was seeded with 1024 (the loss scale)");
  expect_has(what, "inputs: x (1, 4) half; outputs: y (1, 4) half");
}

TEST(CheckFinite, FiniteGraphsGiveTheSameValuesWithTheGuard) {
  auto run = [](bool guarded) {
    std::unique_ptr<CheckFiniteGuard> g;
    if (guarded) g = std::make_unique<CheckFiniteGuard>();
    auto x = from({2, 2}, {0.5f, -1.0f, 2.0f, 3.0f}, true);
    auto y = F::sum(F::tanh(F::mul2(x, x)));
    y->forward();
    x->grad()->zero();
    y->backward();
    return std::make_pair(y->data()->get<const float>()[0],
                          x->grad()->get<const float>()[1]);
  };
  EXPECT_EQ(run(false), run(true));
}

TEST(CheckFinite, GuardsNestAndEndWithTheirScope) {
  EXPECT_FALSE(check_finite_enabled());
  {
    CheckFiniteGuard outer;
    {
      CheckFiniteGuard inner;
      EXPECT_TRUE(check_finite_enabled());
    }
    EXPECT_TRUE(check_finite_enabled());
  }
  EXPECT_FALSE(check_finite_enabled());
  auto y = F::log(from({1}, {-1.0f}));
  y->forward();  // off again: no throw
  EXPECT_TRUE(std::isnan(y->data()->get<const float>()[0]));
}

TEST(CheckFinite, ASqrtAtZeroIsWhereTheInfStarts) {
  CheckFiniteGuard check;
  auto x = from({2}, {0.0f, 1.0f}, true);
  auto h = F::identity(x);
  auto y = F::sum(F::sqrt(h));  // d sqrt(h) / dh = inf at 0
  y->forward();
  x->grad()->zero();
  const std::string what = message_of([&] { y->backward(); });
  expect_has(what,
             "Sqrt (sqrt) backward: the grad of input x is inf at index 0");
  expect_has(what, "the overflow started here");
}

}  // namespace
}  // namespace mg
