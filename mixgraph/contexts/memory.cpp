#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace mg {

namespace {

constexpr size_t kAlignment = 64;

// Small blocks round to 512 bytes; larger ones to a quarter of their power of
// two, so a cached block wastes at most 25%.
size_t round_size(size_t bytes) {
  if (bytes <= 4096) return (bytes + 511) / 512 * 512;
  size_t p = 4096;
  while (p < bytes) p <<= 1;
  const size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

}  // namespace

// Free blocks by rounded size. A size's vector keeps its capacity, so a
// training loop that repeats its shapes allocates nothing here either.
struct CpuAllocator::Impl {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> cache;
  MemoryStats stats;
};

CpuAllocator& CpuAllocator::instance() {
  // Never destroyed: arrays held by static objects may be freed after main.
  static CpuAllocator* allocator = new CpuAllocator();
  return *allocator;
}

CpuAllocator::Impl& CpuAllocator::impl() const {
  static Impl* impl = new Impl();
  return *impl;
}

CpuAllocator::~CpuAllocator() { release_cache(); }

std::unique_ptr<Memory> CpuAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes == 0 ? 1 : bytes);
  return std::make_unique<Memory>(allocate_bytes(size), size);
}

void CpuAllocator::deallocate_bytes(void* ptr, size_t bytes) {
  release(ptr, round_size(bytes == 0 ? 1 : bytes));
}

void* CpuAllocator::allocate_bytes(size_t bytes) {
  const size_t size = round_size(bytes == 0 ? 1 : bytes);
  Impl& s = impl();
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.cache.find(size);
    if (it != s.cache.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      s.stats.cached -= size;
    }
  }
  if (!ptr) {
    ptr = std::aligned_alloc(kAlignment, size);
    if (!ptr) {
      // Give the cache back to the system and try once more.
      release_cache();
      ptr = std::aligned_alloc(kAlignment, size);
    }
    if (!ptr) {
      throw std::runtime_error(
          msg("[CpuAllocator] out of memory allocating ", size, " bytes"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.in_use += size;
    if (s.stats.in_use > s.stats.peak) s.stats.peak = s.stats.in_use;
  }
  return ptr;
}

void CpuAllocator::release(void* ptr, size_t bytes) {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.in_use -= bytes;
  s.stats.cached += bytes;
  s.cache[bytes].push_back(ptr);
}

MemoryStats CpuAllocator::stats() const {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void CpuAllocator::reset_peak() {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.peak = s.stats.in_use;
}

void CpuAllocator::release_cache() {
  Impl& s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& kv : s.cache) {
    for (void* p : kv.second) std::free(p);
  }
  s.cache.clear();
  s.stats.cached = 0;
}

Memory::~Memory() {
  if (pool_) {
    pool_->release(ptr_, bytes_);
  } else {
    CpuAllocator::instance().release(ptr_, bytes_);
  }
}

MemoryStats cpu_memory_stats() { return CpuAllocator::instance().stats(); }

}  // namespace mg
