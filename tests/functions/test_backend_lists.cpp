// The backend lists agree: every function has a CPU kernel in float, half
// and bfloat16, and every CUDA or cuDNN kernel has the CPU one of its type
// beside it (the fallback and the harness's reference). A group left out of
// functions/cpu/cpu_functions.hpp, or a type left out of a registration,
// fails here by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <mixgraph/functions/registry.hpp>

namespace mg::backend_lists_tests {
namespace {

bool has(const std::vector<Backend>& backends, const Backend& b) {
  for (const Backend& x : backends) {
    if (x == b) return true;
  }
  return false;
}

// "Prune lacks cpu:half" for each gap.
std::vector<std::string> backend_list_gaps(
    const std::vector<FunctionInfo>& list) {
  std::vector<std::string> gaps;
  for (const FunctionInfo& info : list) {
    for (Dtype t : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
      const Backend cpu{"cpu", t};
      if (!has(info.backends, cpu)) {
        gaps.push_back(std::string(info.decl->name) + " lacks " + cpu.str());
      }
    }
    for (const Backend& b : info.backends) {
      if (b.name != "cpu" && !has(info.backends, Backend{"cpu", b.type})) {
        gaps.push_back(std::string(info.decl->name) + " has " + b.str() +
                       " but not cpu:" + dtype_name(b.type));
      }
    }
  }
  return gaps;
}

TEST(BackendLists, EveryFunctionHasCpuKernelsInEveryFloatType) {
  const auto list = function_list();
  ASSERT_GT(list.size(), 100u);
  const auto gaps = backend_list_gaps(list);
  EXPECT_TRUE(gaps.empty()) << ::testing::PrintToString(gaps);
}

// The check itself sees both kinds of gap.
TEST(BackendLists, CheckFindsAMissingCpuTypeAndADeviceOnlyKernel) {
  static constexpr FunctionDecl kDecl{"Fake", "fake", {Port{"x"}}, {Port{"y"}}};
  const Backend f32{"cpu", Dtype::f32}, f16{"cpu", Dtype::f16},
      bf16{"cpu", Dtype::bf16};
  EXPECT_TRUE(backend_list_gaps({{&kDecl,
                                  Precision::reduced,
                                  {f32, f16, bf16, {"cuda", Dtype::f16}}}})
                  .empty());
  const auto missing =
      backend_list_gaps({{&kDecl, Precision::reduced, {f32, bf16}}});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].find("Fake lacks cpu:"), std::string::npos)
      << missing[0];
  const Backend cudnn_half{"cudnn", Dtype::f16};
  const auto device_only = backend_list_gaps(
      {{&kDecl, Precision::reduced, {f32, bf16, cudnn_half}}});
  ASSERT_EQ(device_only.size(), 2u);
  EXPECT_NE(device_only[1].find("Fake has cudnn:"), std::string::npos)
      << device_only[1];
}

}  // namespace
}  // namespace mg::backend_lists_tests
