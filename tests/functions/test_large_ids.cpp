// Integer data never passes through half or bfloat16: ids, labels and
// indices above 2048 (the first integer fp16 cannot hold is 2049; bf16's
// is 257) and above 65504 (fp16's largest finite value) stay exact under
// every type_config, in and out. The harness's own cases use small ids.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"

namespace mg::test::large_ids_tests {
namespace {

// Ids that half or bfloat16 would round (2049, 2051, 4097), send to
// infinity (65505, 65537) or both (70001).
const std::vector<int32_t> kIds = {2049, 65537, 2051, 70001, 65505, 4097};
constexpr int64_t kRows = 70002;

VariablePtr int32_variable(const Shape& shape,
                           const std::vector<int32_t>& values) {
  auto x = make_variable(shape, false);
  EXPECT_EQ(static_cast<size_t>(x->size()), values.size());
  std::copy(values.begin(), values.end(), x->data()->cast<int32_t>(true));
  return x;
}

std::vector<int32_t> as_ints(const VariablePtr& v) {
  const Doubles d = to_doubles(v);
  return std::vector<int32_t>(d.begin(), d.end());
}

// Row i of a (kRows, 2) table: (i mod 64, i / 64 mod 64) / 8, exact in
// every type and different for any two rows less than 4096 apart.
std::vector<float> row_codes() {
  std::vector<float> v(kRows * 2);
  for (int64_t i = 0; i < kRows; ++i) {
    v[2 * i] = static_cast<float>(i % 64) / 8;
    v[2 * i + 1] = static_cast<float>(i / 64 % 64) / 8;
  }
  return v;
}

Doubles codes_of(const std::vector<int32_t>& ids) {
  Doubles d;
  for (int32_t i : ids) {
    d.push_back(static_cast<double>(i % 64) / 8);
    d.push_back(static_cast<double>(i / 64 % 64) / 8);
  }
  return d;
}

class LargeIds : public ::testing::TestWithParam<std::string> {
 protected:
  ContextGuard guard_{context("cpu", GetParam())};
};

TEST_P(LargeIds, EmbedPicksTheRowOfEachId) {
  const auto table = variable_from({kRows, 2}, row_codes());
  auto y = F::embed(int32_variable({2, 3}, kIds), table);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 3, 2}));
  expect_near(to_doubles(y), codes_of(kIds), 0, 0, "embedded rows");
}

TEST_P(LargeIds, GatherAndGatherNdPickTheRowOfEachIndex) {
  const auto table = variable_from({kRows, 2}, row_codes());
  auto y = F::gather(table, int32_variable({6}, kIds), 0);
  auto z = F::gather_nd(table, int32_variable({1, 6}, kIds));
  y->forward();
  z->forward();
  expect_near(to_doubles(y), codes_of(kIds), 0, 0, "gathered rows");
  expect_near(to_doubles(z), codes_of(kIds), 0, 0, "gather_nd's rows");
}

TEST_P(LargeIds, OneHotSetsTheIdsPosition) {
  auto y = F::one_hot(int32_variable({6, 1}, kIds), {kRows});
  y->forward();
  const Doubles d = to_doubles(y);
  for (size_t r = 0; r < kIds.size(); ++r) {
    std::vector<int64_t> ones;
    for (int64_t j = 0; j < kRows; ++j) {
      if (d[r * kRows + j] != 0) ones.push_back(j);
    }
    EXPECT_EQ(ones, std::vector<int64_t>{kIds[r]}) << "row " << r;
  }
}

TEST_P(LargeIds, ScatterNdAndScatterAddWriteAtTheIds) {
  std::vector<float> marks;
  for (size_t k = 0; k < kIds.size(); ++k) marks.push_back(k + 1.0f);
  auto scattered = F::scatter_nd(variable_from({6}, marks),
                                 int32_variable({1, 6}, kIds), {kRows});
  auto added =
      F::scatter_add(variable_from({kRows}, std::vector<float>(kRows, 0.0f)),
                     int32_variable({6}, kIds), variable_from({6}, marks), 0);
  for (const auto& y : {scattered, added}) {
    y->forward();
    const Doubles d = to_doubles(y);
    for (size_t k = 0; k < kIds.size(); ++k) {
      EXPECT_EQ(d[kIds[k]], k + 1.0) << "id " << kIds[k];
    }
    double total = 0;
    for (double e : d) total += e;
    EXPECT_EQ(total, 21.0) << "marks written elsewhere";
  }
}

// A label above 65504: the loss of the class it names, not of a neighbour.
TEST_P(LargeIds, LossesReadTheLabelExactly) {
  std::vector<float> logits(kRows, 0.0f);
  logits[65537] = 8.0f;
  auto x = variable_from({1, kRows}, logits);
  auto right = F::softmax_cross_entropy(x, int32_variable({1, 1}, {65537}));
  auto wrong = F::softmax_cross_entropy(x, int32_variable({1, 1}, {65536}));
  auto top1 = F::top_n_error(x, int32_variable({1, 1}, {65537}));
  std::vector<float> probs(kRows, 0.25f);
  probs[65537] = 0.5f;
  auto categorical = F::categorical_cross_entropy(
      variable_from({1, kRows}, probs), int32_variable({1, 1}, {65537}));
  for (const auto& y : {right, wrong, top1, categorical}) y->forward();
  // 2e-3: the fp32 sum of 70001 exponentials is good to about 2e-4; a
  // neighbouring label is off by 8.
  const double z = std::log(kRows - 1 + std::exp(8.0));
  expect_near(to_doubles(right), {z - 8}, 0, 2e-3, "loss of class 65537");
  expect_near(to_doubles(wrong), {z}, 0, 2e-3, "loss of class 65536");
  expect_near(to_doubles(top1), {0}, 0, 0, "top-1 error of class 65537");
  expect_near(to_doubles(categorical), {std::log(2.0)}, 1e-6, 1e-6,
              "-log x[65537]");
}

TEST_P(LargeIds, BitShiftKeepsLargeIntegers) {
  auto y = F::bit_shift(int32_variable({6}, kIds),
                        int32_variable({6}, {1, 1, 2, 3, 1, 4}));
  y->forward();
  EXPECT_EQ(as_ints(y),
            (std::vector<int32_t>{4098, 131074, 8204, 560008, 131010, 65552}));
}

// Integer outputs: the positions of maxima and of sorted values.
TEST_P(LargeIds, IndexOutputsAreExact) {
  std::vector<float> x(kRows, 0.0f);
  x[65537] = 2.0f;
  x[2049] = 1.0f;
  auto v = variable_from({1, kRows}, x);
  auto argmax = F::argmax(v, {1});
  auto sorted = F::sort_index(v, 1, /*reverse=*/true);
  auto top = F::top_k_data_with_index(v, 2);
  argmax->forward();
  sorted->forward();
  top[1]->forward();
  EXPECT_EQ(as_ints(argmax), std::vector<int32_t>{65537});
  const auto order = as_ints(sorted);
  ASSERT_EQ(order.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(order[0], 65537);
  EXPECT_EQ(order[1], 2049);
  EXPECT_EQ(as_ints(top[1]), (std::vector<int32_t>{65537, 2049}));
}

TEST_P(LargeIds, NonZeroAndUniqueIndicesAreExact) {
  std::vector<float> x(kRows, 0.0f);
  x[65537] = 2.0f;
  x[2049] = 1.0f;
  auto v = variable_from({kRows}, x);
  auto nz = F::nonzero(v);
  nz->forward();
  EXPECT_EQ(as_ints(nz), (std::vector<int32_t>{2049, 65537}));
  UniqueOptions o;
  o.with_index = true;
  o.with_counts = true;
  auto u = F::unique(v, o);
  u[1]->forward();
  EXPECT_EQ(as_ints(u[1]), (std::vector<int32_t>{0, 2049, 65537}));
  EXPECT_EQ(as_ints(u[2]), (std::vector<int32_t>{70000, 1, 1}));
}

// Sizes are integer data too: a shape past 65504, sequence lengths past
// 2048.
TEST_P(LargeIds, ShapesAndSequenceLengthsAreExact) {
  auto sizes = F::shape(make_variable({kRows + 1, 1}));
  sizes->forward();
  EXPECT_EQ(as_ints(sizes), (std::vector<int32_t>{70003, 1}));
  const int64_t t = 2051;
  auto padded = variable_from({t, 2, 1}, std::vector<float>(t * 2, 1.0f));
  auto packed =
      F::pack_padded_sequence(padded, int32_variable({2}, {2051, 2049}));
  auto back = F::pad_packed_sequence(packed[0], packed[1]);
  back[1]->forward();
  std::vector<int32_t> batch_sizes(t, 2);
  batch_sizes[t - 2] = batch_sizes[t - 1] = 1;
  EXPECT_EQ(as_ints(packed[1]), batch_sizes);
  EXPECT_EQ(as_ints(back[1]), (std::vector<int32_t>{2051, 2049}));
}

// MeanSubtraction's count of batches: t past 65504 still counts by one,
// and the running mean moves by 1 / (t + 1).
TEST_P(LargeIds, MeanSubtractionCountsPast65504) {
  auto rmean = variable_from({3}, {0, 0, 0});
  auto t = int32_variable({1}, {65537});
  auto y =
      F::mean_subtraction(variable_from({2, 3}, {1, 2, 3, 3, 4, 5}), rmean, t);
  y->forward();
  EXPECT_EQ(as_ints(t), std::vector<int32_t>{65538});
  expect_near(to_doubles(rmean), {2.0 / 65538, 3.0 / 65538, 4.0 / 65538}, 0,
              1e-6, "running mean after one batch at t = 65537");
}

TEST_P(LargeIds, RandintDrawsEveryIntegerOfALargeRange) {
  auto y = F::randint(65500, 65508, {4000}, 5);
  y->forward();
  std::vector<int> count(8, 0);
  for (int32_t v : as_ints(y)) {
    ASSERT_GE(v, 65500);
    ASSERT_LT(v, 65508);
    ++count[v - 65500];
  }
  // 500 expected per value; 400 is 4.5 standard deviations below.
  for (int k = 0; k < 8; ++k) EXPECT_GT(count[k], 400) << 65500 + k;
}

INSTANTIATE_TEST_SUITE_P(ReducedTypes, LargeIds,
                         ::testing::Values("half", "bfloat16"));

}  // namespace
}  // namespace mg::test::large_ids_tests
