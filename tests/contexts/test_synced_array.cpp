// SyncedArray: get caches, cast drops other copies, zero and fill are
// deferred; and the allocator's alignment and counters.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/synced_array.hpp>

namespace mg {
namespace {

TEST(SyncedArray, NewArrayReadsAsZerosAndIsZeroing) {
  SyncedArray a(5);
  EXPECT_TRUE(a.zeroing());
  EXPECT_EQ(a.num_copies(), 0u);
  const float* p = static_cast<const float*>(a.get(Dtype::f32));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p[i], 0.0f);
  EXPECT_FALSE(a.zeroing());
}

TEST(SyncedArray, GetConvertsOnceAndCaches) {
  SyncedArray a(3);
  float* w = static_cast<float*>(a.cast(Dtype::f32));
  w[0] = 1.5f, w[1] = -2.0f, w[2] = 65504.0f;
  const void* h1 = a.get(Dtype::f16);
  EXPECT_EQ(a.num_copies(), 2u);
  EXPECT_EQ(a.dtype(), Dtype::f32) << "get must not move the head";
  const void* h2 = a.get(Dtype::f16);
  EXPECT_EQ(h1, h2) << "a second get must reuse the cached copy";
  const Half* h = static_cast<const Half*>(h1);
  EXPECT_EQ(static_cast<float>(h[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(h[2]), 65504.0f);
}

TEST(SyncedArray, CastDropsOtherCopies) {
  SyncedArray a(4);
  static_cast<float*>(a.cast(Dtype::f32))[0] = 3.0f;
  a.get(Dtype::f16);
  a.get(Dtype::bf16);
  EXPECT_EQ(a.num_copies(), 3u);
  Half* h = static_cast<Half*>(a.cast(Dtype::f16));
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_TRUE(a.has_copy(Dtype::f16));
  EXPECT_EQ(a.dtype(), Dtype::f16);
  EXPECT_EQ(static_cast<float>(h[0]), 3.0f) << "cast keeps the contents";
  h[0] = Half(5.0f);
  // The float copy is made again from the new head.
  EXPECT_EQ(static_cast<const float*>(a.get(Dtype::f32))[0], 5.0f);
}

TEST(SyncedArray, CastWithCopyKeepsThatCopyBesideTheHead) {
  SyncedArray a(4);
  static_cast<float*>(a.cast(Dtype::f32))[0] = 3.0f;
  const void* bf = a.get(Dtype::bf16);
  a.get(Dtype::f16);
  auto [head, beside] = a.cast_with_copy(Dtype::f32, Dtype::bf16);
  EXPECT_EQ(beside, bf) << "the copy's own block, kept";
  EXPECT_EQ(a.num_copies(), 2u) << "the half copy is dropped";
  EXPECT_FALSE(a.has_copy(Dtype::f16));
  EXPECT_EQ(a.dtype(), Dtype::f32);
  EXPECT_EQ(static_cast<float*>(head)[0], 3.0f) << "cast keeps the contents";
  // The caller writes both; the next get reads the copy as written.
  static_cast<float*>(head)[0] = 5.0f;
  static_cast<BFloat16*>(beside)[0] = BFloat16(5.0f);
  EXPECT_EQ(a.get(Dtype::bf16), beside);
  EXPECT_EQ(static_cast<float>(static_cast<const BFloat16*>(beside)[0]), 5.0f);
  // Without such a copy one is made, and from a 16-bit head the fp32 head
  // is converted from it first.
  SyncedArray b(2);
  static_cast<Half*>(b.cast(Dtype::f16))[1] = Half(7.0f);
  auto [h2, c2] = b.cast_with_copy(Dtype::f32, Dtype::f16);
  EXPECT_EQ(static_cast<float*>(h2)[1], 7.0f);
  EXPECT_NE(c2, nullptr);
  EXPECT_EQ(b.num_copies(), 2u);
  EXPECT_EQ(b.dtype(), Dtype::f32);
  EXPECT_THROW(b.cast_with_copy(Dtype::f16, Dtype::f16), std::invalid_argument);
}

TEST(SyncedArray, WriteOnlyCastSkipsTheConversion) {
  SyncedArray a(2);
  static_cast<float*>(a.cast(Dtype::f32))[0] = 3.0f;
  a.cast(Dtype::f16, "cpu", /*write_only=*/true);
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_EQ(a.dtype(), Dtype::f16);
}

TEST(SyncedArray, ZeroAndFillAreDeferred) {
  SyncedArray a(4);
  static_cast<float*>(a.cast(Dtype::f32))[1] = 7.0f;
  a.get(Dtype::f16);
  a.zero();
  EXPECT_TRUE(a.zeroing());
  EXPECT_EQ(a.num_copies(), 0u) << "zero must not touch memory yet";
  const Half* h = static_cast<const Half*>(a.get(Dtype::f16));
  EXPECT_EQ(static_cast<float>(h[1]), 0.0f);
  EXPECT_EQ(a.num_copies(), 1u) << "the fill is made in the requested type";
  a.fill(2.5);
  EXPECT_FALSE(a.zeroing());
  EXPECT_TRUE(a.filling());
  const double* d = static_cast<const double*>(a.get(Dtype::f64));
  EXPECT_EQ(d[3], 2.5);
}

// mark_finite() (a writer that saw every value finite) holds while the
// head is what it marked: reading other copies keeps it, any write (a cast,
// even write-only), zero, fill or clear drops it. A new array has no head
// to mark.
TEST(SyncedArray, KnownFiniteHoldsUntilTheNextWrite) {
  SyncedArray a(4);
  a.mark_finite();
  EXPECT_FALSE(a.known_finite()) << "a pending zero has no head to mark";
  auto mark = [&] {
    a.cast(Dtype::f32);
    a.mark_finite();
    EXPECT_TRUE(a.known_finite());
  };
  mark();
  a.get(Dtype::f16);
  a.get(Dtype::f32);
  EXPECT_TRUE(a.known_finite()) << "reads keep it";
  a.cast(Dtype::f32);
  EXPECT_FALSE(a.known_finite()) << "a cast to the head itself";
  mark();
  a.cast(Dtype::f16, "cpu", /*write_only=*/true);
  EXPECT_FALSE(a.known_finite()) << "a write-only cast";
  mark();
  Array old;
  a.cast_taking_head(Dtype::f16, "cpu", &old);
  EXPECT_FALSE(a.known_finite()) << "cast_taking_head";
  mark();
  a.zero();
  EXPECT_FALSE(a.known_finite()) << "zero";
  mark();
  a.fill(1.0);
  EXPECT_FALSE(a.known_finite()) << "fill";
  mark();
  a.clear();
  EXPECT_FALSE(a.known_finite()) << "clear";
}

TEST(SyncedArray, OtherDevicesAreRejectedByName) {
  // No machine has 4096 GPUs: without CUDA, without a GPU and with one, the
  // device is named and said to be unavailable.
  SyncedArray a(1);
  try {
    a.get(Dtype::f32, "cuda:4096");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[SyncedArray::get] device 'cuda:4096' is not available: "),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuAllocator, AlignsTo64BytesCountsAndReuses) {
  auto& alloc = CpuAllocator::instance();
  const MemoryStats before = alloc.stats();
  void* first;
  {
    auto m = alloc.allocate(1000);
    first = m->ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->ptr()) % 64, 0u);
    EXPECT_GE(m->bytes(), 1000u);
    EXPECT_EQ(alloc.stats().in_use, before.in_use + m->bytes());
    EXPECT_GE(alloc.stats().peak, alloc.stats().in_use);
  }
  EXPECT_EQ(alloc.stats().in_use, before.in_use);
  auto again = alloc.allocate(1000);
  EXPECT_EQ(again->ptr(), first) << "a freed block of the same size is reused";
}

TEST(CpuAllocator, VectorsOnItCountAndReuseTheirBlocks) {
  auto& alloc = CpuAllocator::instance();
  const size_t base = alloc.stats().in_use;
  const size_t n = 3 << 20;  // 12 MB: a fresh mapping under std::allocator
  const float* first;
  {
    std::vector<float, CpuVectorAllocator<float>> v(n, 1.0f);
    first = v.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u);
    EXPECT_GE(alloc.stats().in_use, base + n * sizeof(float));
  }
  EXPECT_EQ(alloc.stats().in_use, base) << "the vector's block went back";
  std::vector<float, CpuVectorAllocator<float>> again(n);
  EXPECT_EQ(again.data(), first) << "the next vector of its size reuses it";
}

TEST(CpuAllocator, PeakTracksTheHighWaterMark) {
  auto& alloc = CpuAllocator::instance();
  alloc.reset_peak();
  const size_t base = alloc.stats().in_use;
  {
    auto a = alloc.allocate(1 << 20);
    auto b = alloc.allocate(1 << 20);
  }
  EXPECT_GE(alloc.stats().peak, base + (2u << 20));
  alloc.reset_peak();
  EXPECT_EQ(alloc.stats().peak, alloc.stats().in_use);
}

// A channel-blocked copy ([n][c / 16][s][c % 16]) is another copy of the
// same elements: converted from the head on get (type and layout in one
// pass), made the head by cast, read back plain in any type; a layout that
// does not cover the array is refused with the sizes.
TEST(SyncedArray, ChannelBlockedCopies) {
  const int64_t N = 2, C = 32, S = 3;
  const Layout l{16, N, C, S};
  SyncedArray a(N * C * S);
  float* w = static_cast<float*>(a.cast(Dtype::f32));
  for (int64_t i = 0; i < N * C * S; ++i) w[i] = static_cast<float>(i);
  auto blocked_at = [&](int64_t n, int64_t c, int64_t s) {
    return ((n * (C / 16) + c / 16) * S + s) * 16 + c % 16;
  };
  const float* b = static_cast<const float*>(a.get(Dtype::f32, l));
  EXPECT_TRUE(a.layout().plain()) << "get must not move the head";
  EXPECT_TRUE(a.has_copy(Dtype::f32, "cpu", l));
  EXPECT_EQ(a.num_copies(), 2u);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        ASSERT_EQ(b[blocked_at(n, c, s)],
                  static_cast<float>((n * C + c) * S + s));
  // A bf16 blocked head, written, then read plain in float and double.
  BFloat16* h = static_cast<BFloat16*>(a.cast(Dtype::bf16, l, true));
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_EQ(a.layout(), l);
  EXPECT_EQ(a.dtype(), Dtype::bf16);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        h[blocked_at(n, c, s)] = BFloat16(static_cast<float>(c - s));
  const float* f = static_cast<const float*>(a.get(Dtype::f32));
  const double* d = static_cast<const double*>(a.get(Dtype::f64));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        ASSERT_EQ(f[(n * C + c) * S + s], static_cast<float>(c - s));
        ASSERT_EQ(d[(n * C + c) * S + s], static_cast<double>(c - s));
      }
  // A plain cast drops the blocked copy.
  a.cast(Dtype::f32);
  EXPECT_EQ(a.num_copies(), 1u);
  EXPECT_TRUE(a.layout().plain());
  try {
    a.get(Dtype::f32, Layout{16, N, 24, 4});
    FAIL() << "a layout of 24 channels in blocks of 16 was taken";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[SyncedArray::get]"), std::string::npos) << m;
    EXPECT_NE(m.find("2 x 24 x 4 in blocks of 16"), std::string::npos) << m;
    EXPECT_NE(m.find("192 elements"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace mg
