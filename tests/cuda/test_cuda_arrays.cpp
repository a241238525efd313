// SyncedArray on a GPU: transfers through the pinned buffers (larger than
// one staging chunk too), conversions on the device bit for bit against
// the host's, fills, and the caching allocator's counters.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/mixgraph.hpp>

#include "cuda_test.hpp"

namespace mg {
namespace {

using CudaArrays = test::CudaTest;

const Dtype kAll[] = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64,
                      Dtype::i32, Dtype::i64, Dtype::u8,   Dtype::b8};

// Values every dtype can hold (small integers and halves), plus, for the
// floating types, the awkward ones.
std::vector<float> sample_values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f * static_cast<float>(i % 200);
  return v;
}

TEST_F(CudaArrays, EveryDtypePairConvertsOnTheDeviceAsOnTheHost) {
  const size_t n = 1000;
  const auto values = sample_values(n);
  for (Dtype from : kAll) {
    for (Dtype to : kAll) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      SyncedArray a(n);
      convert(values.data(), Dtype::f32, a.cast(from, "cpu", true), from, n);
      // Host reference, then the same through the device.
      std::vector<unsigned char> host(n * dtype_size(to));
      convert(a.get(from), from, host.data(), to, n);
      a.get(from, "cuda:0");
      a.cast(from, "cuda:0");  // the device copy is now the only one
      a.get(to, "cuda:0");     // converted there
      a.cast(to, "cuda:0");
      const void* back = a.get(to, "cpu");
      EXPECT_EQ(std::memcmp(back, host.data(), host.size()), 0);
    }
  }
}

TEST_F(CudaArrays, HalfConversionsMatchTheHostForAllBitPatterns) {
  const size_t n = 1 << 16;  // every half, nan, inf and subnormals included
  SyncedArray a(n);
  auto* h = static_cast<uint16_t*>(a.cast(Dtype::f16, "cpu", true));
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> want(n);
  convert(h, Dtype::f16, want.data(), Dtype::f32, n);
  a.get(Dtype::f16, "cuda:0");
  a.cast(Dtype::f16, "cuda:0");
  const float* got = static_cast<const float*>(a.get(Dtype::f32, "cpu"));
  EXPECT_EQ(std::memcmp(got, want.data(), n * sizeof(float)), 0);
  // And back: float -> half on the device, rounding to nearest even.
  SyncedArray b(n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  auto* f = static_cast<float*>(b.cast(Dtype::f32, "cpu", true));
  for (size_t i = 0; i < n; ++i) f[i] = i % 3 ? dist(rng) : dist(rng) * 1e-9f;
  std::vector<uint16_t> want16(n);
  convert(f, Dtype::f32, want16.data(), Dtype::f16, n);
  b.get(Dtype::f16, "cuda:0");
  b.cast(Dtype::f16, "cuda:0");
  EXPECT_EQ(std::memcmp(b.get(Dtype::f16, "cpu"), want16.data(), n * 2), 0);
}

TEST_F(CudaArrays, LargeTransfersGoThroughTheStagingBuffersIntact) {
  const size_t n = 3 << 20;  // 12 MiB of floats: three 4 MiB chunks
  SyncedArray a(n);
  float* w = static_cast<float*>(a.cast(Dtype::f32, "cpu", true));
  for (size_t i = 0; i < n; ++i) w[i] = static_cast<float>(i % 100003);
  a.cast(Dtype::f32, "cuda:0");  // up, and the host copy goes
  EXPECT_EQ(a.num_copies(), 1u);
  const float* r = static_cast<const float*>(a.get(Dtype::f32, "cpu"));
  for (size_t i = 0; i < n; i += 997) {
    ASSERT_EQ(r[i], static_cast<float>(i % 100003)) << i;
  }
  EXPECT_EQ(r[n - 1], static_cast<float>((n - 1) % 100003));
}

TEST_F(CudaArrays, FillsRunOnTheDevice) {
  SyncedArray a(5000);
  a.fill(-2.5);
  a.get(Dtype::bf16, "cuda:0");
  const float* r = static_cast<const float*>(a.get(Dtype::f32, "cpu"));
  EXPECT_EQ(r[0], -2.5f);
  EXPECT_EQ(r[4999], -2.5f);
  a.zero();
  a.get(Dtype::f16, "cuda:0");
  EXPECT_EQ(static_cast<const float*>(a.get(Dtype::f32, "cpu"))[123], 0.0f);
}

TEST_F(CudaArrays, TheAllocatorCountsAndReusesBlocks) {
  const MemoryStats before = device_memory_stats("cuda:0");
  const void* first;
  {
    SyncedArray a(1 << 20);
    first = a.cast(Dtype::f32, "cuda:0", true);
    const MemoryStats during = device_memory_stats("cuda:0");
    EXPECT_EQ(during.in_use, before.in_use + (4u << 20));
    EXPECT_GE(during.peak, during.in_use);
  }
  const MemoryStats after = device_memory_stats("cuda:0");
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_GE(after.cached, 4u << 20);
  SyncedArray b(1 << 20);
  EXPECT_EQ(b.cast(Dtype::f32, "cuda:0", true), first)
      << "a freed block of the same size is reused";
}

TEST_F(CudaArrays, DevicesPastTheLastAreNamed) {
  const int n = device_count("cuda");
  SyncedArray a(1);
  const std::string dev = "cuda:" + std::to_string(n);
  try {
    a.get(Dtype::f32, dev);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("device '" + dev + "' is not available"),
        std::string::npos)
        << e.what();
  }
}

// Where there is no GPU (this test runs only there), a CUDA build says so
// by name instead of failing inside CUDA.
TEST(CudaWithoutGpu, ContextsSayNoGpuIsPresent) {
  std::string why;
  if (device_count("cuda", &why) > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_NE(why.find("no GPU present"), std::string::npos) << why;
  // context() refuses where the program asks for the GPU ...
  try {
    context("cudnn", "half");
    FAIL() << "context(\"cudnn\") was created without a GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[context] cudnn: device 'cuda:0' "
                                         "is not available: no GPU present"),
              std::string::npos)
        << e.what();
  }
  // ... and a context spelled out by hand fails at the first function run.
  ContextGuard guard(parse_context("cuda:half,cuda:float,cpu:float"));
  auto x = make_variable({2, 3});
  auto y = F::relu(x);
  EXPECT_EQ(y->parent()->function().backend().str(), "cuda:half");
  try {
    y->forward();
    FAIL() << "forward ran without a GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[relu] device 'cuda:0' is not available: no GPU present"),
              std::string::npos)
        << e.what();
  }
  SyncedArray a(4);
  try {
    a.get(Dtype::f16, "cuda:0");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU present"), std::string::npos);
  }
}

}  // namespace
}  // namespace mg
