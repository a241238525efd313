// SoftmaxCrossEntropy, SigmoidCrossEntropy, SquaredError and TopNError
// through the shared checker, bad labels and shapes, and large logits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/functions/builder.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::loss_tests {
namespace {

// -log softmax(x)[t] with x (outer, size, inner) and t (outer, 1, inner).
Doubles softmax_ce_ref(const Doubles& x, const Doubles& t, int64_t outer,
                       int64_t size, int64_t inner) {
  Doubles y(outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + j; };
      double mx = -INFINITY, sum = 0;
      for (int64_t a = 0; a < size; ++a) mx = std::max(mx, x[at(a)]);
      for (int64_t a = 0; a < size; ++a) sum += std::exp(x[at(a)] - mx);
      const int64_t label = static_cast<int64_t>(t[o * inner + j]);
      y[o * inner + j] = mx + std::log(sum) - x[at(label)];
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

// x scores with distinct, well separated values (so half and bfloat16 keep
// the order) and labels cycling through the classes.
std::vector<float> separated_scores(int64_t outer, int64_t size,
                                    int64_t inner) {
  std::vector<float> v(outer * size * inner);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>((i * 7919) % v.size()) * 0.25f -
           static_cast<float>(v.size()) * 0.125f;
  }
  return v;
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

// ---- SoftmaxCrossEntropy ----

// Logits (n, classes) and labels (n, 1).
FunctionCheck classes_last_check(int64_t n, int64_t classes,
                                 std::vector<float> labels) {
  FunctionCheck c;
  c.inputs = {{{n, classes}, -3.0f, 3.0f},
              InputSpec::fixed({n, 1}, std::move(labels))};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::softmax_cross_entropy(in[0], in[1]);
  };
  c.reference = [n, classes](const std::vector<Doubles>& in) {
    return softmax_ce_ref(in[0], in[1], n, classes, 1);
  };
  reduced_tolerances(c);
  return c;
}

// The second: 70 classes, on a GPU two or three to each of a warp's lanes.
const bool kSoftmaxCrossEntropyClassesLast = harness::add(
    decl::SoftmaxCrossEntropy,
    {{"labels of shape n by1",
      [] {
        return classes_last_check(4, 10, {3, 0, 9, 5});
      }},
     {"70 classes",
      [] { return classes_last_check(6, 70, cycling_labels(6, 70)); }}});

const bool kSoftmaxCrossEntropyMiddleAxis = harness::add(
    decl::SoftmaxCrossEntropy,
    {{"middle axis", [] {
        FunctionCheck c;
        c.inputs = {{{2, 5, 3}, -3.0f, 3.0f},
                    InputSpec::fixed({2, 1, 3}, cycling_labels(6, 5))};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::softmax_cross_entropy(in[0], in[1], 1);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          return softmax_ce_ref(in[0], in[1], 2, 5, 3);
        };
        reduced_tolerances(c);
        return c;
      }}});

TEST(SoftmaxCrossEntropy, OutputHasLabelShape) {
  auto y = F::softmax_cross_entropy(make_variable({2, 5, 3}),
                                    make_variable({2, 1, 3}), -2);
  EXPECT_EQ(y->shape(), (Shape{2, 1, 3}));
}

// Logits 20 apart: exp(20) overflows half; the loss must still come out.
TEST(SoftmaxCrossEntropy, LargeLogitsUnderHalfAreFiniteAndRight) {
  for (const char* type : {"half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto x = variable_from({3, 2}, {20, 0, 0, 20, 20, 0}, true);
    auto t = variable_from({3, 1}, {1, 1, 0});
    auto y = F::softmax_cross_entropy(x, t);
    // A loss runs in fp32 under half and bfloat16: its output is fp32.
    EXPECT_EQ(y->parent()->function().dtype(), Dtype::f32);
    y->forward();
    EXPECT_EQ(y->data()->array().dtype(), Dtype::f32);
    y->backward(1.0f);
    // 20 + log(1 + exp(-20)) and log(1 + exp(-20)) ~ 2e-9.
    expect_near(to_doubles(y), {20.0, 2.06e-9, 2.06e-9}, 1e-6, 1e-3, "loss");
    expect_near(grad_doubles(x), {1, -1, 0, 0, 0, 0}, 1e-6, 1e-3, "grad");
  }
}

// Under half and bfloat16 the loss, kept in fp32, reads logits held in the
// reduced type as they are held: it makes no fp32 copy of them, and writes
// their grad in that type, rounded once from fp32, the bits the function
// before would have read from an fp32 grad. Logits that already have an
// fp32 copy are read from it, and their grad stays fp32.
TEST(SoftmaxCrossEntropy, ReadsReducedLogitsAsTheyAreHeld) {
  const std::vector<float> scores = separated_scores(2, 5, 3);
  const std::vector<float> labels{0, 1, 2, 3, 4, 0};
  for (const char* type : {"half", "bfloat16"}) {
    SCOPED_TRACE(type);
    const bool half = std::string(type) == "half";
    const Dtype reduced = half ? Dtype::f16 : Dtype::bf16;
    ContextGuard guard(context("cpu", type));
    // Leaf logits held in the reduced type; `with_fp32` also gets an fp32
    // copy, as another reader would have made.
    auto logits = [&](bool with_fp32) {
      auto x = make_variable({2, 5, 3}, true);
      void* p = x->data()->array().cast(reduced, "cpu", true);
      convert(scores.data(), Dtype::f32, p, reduced, scores.size());
      if (with_fp32) x->data()->get<const float>();
      return x;
    };
    auto x = logits(false), x32 = logits(true);
    auto t = variable_from({2, 1, 3}, labels);
    auto y = F::softmax_cross_entropy(x, t, 1);
    auto y32 = F::softmax_cross_entropy(x32, t, 1);
    y->forward(false, false);
    y32->forward(false, false);
    EXPECT_FALSE(x->data()->array().has_copy(Dtype::f32, "cpu"));
    EXPECT_EQ(to_doubles(y), to_doubles(y32));
    y->backward(1.0f, false);
    y32->backward(1.0f, false);
    EXPECT_EQ(x->grad()->array().dtype(), reduced);
    EXPECT_EQ(x32->grad()->array().dtype(), Dtype::f32);
    // The reduced grad is the fp32 one rounded once.
    std::vector<float> rounded(scores.size());
    std::vector<uint16_t> bits(scores.size());
    convert(x32->grad()->get<const float>(), Dtype::f32, bits.data(), reduced,
            bits.size());
    convert(bits.data(), reduced, rounded.data(), Dtype::f32, bits.size());
    const float* got = x->grad()->get<const float>();
    for (size_t i = 0; i < rounded.size(); ++i) {
      EXPECT_EQ(got[i], rounded[i]) << "element " << i;
    }
    // Against the double reference from the values the type holds.
    const Doubles held = to_doubles(x32);
    expect_near(
        to_doubles(y),
        softmax_ce_ref(held, Doubles(labels.begin(), labels.end()), 2, 5, 3),
        1e-5, 1e-5, "loss");
    // A second loss on the same logits adds its grad in fp32.
    auto twice = F::add2(F::softmax_cross_entropy(x, t, 1),
                         F::softmax_cross_entropy(x, t, 1));
    x->grad()->zero();
    twice->forward(false, false);
    twice->backward(1.0f, false);
    const float* sum = x->grad()->get<const float>();
    const float* one = x32->grad()->get<const float>();
    for (size_t i = 0; i < rounded.size(); ++i) {
      EXPECT_NEAR(sum[i], 2 * one[i], half ? 2e-3 : 1.6e-2) << "element " << i;
    }
  }
}

// Labels written as float and reshaped to (N, 1), as the README's first
// program writes them, reach the loss exactly under half and bfloat16, as
// int32 labels do: rounded to half, label 2049 would be 2048 (and 30000 a
// neighbour in bfloat16), the loss of another class. The logits repeat
// every 7 classes, so each label's neighbours have another loss.
TEST(SoftmaxCrossEntropy, FloatLabelsStayExactThroughLayoutFunctions) {
  const int64_t classes = 30001;
  const std::vector<float> labels{2049, 3000, 30000};
  const auto n = static_cast<int64_t>(labels.size());
  std::vector<float> logits(n * classes);
  for (int64_t i = 0; i < n * classes; ++i)
    logits[i] = 0.5f * (i % classes % 7);
  double lse = 0;
  for (int64_t c = 0; c < classes; ++c) lse += std::exp(0.5 * (c % 7));
  lse = std::log(lse);
  Doubles want;
  for (float t : labels)
    want.push_back(lse - 0.5 * (static_cast<int64_t>(t) % 7));
  for (const char* type : {"half", "bfloat16"}) {
    ContextGuard guard(context("cpu", type));
    for (const bool as_int : {false, true}) {
      SCOPED_TRACE(std::string(type) + (as_int ? ", int32" : ", float"));
      auto x = variable_from({n, classes}, logits);
      auto t = make_variable({n});
      if (as_int) {
        int32_t* p = t->data()->cast<int32_t>(true);
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(labels[i]);
      } else {
        std::copy(labels.begin(), labels.end(), t->data()->cast<float>(true));
      }
      // Through two layout functions: reshape, then a slice of all of it.
      auto t2 = F::slice(F::reshape(t, {n, 1}), {0, 0}, {n, 1}, {1, 1});
      auto y = F::softmax_cross_entropy(x, t2);
      y->forward();
      expect_near(to_doubles(y), want, 1e-4, 1e-4, "loss");
    }
  }
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeIsReportedInForward) {
  auto x = variable_from({4, 10}, std::vector<float>(40, 0.0f));
  auto y = F::softmax_cross_entropy(x, variable_from({4, 1}, {3, 10, 0, 1}));
  EXPECT_EQ(error_of([&] { y->forward(); }),
            "[softmax_cross_entropy] t holds label 10 at flat index 1, but x "
            "with shape (4, 10) has 10 classes along axis 1: labels must be "
            "in [0, 10)");
  auto z = F::softmax_cross_entropy(x, variable_from({4, 1}, {3, 1, -1, 1}));
  EXPECT_EQ(error_of([&] { z->forward(); }),
            "[softmax_cross_entropy] t holds label -1 at flat index 2, but x "
            "with shape (4, 10) has 10 classes along axis 1: labels must be "
            "in [0, 10)");
}

TEST(SoftmaxCrossEntropy, LabelShapeMismatch) {
  EXPECT_EQ(
      error_of([] {
        F::softmax_cross_entropy(make_variable({4, 10}), make_variable({4, 2}));
      }),
      "[softmax_cross_entropy] x with shape (4, 10) and t with shape "
      "(4, 2) do not match: t holds one class label per position, so it "
      "must have shape (4, 1) (x's shape with 1 at axis 1)");
  EXPECT_EQ(
      error_of([] {
        F::softmax_cross_entropy(make_variable({4, 10}), make_variable({4}));
      }),
      "[softmax_cross_entropy] x with shape (4, 10) and t with shape "
      "(4,) do not match: t holds one class label per position, so it "
      "must have shape (4, 1) (x's shape with 1 at axis 1)");
}

TEST(SoftmaxCrossEntropy, AxisOutOfRange) {
  EXPECT_EQ(error_of([] {
              F::softmax_cross_entropy(make_variable({4, 10}),
                                       make_variable({4, 1}), 2);
            }),
            "[softmax_cross_entropy] axis 2 is out of range for x with shape "
            "(4, 10)");
}

TEST(SoftmaxCrossEntropy, LabelsWithGradIsAnError) {
  auto x = variable_from({2, 3}, {0, 1, 2, 3, 4, 5}, true);
  auto t = variable_from({2, 1}, {0, 2}, /*need_grad=*/true);
  auto y = F::softmax_cross_entropy(x, t);
  y->forward();
  EXPECT_EQ(error_of([&] { y->backward(1.0f); }),
            "[softmax_cross_entropy] t holds class labels and has no "
            "gradient; make t need_grad = false");
}

// ---- SigmoidCrossEntropy ----

double sigmoid_ce_ref(double x, double t) {
  const double s = 1 / (1 + std::exp(-x));
  return -(t * std::log(s) + (1 - t) * std::log(1 - s));
}

const bool kSigmoidCrossEntropyAll = harness::add(
    decl::SigmoidCrossEntropy,
    {{"all", [] {
        FunctionCheck c;
        c.inputs = {{{3, 4, 5}, -4.0f, 4.0f}, {{3, 4, 5}, 0.0f, 1.0f, false}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::sigmoid_cross_entropy(in[0], in[1]);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y(in[0].size());
          for (size_t i = 0; i < y.size(); ++i)
            y[i] = sigmoid_ce_ref(in[0][i], in[1][i]);
          return y;
        };
        reduced_tolerances(c);
        return c;
      }}});

// log(sigmoid(x)) of a large |x| underflows to log(0) when formed naively.
TEST(SigmoidCrossEntropy, LargeLogitsAreStable) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto x = variable_from({4}, {100, -100, 30, -30}, true);
    auto t = variable_from({4}, {0, 1, 1, 0});
    auto y = F::sigmoid_cross_entropy(x, t);
    y->forward();
    y->backward(1.0f);
    expect_near(to_doubles(y), {100, 100, 9.4e-14, 9.4e-14}, 1e-6, 1e-2,
                "loss");
    expect_near(grad_doubles(x), {1, -1, 0, 0}, 1e-6, 1e-2, "grad");
  }
}

TEST(SigmoidCrossEntropy, ShapeMismatch) {
  EXPECT_EQ(
      error_of([] {
        F::sigmoid_cross_entropy(make_variable({4, 10}), make_variable({4, 1}));
      }),
      "[sigmoid_cross_entropy] x with shape (4, 10) and t with shape "
      "(4, 1) must have the same shape");
}

TEST(SigmoidCrossEntropy, TargetsWithGradIsAnError) {
  auto x = variable_from({2}, {0.5f, -0.5f}, true);
  auto y = F::sigmoid_cross_entropy(x, variable_from({2}, {1, 0}, true));
  y->forward();
  EXPECT_EQ(error_of([&] { y->backward(1.0f); }),
            "[sigmoid_cross_entropy] t holds targets and has no gradient; "
            "make t need_grad = false");
}

// ---- SquaredError ----

const bool kSquaredErrorAll =
    harness::add(decl::binary<ops::SquaredError>,
                 {{"all", [] {
                     FunctionCheck c;
                     c.inputs = {{{3, 4}, -2.0f, 2.0f}, {{3, 4}, -2.0f, 2.0f}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::squared_error(in[0], in[1]);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y(in[0].size());
                       for (size_t i = 0; i < y.size(); ++i) {
                         y[i] = (in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
                       }
                       return y;
                     };
                     reduced_tolerances(c);
                     return c;
                   }}});

TEST(SquaredError, SameVariableTwiceHasZeroGrad) {
  auto x = variable_from({3}, {1, -2, 3}, true);
  auto y = F::squared_error(x, x);
  y->forward();
  y->backward(1.0f);
  expect_near(to_doubles(y), {0, 0, 0}, 0, 0, "y");
  expect_near(grad_doubles(x), {0, 0, 0}, 0, 0, "grad");
}

TEST(SquaredError, Broadcasts) {
  auto y = F::squared_error(variable_from({2, 2}, {1, 2, 3, 4}),
                            variable_from({2}, {1, 1}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{0, 1, 4, 9}));
}

TEST(SquaredError, ShapeMismatch) {
  EXPECT_EQ(error_of([] {
              F::squared_error(make_variable({2, 3}), make_variable({3, 2}));
            }),
            "[squared_error] x0 with shape (2, 3) and x1 with shape (3, 2) "
            "cannot broadcast: axis 0 (aligned on the right) is 2 against 3; "
            "each must match or be 1");
}

// ---- TopNError ----

// 1 when more than n classes score at least the true class (ties count
// against, as in NNabla).
Doubles top_n_ref(const Doubles& x, const Doubles& t, int64_t outer,
                  int64_t size, int64_t inner, int n) {
  Doubles y(outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + j; };
      const double threshold = x[at(static_cast<int64_t>(t[o * inner + j]))];
      int count = 0;
      for (int64_t a = 0; a < size; ++a) count += x[at(a)] >= threshold;
      y[o * inner + j] = count > n ? 1 : 0;
    }
  }
  return y;
}

// A diverged model's nan scores are errors in every type, whether the nan
// is the label's score or another class's (compared with nan no class
// scores above the label: counted as right, a diverged run scored 100%).
TEST(TopNError, NanScoresAreErrors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* type : {"float", "half", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cpu", type));
    auto x =
        variable_from({4, 3}, {nan, nan, nan, 0, 1, nan, 5, 1, 2, 0, 1, 2});
    auto t = variable_from({4, 1}, {0, 1, 0, 2});
    auto y = F::top_n_error(x, t);
    y->forward();
    EXPECT_EQ(to_doubles(y), (Doubles{1, 1, 0, 0}));
  }
}

FunctionCheck top_n_check(const Shape& xs, const Shape& ts, int axis, int n,
                          int64_t outer, int64_t size, int64_t inner) {
  FunctionCheck c;
  c.inputs = {InputSpec::fixed(xs, separated_scores(outer, size, inner)),
              InputSpec::fixed(ts, cycling_labels(outer * inner, size))};
  c.build = [axis, n](const std::vector<VariablePtr>& in) {
    return F::top_n_error(in[0], in[1], axis, n);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return top_n_ref(in[0], in[1], outer, size, inner, n);
  };
  c.check_grad = false;                                       // a metric
  c.half_atol = c.half_rtol = c.bf16_atol = c.bf16_rtol = 0;  // exact 0 and 1
  return c;
}

const bool kTopNErrorTop1 =
    harness::add(decl::TopNError,
                 {{"top1", [] {
                     return top_n_check({16, 10}, {16, 1}, -1, 1, 16, 10, 1);
                   }}});

const bool kTopNErrorTop3MiddleAxis =
    harness::add(decl::TopNError,
                 {{"top3 middle axis", [] {
                     return top_n_check({4, 6, 5}, {4, 1, 5}, 1, 3, 4, 6, 5);
                   }}});

TEST(TopNError, HandPicked) {
  auto x = variable_from({3, 4}, {0.1f, 0.9f, 0.3f, 0.2f,    // best: 1
                                  0.5f, 0.4f, 0.3f, 0.2f,    // best: 0
                                  0.7f, 0.7f, 0.1f, 0.0f});  // tie
  auto t = variable_from({3, 1}, {1, 2, 0});
  auto top1 = F::top_n_error(x, t);
  auto top3 = F::top_n_error(x, t, -1, 3);
  top1->forward();
  top3->forward();
  expect_near(to_doubles(top1), {0, 1, 1}, 0, 0, "top-1 (a tie is an error)");
  expect_near(to_doubles(top3), {0, 0, 0}, 0, 0, "top-3");
}

TEST(TopNError, BackwardIsANoOp) {
  auto x = variable_from({2, 3}, {1, 2, 3, 4, 5, 6}, true);
  auto y = F::top_n_error(x, variable_from({2, 1}, {2, 0}));
  y->forward();
  x->grad()->zero();
  y->backward(1.0f);
  expect_near(grad_doubles(x), Doubles(6, 0.0), 0, 0, "x's grad");
}

TEST(TopNError, BadInputs) {
  EXPECT_EQ(
      error_of([] {
        F::top_n_error(make_variable({4, 10}), make_variable({4, 1}), -1, 0);
      }),
      "[top_n_error] n must be at least 1, got 0");
  EXPECT_EQ(error_of([] {
              F::top_n_error(make_variable({4, 10}), make_variable({10, 1}));
            }),
            "[top_n_error] x with shape (4, 10) and t with shape (10, 1) do "
            "not match: t holds one class label per position, so it must "
            "have shape (4, 1) (x's shape with 1 at axis 1)");
  EXPECT_EQ(error_of([] {
              F::top_n_error(make_variable({4, 10}), make_variable({4, 1}), 5);
            }),
            "[top_n_error] axis 5 is out of range for x with shape (4, 10)");
  auto y = F::top_n_error(make_variable({2, 3}), variable_from({2, 1}, {0, 3}));
  EXPECT_EQ(error_of([&] { y->forward(); }),
            "[top_n_error] t holds label 3 at flat index 1, but x with shape "
            "(2, 3) has 3 classes along axis 1: labels must be in [0, 3)");
}

// 3000 classes and labels past 2048 (2049 rounds to 2048 in half, 2999 to
// 3008 in bfloat16): a 3000-term sum, and labels that must stay exact.
FunctionCheck softmax_ce_wide_check() {
  FunctionCheck c;
  c.inputs = {{{2, 3000}, -3.0f, 3.0f}, InputSpec::fixed({2, 1}, {2049, 2999})};
  c.build = [](const std::vector<VariablePtr>& in) {
    return F::softmax_cross_entropy(in[0], in[1]);
  };
  c.reference = [](const std::vector<Doubles>& in) {
    return softmax_ce_ref(in[0], in[1], 2, 3000, 1);
  };
  reduced_tolerances(c);
  c.check_grad = false;
  return c;
}

const bool kSoftmaxCrossEntropyWide =
    harness::add(decl::SoftmaxCrossEntropy,
                 {{"3000 classes, labels 2049 and 2999", softmax_ce_wide_check,
                   /*long_sum=*/true}});

}  // namespace
}  // namespace mg::test::loss_tests
