// cpu::parallel_min_for, the rule for when a loop of the CPU functions
// wakes the thread team: only for big loops where OpenMP's team sleeps
// between regions (OMP_WAIT_POLICY=passive), or at what
// MIXGRAPH_PARALLEL_MIN forces; loops of an exp an element sooner.
#include <gtest/gtest.h>

#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::test {
namespace {

TEST(ParallelMin, PassiveTeamsWaitForBiggerLoops) {
  EXPECT_EQ(cpu::parallel_min_for(nullptr, nullptr), 1 << 15);
  EXPECT_EQ(cpu::parallel_min_for("active", nullptr), 1 << 15);
  EXPECT_EQ(cpu::parallel_min_for("passive", nullptr), 1 << 20);
  EXPECT_EQ(cpu::parallel_min_for("PASSIVE", nullptr), 1 << 20);
  EXPECT_EQ(cpu::parallel_min_for("passive", "5000"), 5000);
  EXPECT_EQ(cpu::parallel_min_for(nullptr, "1"), 1);
  // What is not a positive count is ignored.
  for (const char* bad : {"", "0", "-3", "12abc", "lots"}) {
    EXPECT_EQ(cpu::parallel_min_for("passive", bad), 1 << 20) << bad;
  }
  EXPECT_GT(cpu::parallel_min(), 0);
  EXPECT_LE(cpu::kParallelMinCompute, cpu::parallel_min_for(nullptr, nullptr));
}

// The softmax tiles' exps pay for a passive team's wake at a quarter of
// the elements; below 1 << 18 the general rule (active, forced) stands.
TEST(ParallelMin, LoopsOfExpsWakeTheTeamSooner) {
  EXPECT_EQ(
      cpu::parallel_min_exp_for(cpu::parallel_min_for("passive", nullptr)),
      1 << 18);
  EXPECT_EQ(cpu::parallel_min_exp_for(cpu::parallel_min_for("active", nullptr)),
            1 << 15);
  EXPECT_EQ(cpu::parallel_min_exp_for(cpu::parallel_min_for("passive", "5000")),
            5000);
  EXPECT_EQ(cpu::parallel_min_exp(),
            cpu::parallel_min_exp_for(cpu::parallel_min()));
  EXPECT_LE(cpu::parallel_min_exp(), cpu::parallel_min());
}

}  // namespace
}  // namespace mg::test
