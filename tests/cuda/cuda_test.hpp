// What the CUDA tests share: the skip where there is no GPU.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <mixgraph/contexts/device.hpp>

/// Skips the test, saying why, unless a CUDA device is there.
#define MG_REQUIRE_CUDA_DEVICE()                     \
  do {                                               \
    std::string mg_why_;                             \
    if (::mg::device_count("cuda", &mg_why_) == 0) { \
      GTEST_SKIP() << "no CUDA device: " << mg_why_; \
    }                                                \
  } while (0)

namespace mg::test {

/// The fixture of every CUDA test: skipped where there is no GPU.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override { MG_REQUIRE_CUDA_DEVICE(); }
};

}  // namespace mg::test
