#include <gtest/gtest.h>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/contexts/device.hpp>

namespace mg {
namespace {

TEST(Context, TypeConfigPicksTheBackendList) {
  EXPECT_EQ(context("cpu", "float").str(), "cpu:float");
  EXPECT_EQ(context("cpu", "half").str(), "cpu:half,cpu:float");
  EXPECT_EQ(context("cpu", "bfloat16").str(), "cpu:bfloat16,cpu:float");
  EXPECT_EQ(context("cpu", "half").type_config(), Dtype::f16);
}

TEST(Context, CudaListsCudnnThenCudaThenTheHost) {
  if (device_count("cuda") == 0) GTEST_SKIP() << "no GPU";
  EXPECT_EQ(context("cudnn", "half").str(),
            "cudnn:half,cudnn:float,cuda:half,cuda:float,cpu:float");
}

// Without a GPU (or in a build without CUDA) asking for one fails where the
// context is made, saying why, not at the first array moved there.
TEST(Context, CudaWithoutAGpuFailsAtCreationSayingWhy) {
  std::string why;
  if (device_count("cuda", &why) > 0) {
    EXPECT_THROW(context("cuda", "float", "99"), std::invalid_argument);
    return;
  }
  for (const char* ext : {"cuda", "cudnn"}) {
    try {
      context(ext, "half");
      ADD_FAILURE() << ext << " must throw without a GPU";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(std::string("[context] ") + ext +
                       ": device 'cuda:0' is not available: " + why),
                std::string::npos)
          << m;
    }
  }
}

TEST(Context, ParsesBackendLists) {
  const Context c = parse_context("cpu:bfloat16,cpu:float");
  ASSERT_EQ(c.backends.size(), 2u);
  EXPECT_EQ(c.backends[0].type, Dtype::bf16);
  EXPECT_EQ(c.str(), "cpu:bfloat16,cpu:float");
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected an exception mentioning " << part;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Context, BadTextIsRejectedWithTheOffendingPart) {
  expect_error([] { context("cpu", "fp8"); }, "unknown type_config 'fp8'");
  expect_error([] { context("tpu", "half"); }, "unknown extension 'tpu'");
  expect_error(
      [] { parse_context("cpu-half"); },
      "entry 'cpu-half' of 'cpu-half' is not of the form backend:type");
  expect_error([] { parse_context("cpu:half,gpu:float"); },
               "unknown backend 'gpu'");
  expect_error([] { parse_context("cpu:"); }, "not of the form");
  expect_error([] { parse_context(""); }, "names no backend");
}

TEST(Context, DefaultContextAndGuard) {
  const std::string before = default_context().str();
  {
    ContextGuard g(context("cpu", "half"));
    EXPECT_EQ(default_context().str(), "cpu:half,cpu:float");
  }
  EXPECT_EQ(default_context().str(), before);
}

}  // namespace
}  // namespace mg
