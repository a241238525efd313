// A caching block allocator over an abstract raw allocator: the bookkeeping
// of the CUDA device allocator, in plain C++ so that a CPU test can drive it
// with malloc.
//
// Requests are rounded to 512 bytes. Small ones (up to 1 MiB) are carved out
// of 2 MiB segments, large ones out of segments rounded to 2 MiB; a free
// block at least as large as the request is split, and a freed block merges
// with its free neighbours in the same segment. When the raw allocator runs
// out, every wholly free segment goes back to it and the request is tried
// once more. The allocator does no synchronisation of its own: a device
// backend that runs all work of a device on one stream may reuse a block as
// soon as it is freed, since later work is ordered after earlier work.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include <mixgraph/contexts/memory.hpp>

namespace mg {

/// What a CachingAllocator takes its segments from (cudaMalloc, malloc).
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  /// A block of `bytes`, or nullptr when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
};

/// The size classes and segment sizes of a CachingAllocator.
struct CachingAllocatorOptions {
  size_t round = 512;              // every block is a multiple of this
  size_t small_limit = 1 << 20;    // requests up to this are "small"
  size_t small_segment = 2 << 20;  // the segment small blocks come from
  size_t large_round = 2 << 20;    // large segments round to this
};

/// Caches blocks of a RawAllocator. Thread safe. Counters: in_use (bytes of
/// blocks handed out, rounded), peak, cached (bytes held in free blocks).
class CachingAllocator final : public MemoryPool {
 public:
  /// `name` appears in errors ("cuda:0"); `raw` must outlive the allocator.
  CachingAllocator(RawAllocator& raw, std::string name,
                   CachingAllocatorOptions options = {});
  /// Returns every segment to the raw allocator; blocks still handed out
  /// must not be used afterwards.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// A block of at least `bytes` (0 gives a valid block of `round` bytes).
  /// Throws std::runtime_error naming the allocator and the sizes when the
  /// raw allocator fails even after the cache was released.
  std::unique_ptr<Memory> allocate(size_t bytes);
  MemoryStats stats() const;
  void reset_peak();
  /// Returns every wholly free segment to the raw allocator.
  void release_cache();

  /// The size a request is rounded to.
  size_t rounded_size(size_t bytes) const;
  /// Segments held (for tests and reports).
  size_t segments() const;
  /// Bytes held in segments: in_use + cached.
  size_t reserved() const;

  /// MemoryPool: called by Memory's destructor.
  void release(void* ptr, size_t bytes) override;

 private:
  struct Block {
    char* ptr;
    size_t size;
    bool small;
    bool free = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using FreeSet = std::set<Block*, BySize>;

  Block* take_block(size_t size, bool small);
  Block* new_segment(size_t size, bool small);
  void split(Block* b, size_t size);
  void release_cache_locked();

  RawAllocator& raw_;
  std::string name_;
  CachingAllocatorOptions opt_;
  mutable std::mutex mutex_;
  FreeSet free_small_, free_large_;
  std::unordered_map<void*, Block*> allocated_;
  std::set<Block*> segment_heads_;
  MemoryStats stats_;
  size_t reserved_ = 0;
};

}  // namespace mg
