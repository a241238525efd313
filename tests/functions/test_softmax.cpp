// Softmax and LogSoftmax through the shared checker, plus the cases that
// need fp32 sums under half and the tiles of wide inner axes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <mixgraph/functions/builder.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::softmax_tests {
namespace {

// (log) softmax of x seen as (outer, size, inner), along the middle axis.
Doubles softmax_ref(const Doubles& x, int64_t outer, int64_t size,
                    int64_t inner, bool log) {
  Doubles y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + j; };
      double mx = -INFINITY, sum = 0;
      for (int64_t a = 0; a < size; ++a) mx = std::max(mx, x[at(a)]);
      for (int64_t a = 0; a < size; ++a) sum += std::exp(x[at(a)] - mx);
      for (int64_t a = 0; a < size; ++a) {
        y[at(a)] =
            log ? x[at(a)] - mx - std::log(sum) : std::exp(x[at(a)] - mx) / sum;
      }
    }
  }
  return y;
}

// Half and bfloat16 against float. Inputs, the output grads and the outputs
// are each rounded once to the reduced type (unit roundoff 2^-11 for half,
// 2^-9 for bfloat16) while every sum stays fp32, so the errors are a few
// units of roundoff: measured within 1e-3 (half) and 8e-3 (bfloat16) here;
// we allow twice that.
void reduced_tolerances(FunctionCheck& c) {
  c.half_atol = c.half_rtol = 2e-3;
  c.bf16_atol = c.bf16_rtol = 1.6e-2;
}

FunctionCheck softmax_check(const Shape& shape, int axis, int64_t outer,
                            int64_t size, int64_t inner, bool log) {
  FunctionCheck c;
  c.inputs = {{shape, -3.0f, 3.0f}};
  c.build = [axis, log](const std::vector<VariablePtr>& in) {
    return log ? F::log_softmax(in[0], axis) : F::softmax(in[0], axis);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return softmax_ref(in[0], outer, size, inner, log);
  };
  reduced_tolerances(c);
  return c;
}

const bool kSoftmaxLastAxis = harness::add(
    decl::Softmax, {{"last axis", [] {
                       return softmax_check({4, 7}, -1, 4, 7, 1, false);
                     }}});

const bool kSoftmaxMiddleAxis = harness::add(
    decl::Softmax, {{"middle axis", [] {
                       return softmax_check({2, 5, 3}, 1, 2, 5, 3, false);
                     }}});

const bool kSoftmaxFirstAxisByNegativeIndex = harness::add(
    decl::Softmax, {{"first axis by negative index", [] {
                       return softmax_check({4, 3, 2}, -3, 1, 4, 6, false);
                     }}});

const bool kLogSoftmaxLastAxis = harness::add(
    decl::LogSoftmax, {{"last axis", [] {
                          return softmax_check({4, 7}, -1, 4, 7, 1, true);
                        }}});

const bool kLogSoftmaxMiddleAxis = harness::add(
    decl::LogSoftmax, {{"middle axis", [] {
                          return softmax_check({2, 5, 3}, 1, 2, 5, 3, true);
                        }}});

// size * inner above one tile: the inner axis is split into column chunks.
// The numerical gradient would take too long; backward is checked against
// the closed forms dx = y (w - sum(w y)) and dx = w - exp(y) sum(w).
void check_chunked(bool log) {
  const int64_t outer = 2, size = 300, inner = 70;
  FunctionCheck c =
      softmax_check({outer, size, inner}, 1, outer, size, inner, log);
  check_forward(c);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> xv(outer * size * inner), wv(xv.size());
  for (auto& v : xv) v = dist(rng);
  for (auto& v : wv) v = dist(rng);
  auto x = variable_from({outer, size, inner}, xv, true);
  auto y = c.build({x});
  y->forward();
  auto w = make_ndarray(y->shape());
  std::copy(wv.begin(), wv.end(), w->cast<float>(true));
  y->backward(w);
  const Doubles yd =
      softmax_ref(Doubles(xv.begin(), xv.end()), outer, size, inner, log);
  Doubles expected(yd.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + j; };
      double s = 0;
      for (int64_t a = 0; a < size; ++a)
        s += log ? wv[at(a)] : wv[at(a)] * yd[at(a)];
      for (int64_t a = 0; a < size; ++a) {
        expected[at(a)] = log ? wv[at(a)] - std::exp(yd[at(a)]) * s
                              : yd[at(a)] * (wv[at(a)] - s);
      }
    }
  }
  expect_near(grad_doubles(x), expected, 1e-5, 1e-4, "chunked backward");
  check_reduced(c, "half");
  check_reduced(c, "bfloat16");
}

TEST(Softmax, WideInnerAxisInChunks) { check_chunked(false); }
TEST(LogSoftmax, WideInnerAxisInChunks) { check_chunked(true); }

// 4096 classes under cpu:half: each probability is ~1/4096 and their sum
// ~1; a half accumulator of exp(x - max) (up to ~4096 * 0.5) would lose
// whole units, fp32 does not.
TEST(Softmax, LongAxisUnderHalfAccumulatesInFloat) {
  const int64_t n = 2, k = 4096;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> xv(n * k);
  for (auto& v : xv) v = static_cast<float>(Half(dist(rng)));  // exact in half
  ContextGuard guard(context("cpu", "half"));
  for (bool log : {false, true}) {
    auto x = variable_from({n, k}, xv);
    auto y = log ? F::log_softmax(x) : F::softmax(x);
    EXPECT_EQ(y->parent()->function().dtype(), Dtype::f16);
    y->forward();
    EXPECT_EQ(y->data()->array().dtype(), Dtype::f16);
    const Doubles ref =
        softmax_ref(Doubles(xv.begin(), xv.end()), n, k, 1, log);
    // Only the final rounding to half remains: 2^-11 relative.
    expect_near(to_doubles(y), ref, 0.0, 1e-3,
                log ? "half log_softmax over 4096" : "half softmax over 4096");
    if (!log) {
      const Doubles yd = to_doubles(y);
      for (int64_t i = 0; i < n; ++i) {
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += yd[i * k + j];
        EXPECT_NEAR(s, 1.0, 1e-3);
      }
    }
  }
}

// Logits far apart: exp(x) alone would overflow float and half.
TEST(Softmax, LargeLogitsStayFinite) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto x = variable_from({2, 3},
                           {1000.0f, 0.0f, -1000.0f, 60000.0f, 60000.0f, 0.0f});
    if (std::string(type) == "half") {
      x = variable_from({2, 3},
                        {60000.0f, 0.0f, -60000.0f, 60000.0f, 60000.0f, 0.0f});
    }
    auto y = F::softmax(x);
    auto z = F::log_softmax(x);
    y->forward();
    z->forward();
    expect_near(to_doubles(y), {1, 0, 0, 0.5, 0.5, 0}, 1e-6, 1e-3, "softmax");
    const Doubles zd = to_doubles(z);
    EXPECT_NEAR(zd[0], 0.0, 1e-6);
    EXPECT_NEAR(zd[3], -std::log(2.0), 1e-2);
    for (double v : zd) EXPECT_FALSE(std::isnan(v));
  }
}

TEST(Softmax, AxisOutOfRange) {
  try {
    F::softmax(make_variable({4, 10}), 2);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[softmax] axis 2 is out of range for x with shape (4, 10)");
  }
  try {
    F::log_softmax(make_variable({4, 10}), -3);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[log_softmax] axis -3 is out of range for x with "
                 "shape (4, 10)");
  }
}

TEST(Softmax, WrongNumberOfInputs) {
  try {
    apply_function1(decl::Softmax, SoftmaxOptions{},
                    {make_variable({2, 3}), make_variable({2, 3})});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[softmax] takes 1 inputs, but got 2 with shapes "
                 "(2, 3), (2, 3)");
  }
}

// Long sums: 4096 exps summed near 13,000, where an fp16 accumulator's
// spacing is 8; checked against double in half and bfloat16. The outputs
// (about 1e-4) keep their relative rounding, hence the small atol.
FunctionCheck softmax_long_check(bool log) {
  FunctionCheck c = softmax_check({2, 4096}, -1, 2, 4096, 1, log);
  c.half_atol = c.bf16_atol = log ? 0.0 : 1e-6;
  c.half_rtol = 4e-3;
  c.bf16_rtol = 2e-2;
  c.check_grad = false;
  return c;
}

const bool kSoftmaxLong = harness::add(
    decl::Softmax, {{"4096-term sums", [] { return softmax_long_check(false); },
                     /*long_sum=*/true}});
const bool kLogSoftmaxLong =
    harness::add(decl::LogSoftmax,
                 {{"4096-term sums", [] { return softmax_long_check(true); },
                   /*long_sum=*/true}});

}  // namespace
}  // namespace mg::test::softmax_tests
