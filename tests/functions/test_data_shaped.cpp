// The functions whose output shape comes from their inputs' data: harness
// cases against double references, NNabla's and ONNX's examples, a graph
// built once and run on data of other counts (the shapes below follow),
// integer data kept exact, errors.
#include <gtest/gtest.h>

#include <numeric>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::data_shaped_tests {
namespace {

const char* const kDataShaped =
    "the output's shape is the data's: a new batch is new data";

harness::Case bool_gather_case(Shape xs, Shape ms, std::vector<float> mask) {
  harness::Case k{"input " + shape_str(xs) + " mask " + shape_str(ms), [=] {
                    FunctionCheck c;
                    c.inputs = {{xs}, InputSpec::fixed(ms, mask)};
                    c.build = [](const std::vector<VariablePtr>& in) {
                      return F::bool_gather(in[0], in[1]);
                    };
                    c.reference = [=](const std::vector<Doubles>& in) {
                      const int64_t row = shape_size(xs) / shape_size(ms);
                      Doubles y;
                      for (size_t i = 0; i < in[1].size(); ++i) {
                        if (in[1][i] == 0) continue;
                        y.insert(y.end(), in[0].begin() + i * row,
                                 in[0].begin() + (i + 1) * row);
                      }
                      return y;
                    };
                    return c;
                  }};
  k.no_batch_change = kDataShaped;
  return k;
}

// Time-major (T, B, *) or batch-first (B, T, *) padded data with lengths.
harness::Case pack_case(int64_t t, std::vector<float> lengths, Shape rest,
                        bool batch_first) {
  const int64_t b = static_cast<int64_t>(lengths.size());
  Shape xs = batch_first ? Shape{b, t} : Shape{t, b};
  xs.insert(xs.end(), rest.begin(), rest.end());
  harness::Case k{
      "padded " + shape_str(xs) + (batch_first ? " batch first" : ""), [=] {
        FunctionCheck c;
        c.inputs = {{xs}, InputSpec::fixed({b}, lengths)};
        c.build = [batch_first](const std::vector<VariablePtr>& in) {
          return F::pack_padded_sequence(in[0], in[1], batch_first)[0];
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          const int64_t row = shape_size(rest);
          Doubles y;
          for (int64_t s = 0; s < t; ++s) {
            for (int64_t i = 0; i < b; ++i) {
              if (s >= in[1][i]) continue;
              const int64_t src = batch_first ? i * t + s : s * b + i;
              y.insert(y.end(), in[0].begin() + src * row,
                       in[0].begin() + (src + 1) * row);
            }
          }
          return y;
        };
        return c;
      }};
  k.no_batch_change = kDataShaped;
  // The harness's int32 check puts 1, 2, 3, ... into the lengths,
  // which are then no valid plan; the case's int32 data is checked by
  // PackPaddedSequence.Int32DataStaysExactUnderHalf.
  k.int32_layout = false;
  return k;
}

harness::Case pad_case(std::vector<float> batch_sizes, Shape rest,
                       bool batch_first, float padding, int total) {
  const int64_t n = static_cast<int64_t>(
      std::accumulate(batch_sizes.begin(), batch_sizes.end(), 0.0f));
  const int64_t t = static_cast<int64_t>(batch_sizes.size());
  Shape xs{n};
  xs.insert(xs.end(), rest.begin(), rest.end());
  harness::Case k{
      "packed " + shape_str(xs) + (batch_first ? " batch first" : "") +
          (total >= 0 ? " total_length " + std::to_string(total) : ""),
      [=] {
        FunctionCheck c;
        c.inputs = {{xs}, InputSpec::fixed({t}, batch_sizes)};
        c.build = [=](const std::vector<VariablePtr>& in) {
          return F::pad_packed_sequence(in[0], in[1], batch_first, padding,
                                        total)[0];
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          const int64_t row = shape_size(rest);
          const int64_t b = static_cast<int64_t>(in[1][0]);
          const int64_t steps = total >= 0 ? total : t;
          Doubles y(static_cast<size_t>(steps * b * row), padding);
          int64_t r = 0;
          for (int64_t s = 0; s < t; ++s) {
            for (int64_t i = 0; i < in[1][s]; ++i, ++r) {
              const int64_t dst = batch_first ? i * steps + s : s * b + i;
              std::copy_n(in[0].begin() + r * row, row, y.begin() + dst * row);
            }
          }
          return y;
        };
        return c;
      }};
  k.no_batch_change = kDataShaped;
  // The harness's int32 check puts 1, 2, 3, ... into the batch_sizes,
  // which are then no valid plan; the case's int32 data is checked by
  // PackPaddedSequence.Int32DataStaysExactUnderHalf.
  k.int32_layout = false;
  return k;
}

harness::Case nonzero_case(Shape xs, std::vector<float> x) {
  harness::Case k{
      "x " + shape_str(xs), [=] {
        FunctionCheck c;
        c.inputs = {InputSpec::fixed(xs, x)};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::nonzero(in[0]);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          std::vector<int64_t> hits;
          for (size_t i = 0; i < in[0].size(); ++i) {
            if (in[0][i] != 0) hits.push_back(i);
          }
          const auto strides = shape_strides(xs);
          Doubles y;
          for (size_t a = 0; a < xs.size(); ++a) {
            for (int64_t h : hits) {
              y.push_back(static_cast<double>(h / strides[a] % xs[a]));
            }
          }
          return y;
        };
        c.check_grad = false;
        return c;
      }};
  k.no_batch_change = kDataShaped;
  return k;
}

harness::Case unique_case(Shape xs, std::vector<float> x, UniqueOptions o,
                          int output, Doubles want) {
  harness::Case k{
      "x " + shape_str(xs) +
          (o.flatten ? "" : " axis " + std::to_string(o.axis)) +
          (o.sorted ? "" : " unsorted") + " output " + std::to_string(output),
      [=] {
        FunctionCheck c;
        c.inputs = {InputSpec::fixed(xs, x)};
        c.build = [o, output](const std::vector<VariablePtr>& in) {
          return F::unique(in[0], o)[output];
        };
        c.reference = [want](const std::vector<Doubles>&) { return want; };
        c.check_grad = false;
        return c;
      }};
  k.no_batch_change = kDataShaped;
  // The harness's int32 check puts other values in, for which `want` does
  // not hold; Unique.NegativeAxisAndInt32Data checks int32 data.
  k.int32_layout = false;
  return k;
}

// ONNX's "suppress_by_IOU" boxes, corner form; the same with a second
// class whose scores run the other way.
const std::vector<float> kNmsBoxes{0, 0,     1, 1,     0, 0.1f, 1, 1.1f,
                                   0, -0.1f, 1, 0.9f,  0, 10,   1, 11,
                                   0, 10.1f, 1, 11.1f, 0, 100,  1, 101};

harness::Case nms_case(int classes, ONNXNonMaxSuppressionOptions o,
                       Doubles want) {
  std::vector<float> scores{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  if (classes == 2) {
    scores.insert(scores.end(), {0.3f, 0.5f, 0.95f, 0.6f, 0.75f, 0.9f});
  }
  harness::Case k{std::to_string(classes) + " classes keep " +
                      std::to_string(o.max_output_boxes_per_class),
                  [=] {
                    FunctionCheck c;
                    c.inputs = {InputSpec::fixed({1, 6, 4}, kNmsBoxes),
                                InputSpec::fixed({1, classes, 6}, scores)};
                    c.build = [o](const std::vector<VariablePtr>& in) {
                      return F::onnx_non_max_suppression(in[0], in[1], o);
                    };
                    c.reference = [want](const std::vector<Doubles>&) {
                      return want;
                    };
                    c.check_grad = false;
                    return c;
                  }};
  k.no_batch_change = kDataShaped;
  k.int32_layout = false;
  return k;
}

ONNXNonMaxSuppressionOptions nms_opts(int keep, float iou, float score) {
  ONNXNonMaxSuppressionOptions o;
  o.max_output_boxes_per_class = keep;
  o.iou_threshold = iou;
  o.score_threshold = score;
  return o;
}

UniqueOptions unique_opts(bool flatten, int axis, bool sorted) {
  UniqueOptions o;
  o.flatten = flatten;
  o.axis = axis;
  o.sorted = sorted;
  o.with_index = o.with_inverse = o.with_counts = true;
  return o;
}

// 2 x 3 with repeated rows and values: [[1, 3, 1], [2, 3, 1]] and the rows
// of its transpose (axis 1: columns [1,2], [3,3], [1,1]).
const std::vector<float> kUniqueX{1, 3, 1, 2, 3, 1};

const bool kDataShapedCases =
    harness::add(decl::BoolGather,
                 {bool_gather_case({3, 2}, {3}, {1, 0, 1}),
                  bool_gather_case({2, 3, 2}, {2, 3}, {0, 1, 1, 0, 0, 1}),
                  bool_gather_case({4}, {4}, {1, 1, 0, 1})}) &&
    harness::add(
        decl::PackPaddedSequence,
        {pack_case(4, {4, 2, 1}, {2}, false), pack_case(3, {3, 3, 1}, {}, true),
         pack_case(5, {3, 2}, {2, 2}, false)}) &&
    harness::add(decl::PadPackedSequence,
                 {pad_case({3, 2, 1, 1}, {2}, false, 0.0f, -1),
                  pad_case({2, 2, 1}, {}, true, -1.0f, 5),
                  pad_case({3, 1}, {2, 2}, false, 0.5f, -1)}) &&
    harness::add(decl::NonZero,
                 {nonzero_case({3, 3}, {1, 0, 3, 4, 5, 0, 7, 8, 0}),
                  nonzero_case({2, 2, 2}, {0, 0, 1, 0, 0, 2, 0, 0}),
                  nonzero_case({5}, {0, 0, 0, 0, 0})}) &&
    harness::add(
        decl::ONNXNonMaxSuppression,
        {nms_case(1, nms_opts(3, 0.5f, 0.0f), {0, 0, 3, 0, 0, 0, 0, 0, 5}),
         nms_case(1, nms_opts(3, 0.5f, 0.4f), {0, 0, 3, 0, 0, 0}),
         nms_case(2, nms_opts(2, 0.5f, 0.0f),
                  {0, 0, 3, 0, 0, 0, 0, 1, 2, 0, 1, 5})}) &&
    harness::add(decl::Unique,
                 {unique_case({2, 3}, kUniqueX, unique_opts(true, 0, true), 0,
                              {1, 2, 3}),
                  unique_case({2, 3}, kUniqueX, unique_opts(true, 0, true), 1,
                              {0, 3, 1}),
                  unique_case({2, 3}, kUniqueX, unique_opts(true, 0, true), 2,
                              {0, 2, 0, 1, 2, 0}),
                  unique_case({2, 3}, kUniqueX, unique_opts(true, 0, true), 3,
                              {3, 1, 2}),
                  unique_case({2, 3}, kUniqueX, unique_opts(true, 0, false), 0,
                              {1, 3, 2}),
                  unique_case({2, 3}, kUniqueX, unique_opts(false, 1, true), 0,
                              {1, 1, 3, 1, 2, 3}),
                  unique_case({2, 3}, kUniqueX, unique_opts(false, 1, true), 2,
                              {1, 2, 0}),
                  unique_case({2, 3}, kUniqueX, unique_opts(false, 0, false), 3,
                              {1, 1})});

TEST(BoolGather, NNablasExampleAndTheGraphFollowsTheMask) {
  auto input = variable_from({3, 2}, {1, 2, 3, 4, 5, 6}, true);
  auto mask = variable_from({3}, {1, 0, 1});
  auto y = F::bool_gather(input, mask);
  auto loss = F::sum(F::mul_scalar(y, 2.0f));
  loss->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 5, 6}));
  // The same graph on a new mask: the output and the functions below it
  // take the new count; backward follows.
  float* m = mask->data()->cast<float>();
  m[0] = 1, m[1] = 1, m[2] = 1;
  input->grad()->zero();
  loss->forward();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(loss), (Doubles{42}));
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(input), (Doubles{2, 2, 2, 2, 2, 2}));
  m[0] = 0, m[1] = 0, m[2] = 0;
  input->grad()->zero();
  loss->forward();
  EXPECT_EQ(y->shape(), (Shape{0, 2}));
  EXPECT_EQ(to_doubles(loss), (Doubles{0}));
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(input), (Doubles{0, 0, 0, 0, 0, 0}));
}

TEST(BoolGather, Int32DataStaysExactUnderHalf) {
  ContextGuard g(context("cpu", "half"));
  auto input = make_variable({2});
  int32_t* d = input->data()->cast<int32_t>(true);
  d[0] = 16777217, d[1] = 2049;
  auto y = F::bool_gather(input, variable_from({2}, {1, 1}));
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(to_doubles(y), (Doubles{16777217, 2049}));
}

TEST(NonZero, OnnxsExampleAndANewCountEachForward) {
  auto x = variable_from({3, 3}, {1, 0, 3, 4, 5, 0, 7, 8, 0});
  auto y = F::nonzero(x);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 6}));
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(to_doubles(y), (Doubles{0, 0, 1, 1, 2, 2, 0, 2, 0, 1, 0, 1}));
  x->data()->zero();
  x->data()->cast<float>()[4] = 1.0f;
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 1}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 1}));
}

TEST(Unique, NegativeAxisAndInt32Data) {
  auto x = make_variable({2, 3});
  int32_t* d = x->data()->cast<int32_t>(true);
  const int32_t v[] = {100000001, 7, 100000001, 100000000, 7, 100000001};
  std::copy(v, v + 6, d);
  UniqueOptions o;
  o.with_counts = true;
  auto ys = F::unique(x, o);
  ys[0]->forward();
  EXPECT_EQ(to_doubles(ys[0]), (Doubles{7, 100000000, 100000001}));
  EXPECT_EQ(to_doubles(ys[1]), (Doubles{2, 1, 3}));
  o.flatten = false;
  o.axis = -2;  // rows: both distinct
  auto rows = F::unique(x, o);
  rows[0]->forward();
  EXPECT_EQ(rows[0]->shape(), (Shape{2, 3}));
  EXPECT_EQ(to_doubles(rows[1]), (Doubles{1, 1}));
}

TEST(PackPaddedSequence, RoundTripsThroughPadPackedSequence) {
  // NNabla's example: 3 sequences of lengths 4, 2, 1 of 2 features.
  const int64_t t = 4, b = 3;
  std::vector<float> x(t * b * 2);
  std::iota(x.begin(), x.end(), 1.0f);
  auto padded = variable_from({t, b, 2}, x);
  auto lengths = variable_from({b}, {4, 2, 1});
  auto packed = F::pack_padded_sequence(padded, lengths);
  auto back = F::pad_packed_sequence(packed[0], packed[1]);
  back[0]->forward();
  EXPECT_EQ(packed[0]->shape(), (Shape{7, 2}));
  EXPECT_EQ(to_doubles(packed[1]), (Doubles{3, 2, 1, 1}));
  EXPECT_EQ(to_doubles(back[1]), (Doubles{4, 2, 1}));
  Doubles want(x.begin(), x.end());
  for (int64_t s = 0; s < t; ++s) {
    for (int64_t i = 0; i < b; ++i) {
      if (s >= (i == 0 ? 4 : i == 1 ? 2 : 1)) {
        want[(s * b + i) * 2] = want[(s * b + i) * 2 + 1] = 0;
      }
    }
  }
  EXPECT_EQ(to_doubles(back[0]), want);
  // New lengths through the same graph.
  float* l = lengths->data()->cast<float>();
  l[0] = 2, l[1] = 2, l[2] = 2;
  back[0]->forward();
  EXPECT_EQ(packed[0]->shape(), (Shape{6, 2}));
  EXPECT_EQ(back[0]->shape(), (Shape{2, 3, 2}));
}

TEST(PackPaddedSequence, Int32DataStaysExactUnderHalf) {
  ContextGuard guard(context("cpu", "half"));
  constexpr int32_t kTop = 2147483647;
  auto padded = make_variable({3, 2});  // (T, B), int32 ids near 2^31
  int32_t* p = padded->data()->cast<int32_t>(true);
  for (int i = 0; i < 6; ++i) p[i] = kTop - i;
  auto lengths = make_variable({2});
  int32_t* l = lengths->data()->cast<int32_t>(true);
  l[0] = 3, l[1] = 1;
  auto packed = F::pack_padded_sequence(padded, lengths);
  auto back = F::pad_packed_sequence(packed[0], packed[1]);
  back[0]->forward();
  ASSERT_EQ(packed[0]->data()->array().dtype(), Dtype::i32);
  ASSERT_EQ(back[0]->data()->array().dtype(), Dtype::i32);
  const int32_t* q = packed[0]->data()->get<const int32_t>();
  EXPECT_EQ(std::vector<int32_t>(q, q + 4),
            (std::vector<int32_t>{kTop, kTop - 1, kTop - 2, kTop - 4}));
  const int32_t* y = back[0]->data()->get<const int32_t>();
  EXPECT_EQ(std::vector<int32_t>(y, y + 6),
            (std::vector<int32_t>{kTop, kTop - 1, kTop - 2, 0, kTop - 4, 0}));
}

TEST(ONNXNonMaxSuppression, OnnxsSuppressByIouExample) {
  // ONNX's "suppress_by_IOU" test: 6 boxes, 1 class, keep 3 at IoU 0.5.
  auto boxes = variable_from(
      {1, 6, 4}, {0.5f, 0.5f,  1.0f, 1.0f, 0.5f, 0.6f,   1.0f, 1.0f,
                  0.5f, 0.4f,  1.0f, 1.0f, 0.5f, 10.5f,  1.0f, 1.0f,
                  0.5f, 10.6f, 1.0f, 1.0f, 0.5f, 100.5f, 1.0f, 1.0f});
  // ONNX's center_point_box example: [x center, y center, w, h].
  auto scores =
      variable_from({1, 1, 6}, {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f});
  ONNXNonMaxSuppressionOptions o;
  o.center_point_box = 1;
  o.max_output_boxes_per_class = 3;
  o.iou_threshold = 0.5f;
  auto y = F::onnx_non_max_suppression(boxes, scores, o);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{3, 3}));
  EXPECT_EQ(to_doubles(y), (Doubles{0, 0, 3, 0, 0, 0, 0, 0, 5}));
  o.max_output_boxes_per_class = 0;
  auto none = F::onnx_non_max_suppression(boxes, scores, o);
  none->forward();
  EXPECT_EQ(none->shape(), (Shape{0, 3}));
}

TEST(DataShaped, ErrorsNameTheFunctionAndTheData) {
  expect_error(
      [] {
        F::bool_gather(make_variable({3, 2}), make_variable({2}));
      },
      {"[bool_gather] mask with shape (2,) must be the leading axes of input "
       "with shape (3, 2)"});
  expect_error(
      [] {
        F::pack_padded_sequence(make_variable({4, 3}),
                                variable_from({3}, {1, 2, 1}))[0]
            ->forward();
      },
      {"[pack_padded_sequence] lengths[1] is 2, longer than lengths[0] = 1: "
       "sort the batch by decreasing length first"});
  expect_error(
      [] {
        F::pack_padded_sequence(make_variable({4, 3}),
                                variable_from({3}, {5, 2, 1}))[0]
            ->forward();
      },
      {"[pack_padded_sequence] lengths[0] is 5, longer than "
       "padded_sequence's 4 steps"});
  expect_error(
      [] {
        F::pad_packed_sequence(make_variable({5, 2}),
                               variable_from({2}, {2, 2}))[0]
            ->forward();
      },
      {"[pad_packed_sequence] batch_sizes sum to 4, but packed_sequence with "
       "shape (5, 2) has 5 rows; they must match"});
  expect_error(
      [] {
        F::pad_packed_sequence(make_variable({4}), variable_from({2}, {2, 2}),
                               false, 0.0f, 1)[0]
            ->forward();
      },
      {"[pad_packed_sequence] total_length is 1, shorter than the 2 steps"});
  expect_error(
      [] {
        F::onnx_non_max_suppression(make_variable({1, 6, 4}),
                                    make_variable({1, 2, 5}));
      },
      {"[onnx_non_max_suppression] scores with shape (1, 2, 5) must be (1, "
       "C, 6)"});
  UniqueOptions o;
  o.flatten = false;
  o.axis = 2;
  expect_error(
      [&] {
        F::unique(make_variable({2, 3}), o);
      },
      {"[unique] axis 2 is out of range for 2 dimensions"});
  // A bad length that arrives with the data: the forward says so.
  auto lengths = variable_from({2}, {2, 1});
  auto packed = F::pack_padded_sequence(make_variable({2, 2}), lengths);
  lengths->data()->cast<float>()[1] = 1.5f;
  expect_error([&] { packed[0]->forward(); },
               {"[pack_padded_sequence] lengths[1] is 1.5, not a count"});
}

}  // namespace
}  // namespace mg::test::data_shaped_tests
