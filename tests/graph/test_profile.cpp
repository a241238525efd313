// FunctionProfile: each function's forward and backward and each solver
// update recorded under its name while a profile lives, nothing before or
// after, inner calls counted as the outer one's, one profile at a time.
#include <gtest/gtest.h>

#include <string>

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
    // W and b: one update each, under the solver's name.
    const std::string update = solver->name() + " update";
    ASSERT_TRUE(times.count(update)) << update;
    EXPECT_EQ(times.at(update).calls, 2);
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

}  // namespace
}  // namespace mg
