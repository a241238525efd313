#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

TEST(ParameterScope, HierarchicalNamesInInsertionOrder) {
  ParameterScope params;
  params["conv1"].get_or_create("W", {2, 3}, constant_initializer(1));
  params["conv1"].get_or_create("b", {2}, constant_initializer(0));
  params["block/fc"].get_or_create("W", {3, 3}, nullptr);
  params["a"]["b"].get_or_create("W", {1}, nullptr);
  auto list = params.parameters();
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].first, "conv1/W");
  EXPECT_EQ(list[1].first, "conv1/b");
  EXPECT_EQ(list[2].first, "block/fc/W");
  EXPECT_EQ(list[3].first, "a/b/W");
  EXPECT_EQ(params["conv1"].parameters().size(), 2u);
  EXPECT_EQ(params["block"].parameters().size(), 1u);
  EXPECT_EQ(list[0].second->name(), "conv1/W");
}

TEST(ParameterScope, ParametersLeaveOutThoseWithoutGradUnlessAskedForAll) {
  ParameterScope params;
  auto y = parametric_functions::batch_normalization(make_variable({4, 3}),
                                                     params["bn"]);
  params["fc"].get_or_create("W", {3, 2}, nullptr);
  std::vector<std::string> trained, all;
  for (const auto& [name, v] : params.parameters()) trained.push_back(name);
  for (const auto& [name, v] : params.parameters(/*grad_only=*/false)) {
    all.push_back(name);
  }
  EXPECT_EQ(trained,
            (std::vector<std::string>{"bn/bn/beta", "bn/bn/gamma", "fc/W"}))
      << "the running statistics are not handed to a solver";
  EXPECT_EQ(all, (std::vector<std::string>{"bn/bn/beta", "bn/bn/gamma",
                                           "bn/bn/mean", "bn/bn/var", "fc/W"}));
  EXPECT_EQ(params.size(), 5u);
  EXPECT_EQ(params["bn"].parameters().size(), 2u);
}

TEST(ParameterScope, GetOrCreateReturnsTheSameVariable) {
  ParameterScope params;
  auto a = params.get_or_create("W", {2}, constant_initializer(3));
  auto b = params.get_or_create("W", {2}, constant_initializer(5));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->data()->get<const float>()[1], 3.0f);
  EXPECT_EQ(params.get("W"), a);
  EXPECT_EQ(params.get("missing"), nullptr);
}

TEST(ParameterScope, ShapeMismatchNamesTheParameter) {
  ParameterScope params;
  params["fc"].get_or_create("W", {2, 3}, nullptr);
  try {
    params["fc"].get_or_create("W", {3, 3}, nullptr);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "[ParameterScope] parameter 'fc/W' has shape (2, 3), but "
                 "(3, 3) was requested");
  }
}

TEST(ParameterScope, ClearRemovesOnlyTheScope) {
  ParameterScope params;
  params["a"].get_or_create("W", {1}, nullptr);
  params["b"].get_or_create("W", {1}, nullptr);
  params["a"].clear();
  auto list = params.parameters();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].first, "b/W");
  EXPECT_THROW(params[""], std::invalid_argument);
}

double mean_of(const float* p, int n) {
  return std::accumulate(p, p + n, 0.0) / n;
}

double std_of(const float* p, int n) {
  const double m = mean_of(p, n);
  double s = 0;
  for (int i = 0; i < n; ++i) s += (p[i] - m) * (p[i] - m);
  return std::sqrt(s / n);
}

TEST(Initializer, DistributionsHaveTheirMoments) {
  seed(42);
  const int n = 200000;
  NdArray a({n});
  uniform_initializer(-2, 2)(a);
  const float* p = a.get<const float>();
  EXPECT_NEAR(mean_of(p, n), 0.0, 0.02);
  EXPECT_NEAR(std_of(p, n), 4 / std::sqrt(12.0), 0.01);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(p[i] >= -2 && p[i] < 2);
  normal_initializer(1, 0.5f)(a);
  p = a.get<const float>();
  EXPECT_NEAR(mean_of(p, n), 1.0, 0.01);
  EXPECT_NEAR(std_of(p, n), 0.5, 0.01);
  glorot_normal_initializer(100, 300)(a);
  EXPECT_NEAR(std_of(a.get<const float>(), n), std::sqrt(2.0 / 400), 0.002);
  he_normal_initializer(50)(a);
  EXPECT_NEAR(std_of(a.get<const float>(), n), std::sqrt(2.0 / 50), 0.005);
  he_uniform_initializer(50)(a);
  EXPECT_NEAR(std_of(a.get<const float>(), n), std::sqrt(2.0 / 50), 0.005);
  glorot_uniform_initializer(100, 300)(a);
  EXPECT_NEAR(std_of(a.get<const float>(), n), std::sqrt(2.0 / 400), 0.002);
  constant_initializer(0.25f)(a);
  EXPECT_EQ(a.get<const float>()[n - 1], 0.25f);
}

TEST(Initializer, SeedMakesRunsRepeatable) {
  NdArray a({16}), b({16});
  seed(7);
  uniform_initializer()(a);
  seed(7);
  uniform_initializer()(b);
  EXPECT_EQ(0, std::memcmp(a.get<const float>(), b.get<const float>(), 64));
  const std::string state = random_state();
  uniform_initializer()(a);
  set_random_state(state);
  uniform_initializer()(b);
  EXPECT_EQ(0, std::memcmp(a.get<const float>(), b.get<const float>(), 64));
}

TEST(Initializer, BadArgumentsAreRejected) {
  EXPECT_THROW(uniform_initializer(1, 1), std::invalid_argument);
  EXPECT_THROW(normal_initializer(0, -1), std::invalid_argument);
  EXPECT_THROW(glorot_uniform_initializer(0, 3), std::invalid_argument);
  EXPECT_THROW(set_random_state("not a state"), std::invalid_argument);
}

}  // namespace
}  // namespace mg
