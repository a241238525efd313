#include <mixgraph/contexts/caching_allocator.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <stdexcept>
#include <utility>

namespace mg {

namespace {

size_t round_up(size_t v, size_t step) { return (v + step - 1) / step * step; }

}  // namespace

CachingAllocator::CachingAllocator(RawAllocator& raw, std::string name,
                                   CachingAllocatorOptions options)
    : raw_(raw), name_(std::move(name)), opt_(options) {
  if (opt_.round == 0 || opt_.small_segment < opt_.small_limit ||
      opt_.large_round == 0) {
    throw std::invalid_argument(
        msg("[CachingAllocator ", name_, "] inconsistent size options"));
  }
}

CachingAllocator::~CachingAllocator() {
  for (Block* head : segment_heads_) {
    raw_.free(head->ptr);
    for (Block* b = head; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

size_t CachingAllocator::rounded_size(size_t bytes) const {
  return round_up(bytes == 0 ? 1 : bytes, opt_.round);
}

std::unique_ptr<Memory> CachingAllocator::allocate(size_t bytes) {
  const size_t size = rounded_size(bytes);
  const bool small = size <= opt_.small_limit;
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = take_block(size, small);
  if (!b) b = new_segment(size, small);
  if (!b) {
    // Out of memory: give every wholly free segment back and try once more.
    release_cache_locked();
    b = new_segment(size, small);
  }
  if (!b) {
    throw std::runtime_error(
        msg("[CachingAllocator ", name_, "] out of memory allocating ", size,
            " bytes (", stats_.in_use, " in use, ", reserved_,
            " reserved after releasing the cache)"));
  }
  split(b, size);
  b->free = false;
  allocated_.emplace(b->ptr, b);
  stats_.in_use += b->size;
  stats_.cached -= b->size;
  if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
  return std::make_unique<Memory>(b->ptr, b->size, this);
}

// The smallest free block of the pool that fits (best fit); null if none.
CachingAllocator::Block* CachingAllocator::take_block(size_t size, bool small) {
  FreeSet& pool = small ? free_small_ : free_large_;
  Block key{nullptr, size, small};
  auto it = pool.lower_bound(&key);
  if (it == pool.end()) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

// A fresh segment for a request of `size`, as one free block (counted as
// cached until split and handed out); null when the raw allocator fails.
CachingAllocator::Block* CachingAllocator::new_segment(size_t size,
                                                       bool small) {
  const size_t seg =
      small ? opt_.small_segment : round_up(size, opt_.large_round);
  void* p = raw_.allocate(seg);
  if (!p) return nullptr;
  Block* b = new Block{static_cast<char*>(p), seg, small};
  segment_heads_.insert(b);
  reserved_ += seg;
  stats_.cached += seg;
  return b;
}

// Cuts `b` to `size` when the rest is worth keeping as a free block: any
// remainder of a small segment; only more than small_limit of a large one,
// so large blocks are not whittled into pieces that only small requests fit.
void CachingAllocator::split(Block* b, size_t size) {
  const size_t rest = b->size - size;
  const bool worth = b->small ? rest >= opt_.round : rest > opt_.small_limit;
  if (!worth) return;
  Block* r = new Block{b->ptr + size, rest, b->small};
  r->free = true;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  (b->small ? free_small_ : free_large_).insert(r);
}

void CachingAllocator::release(void* ptr, size_t) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) return;  // not ours: nothing to do
  Block* b = it->second;
  allocated_.erase(it);
  stats_.in_use -= b->size;
  stats_.cached += b->size;
  b->free = true;
  FreeSet& pool = b->small ? free_small_ : free_large_;
  // Merge with free neighbours: the block absorbs the next one, and the
  // previous one absorbs the block.
  if (b->next && b->next->free) {
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (b->prev && b->prev->free) {
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  pool.insert(b);
}

void CachingAllocator::release_cache_locked() {
  for (auto it = segment_heads_.begin(); it != segment_heads_.end();) {
    Block* b = *it;
    if (!b->free || b->next) {
      ++it;
      continue;
    }
    (b->small ? free_small_ : free_large_).erase(b);
    raw_.free(b->ptr);
    reserved_ -= b->size;
    stats_.cached -= b->size;
    delete b;
    it = segment_heads_.erase(it);
  }
}

void CachingAllocator::release_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cache_locked();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.in_use;
}

size_t CachingAllocator::segments() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return segment_heads_.size();
}

size_t CachingAllocator::reserved() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace mg
