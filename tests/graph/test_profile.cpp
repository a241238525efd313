// FunctionProfile: each function's forward and backward and each solver
// update recorded under its name while a profile lives, nothing before or
// after, inner calls counted as the outer one's, one profile at a time;
// the products' own time, each product once and a team's as its wall time.
#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <string>
#include <thread>

#include <mixgraph/mixgraph.hpp>

namespace mg {
namespace {

namespace F = functions;

TEST(FunctionProfile, RecordsEachFunctionsForwardAndBackwardByName) {
  ParameterScope params;
  auto x = make_variable({4, 3});
  auto loss = F::sum(F::relu(PF::affine(x, 5, params["fc"])));
  auto solver = solvers::Sgd(0.1f);
  solver->set_parameters(params.parameters());
  loss->forward();  // before the profile: not recorded
  EXPECT_FALSE(FunctionProfile::recording());
  {
    FunctionProfile profile;
    EXPECT_TRUE(FunctionProfile::recording());
    solver->zero_grad();
    loss->forward();
    loss->backward();
    solver->update();
    const auto times = profile.times();
    for (const char* key :
         {"Affine forward", "ReLU forward", "Sum forward", "Affine backward",
          "ReLU backward", "Sum backward"}) {
      ASSERT_TRUE(times.count(key)) << key;
      EXPECT_EQ(times.at(key).calls, 1) << key;
      EXPECT_GE(times.at(key).seconds, 0.0) << key;
    }
    // update(): one entry under the solver's name for W's and b's rules,
    // which run together (backward_and_update() has one a parameter).
    const std::string update = solver->name() + " update";
    ASSERT_TRUE(times.count(update)) << update;
    EXPECT_EQ(times.at(update).calls, 1);
    EXPECT_EQ(times.size(), 7u);
    EXPECT_GT(profile.total_seconds(), 0.0);
    profile.clear();
    EXPECT_TRUE(profile.times().empty());
  }
  EXPECT_FALSE(FunctionProfile::recording());
  loss->forward();  // after it: nothing records, nothing breaks
  FunctionProfile next;
  EXPECT_TRUE(next.times().empty());
}

TEST(FunctionProfile, AnInnerCallIsTheOuterOnesTime) {
  FunctionProfile profile;
  {
    const FunctionProfile::Scope outer("Outer", "forward");
    const FunctionProfile::Scope inner("Inner", "forward");
  }
  const auto times = profile.times();
  EXPECT_EQ(times.size(), 1u);
  ASSERT_TRUE(times.count("Outer forward"));
  EXPECT_EQ(times.at("Outer forward").calls, 1);
}

TEST(FunctionProfile, OneAtATime) {
  FunctionProfile profile;
  try {
    FunctionProfile second;
    FAIL() << "expected an exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[FunctionProfile] another profile is recording"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(FunctionProfile::recording());  // the first still records
}

TEST(FunctionProfile, ADeviceThatIsNotThereIsRefusedByName) {
  try {
    FunctionProfile profile("npu:0");
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[FunctionProfile]"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("device 'npu:0' is not available"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(FunctionProfile::recording());  // nothing was left behind
  FunctionProfile on_the_host("cpu");          // "cpu": the host's times
  auto y = F::relu(make_variable({2, 2}));
  y->forward();
  EXPECT_EQ(on_the_host.times().count("ReLU forward"), 1u);
}

// Seconds since `start` on the clock the profile reads.
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

TEST(FunctionProfile, ProductsRecordTheirOwnTime) {
  ParameterScope params;
  auto x = make_variable({64, 32});
  auto y = F::relu(PF::affine(x, 48, params["fc"]));
  y->forward();  // before the profile: not recorded
  FunctionProfile profile;
  EXPECT_EQ(profile.product_seconds(), 0.0);
  F::relu(x)->forward();  // no product in it
  EXPECT_EQ(profile.product_seconds(), 0.0);
  y->forward();
  const double affine = profile.product_seconds();
  EXPECT_GT(affine, 0.0);
  EXPECT_LE(affine, profile.total_seconds());  // inside Affine's time
  profile.clear();
  EXPECT_EQ(profile.product_seconds(), 0.0);
}

// The functions whose products run on a team's threads (a recurrent step's
// bands, attention's blocks) or inside other products (a convolution):
// their products' time is some, and no more than their own.
TEST(FunctionProfile, ProductsAreNoMoreThanTheirFunctions) {
  ParameterScope params;
  PF::ConvolutionParams padded;
  padded.pad = {1, 1};
  auto q = make_variable({2, 4, 64, 16}, true);
  const std::vector<std::pair<const char*, VariablePtr>> graphs = {
      {"LSTM", std::get<0>(PF::lstm(make_variable({8, 16, 32}, true), nullptr,
                                    nullptr, 64, params["lstm"]))},
      {"attention", F::scaled_dot_product_attention(q, q, q, true)},
      {"convolution", PF::convolution(make_variable({4, 16, 12, 12}, true), 32,
                                      {3, 3}, params["conv"], padded)}};
  for (const auto& [name, y] : graphs) {
    SCOPED_TRACE(name);
    auto loss = F::sum(y);
    loss->forward();
    FunctionProfile profile;
    loss->forward();
    loss->backward();
    EXPECT_GT(profile.product_seconds(), 0.0);
    EXPECT_LE(profile.product_seconds(), profile.total_seconds());
  }
}

// Bounds rather than times: a product inside another, counted twice, would
// take more than the wall time around both.
TEST(FunctionProfile, AProductInsideAnotherCountsOnce) {
  FunctionProfile profile;
  const auto start = std::chrono::steady_clock::now();
  {
    const FunctionProfile::ProductScope outer;
    const FunctionProfile::ProductScope inner;
    sleep_ms(20);
  }
  const double wall = seconds_since(start);
  EXPECT_GE(profile.product_seconds(), 0.020);
  EXPECT_LE(profile.product_seconds(), wall);
}

// A team's threads, each in a product of its own, add a share each: the
// team's wall time once. Inside an outer product that runs on the whole
// team, they add nothing of their own.
TEST(FunctionProfile, ATeamsProductsAddItsWallTimeOnce) {
  for (bool outer_product : {false, true}) {
    SCOPED_TRACE(outer_product ? "inside a whole-team product" : "alone");
    FunctionProfile profile;
    const auto start = std::chrono::steady_clock::now();
    {
      std::unique_ptr<FunctionProfile::ProductScope> outer;
      if (outer_product) {
        outer = std::make_unique<FunctionProfile::ProductScope>();
      }
#pragma omp parallel num_threads(2)
      {
        const FunctionProfile::ProductScope mine;
        sleep_ms(20);
      }
    }
    const double wall = seconds_since(start);
    EXPECT_GE(profile.product_seconds(), 0.020);
    EXPECT_LE(profile.product_seconds(), wall);
  }
}

}  // namespace
}  // namespace mg
