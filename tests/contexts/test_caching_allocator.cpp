// The caching allocator's bookkeeping (the CUDA device allocator's), driven
// on the host through malloc: size rounding, the small and large pools,
// block split and merge, counters, and free-and-retry when memory runs out.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include <mixgraph/contexts/caching_allocator.hpp>

namespace mg {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// malloc with a budget, counting calls; nullptr past the budget, like
// cudaMalloc's out-of-memory.
class BudgetMalloc : public RawAllocator {
 public:
  explicit BudgetMalloc(size_t budget) : budget_(budget) {}
  void* allocate(size_t bytes) override {
    ++allocations;
    if (held + bytes > budget_) return nullptr;
    held += bytes;
    void* p = std::malloc(bytes);
    sizes_[p] = bytes;
    return p;
  }
  void free(void* p) override {
    ++frees;
    held -= sizes_.at(p);
    sizes_.erase(p);
    std::free(p);
  }
  size_t held = 0;
  int allocations = 0, frees = 0;

 private:
  size_t budget_;
  std::map<void*, size_t> sizes_;
};

TEST(CachingAllocator, RoundsTo512AndCarvesSmallBlocksFromOneSegment) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  EXPECT_EQ(a.rounded_size(0), 512u);
  EXPECT_EQ(a.rounded_size(1), 512u);
  EXPECT_EQ(a.rounded_size(513), 1024u);
  auto m1 = a.allocate(100);
  auto m2 = a.allocate(1000);
  auto m3 = a.allocate(4000);
  EXPECT_EQ(m1->bytes(), 512u);
  EXPECT_EQ(m2->bytes(), 1024u);
  EXPECT_EQ(m3->bytes(), 4096u);
  // One 2 MiB segment, split in order: each block starts where the last
  // one ended.
  EXPECT_EQ(raw.allocations, 1);
  EXPECT_EQ(a.segments(), 1u);
  EXPECT_EQ(static_cast<char*>(m2->ptr()), static_cast<char*>(m1->ptr()) + 512);
  EXPECT_EQ(static_cast<char*>(m3->ptr()),
            static_cast<char*>(m2->ptr()) + 1024);
  const MemoryStats s = a.stats();
  EXPECT_EQ(s.in_use, 512u + 1024u + 4096u);
  EXPECT_EQ(s.cached, 2 * MiB - s.in_use);
  EXPECT_EQ(a.reserved(), 2 * MiB);
}

TEST(CachingAllocator, FreedBlocksMergeWithTheirNeighbours) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  auto m1 = a.allocate(512);
  auto m2 = a.allocate(512);
  auto m3 = a.allocate(512);
  char* base = static_cast<char*>(m1->ptr());
  m1.reset();
  m3.reset();  // merges with the free rest of the segment
  // A 1 KiB request does not fit the 512-byte hole before m2: it comes
  // from the merged block after it.
  auto m4 = a.allocate(1024);
  EXPECT_EQ(static_cast<char*>(m4->ptr()), base + 1024);
  m4.reset();
  m2.reset();  // now everything merges back into one free segment
  EXPECT_EQ(a.stats().in_use, 0u);
  EXPECT_EQ(a.stats().cached, 2 * MiB);
  // The whole segment is one block again: a request of the full 1 MiB
  // small limit fits at its start.
  auto big = a.allocate(1 * MiB);
  EXPECT_EQ(static_cast<char*>(big->ptr()), base);
  EXPECT_EQ(raw.allocations, 1);
}

TEST(CachingAllocator, ReusesTheBestFittingFreeBlock) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  auto m1 = a.allocate(8 * KiB);
  auto keep1 = a.allocate(512);
  auto m2 = a.allocate(2 * KiB);
  auto keep2 = a.allocate(512);
  void* p2 = m2->ptr();
  m1.reset();
  m2.reset();
  // 2 KiB fits both holes; the smaller (best fitting) one is taken.
  auto m3 = a.allocate(2 * KiB);
  EXPECT_EQ(m3->ptr(), p2);
}

TEST(CachingAllocator, LargeRequestsGetTheirOwnSegmentsAndAreCached) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  auto big = a.allocate(3 * MiB);
  EXPECT_EQ(a.reserved(), 4 * MiB);  // rounded to 2 MiB segments
  // The 1 MiB rest is not split off (large blocks are not whittled down to
  // pieces only small requests fit), so the block holds all 4 MiB.
  EXPECT_EQ(big->bytes(), 4 * MiB);
  void* p = big->ptr();
  big.reset();
  EXPECT_EQ(a.stats().cached, 4 * MiB);
  auto again = a.allocate(3 * MiB + 100);
  EXPECT_EQ(again->ptr(), p) << "a freed large block is reused";
  EXPECT_EQ(raw.allocations, 1);
  // Small requests never come out of large segments.
  auto small = a.allocate(512);
  EXPECT_EQ(a.segments(), 2u);
}

TEST(CachingAllocator, SplitsLargeBlocksWhenTheRestIsLarge) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  auto big = a.allocate(10 * MiB);
  char* base = static_cast<char*>(big->ptr());
  big.reset();
  auto part = a.allocate(4 * MiB);  // 6 MiB left: split off and kept
  auto rest = a.allocate(5 * MiB);
  EXPECT_EQ(static_cast<char*>(part->ptr()), base);
  EXPECT_EQ(static_cast<char*>(rest->ptr()), base + 4 * MiB);
  EXPECT_EQ(raw.allocations, 1);
}

TEST(CachingAllocator, CountsPeakAndResetsIt) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  {
    auto m1 = a.allocate(4 * MiB);
    auto m2 = a.allocate(2 * MiB);
    EXPECT_EQ(a.stats().peak, 6 * MiB);
  }
  EXPECT_EQ(a.stats().in_use, 0u);
  EXPECT_EQ(a.stats().peak, 6 * MiB);
  a.reset_peak();
  EXPECT_EQ(a.stats().peak, 0u);
  auto m = a.allocate(512);
  EXPECT_EQ(a.stats().peak, 512u);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  BudgetMalloc raw(8 * MiB);
  CachingAllocator a(raw, "test");
  a.allocate(3 * MiB).reset();   // a 4 MiB segment, cached
  auto small = a.allocate(512);  // a 2 MiB small segment: 6 MiB held
  EXPECT_EQ(raw.held, 6 * MiB);
  // 5 MiB does not fit the cached block, and a new 6 MiB segment does not
  // fit the budget until the cached one is given back.
  auto m = a.allocate(5 * MiB);
  EXPECT_EQ(m->bytes(), 6 * MiB);
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(raw.held, 8 * MiB);
  EXPECT_EQ(a.stats().in_use, 6 * MiB + 512);
}

TEST(CachingAllocator, OutOfMemoryAfterRetryIsAClearError) {
  BudgetMalloc raw(4 * MiB);
  CachingAllocator a(raw, "cuda:7");
  auto m = a.allocate(2 * MiB + 1);
  try {
    a.allocate(3 * MiB);
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[CachingAllocator cuda:7] out of memory allocating "
                        "3145728 bytes"),
              std::string::npos)
        << what;
  }
  // A segment in use is never released.
  EXPECT_EQ(m->bytes(), 2 * MiB + 512);
  EXPECT_EQ(raw.frees, 0);
}

TEST(CachingAllocator, ReleaseCacheFreesOnlyWhollyFreeSegments) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  auto held = a.allocate(512);  // small segment stays
  a.allocate(4 * MiB).reset();  // large segment: wholly free
  a.release_cache();
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(a.segments(), 1u);
  EXPECT_EQ(a.stats().cached, 2 * MiB - 512);
}

TEST(CachingAllocator, ManyBlocksInRandomOrderMergeBack) {
  BudgetMalloc raw(64 * MiB);
  CachingAllocator a(raw, "test");
  std::vector<std::unique_ptr<Memory>> blocks;
  for (int i = 0; i < 200; ++i) blocks.push_back(a.allocate(512 * (1 + i % 7)));
  std::set<void*> seen;
  for (auto& b : blocks) EXPECT_TRUE(seen.insert(b->ptr()).second);
  // Free in a scrambled order; every merge must keep the lists consistent.
  for (int i = 0; i < 200; ++i) blocks[(i * 37) % 200].reset();
  EXPECT_EQ(a.stats().in_use, 0u);
  EXPECT_EQ(a.stats().cached, a.reserved());
  a.release_cache();
  EXPECT_EQ(a.reserved(), 0u);
  EXPECT_EQ(raw.held, 0u);
}

}  // namespace
}  // namespace mg
