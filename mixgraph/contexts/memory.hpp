// Host memory: a 64-byte aligned caching allocator with usage counters.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace mg {

/// Usage counters of an allocator, in bytes.
struct MemoryStats {
  size_t in_use = 0;  // held by live arrays
  size_t peak = 0;    // the most ever in use since the last reset_peak()
  size_t cached = 0;  // freed by arrays, kept for reuse
};

/// Where a Memory block goes back to when destroyed (a device allocator);
/// blocks without one belong to the host allocator.
class MemoryPool {
 public:
  virtual void release(void* ptr, size_t bytes) = 0;

 protected:
  ~MemoryPool() = default;
};

/// A block of memory that returns itself to its allocator when destroyed.
class Memory {
 public:
  Memory(void* ptr, size_t bytes, MemoryPool* pool = nullptr)
      : ptr_(ptr), bytes_(bytes), pool_(pool) {}
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_;
  size_t bytes_;
  MemoryPool* pool_;
};

/// The host allocator: 64-byte alignment, blocks cached by rounded size and
/// reused, so a training loop that repeats the same shapes stops calling
/// the system allocator after its first step. Thread safe.
class CpuAllocator {
 public:
  static CpuAllocator& instance();

  /// A block of at least `bytes` (0 gives a valid, empty block).
  std::unique_ptr<Memory> allocate(size_t bytes);
  /// The same block as a raw pointer, for CpuVectorAllocator: given back by
  /// deallocate_bytes with the same `bytes`.
  void* allocate_bytes(size_t bytes);
  void deallocate_bytes(void* ptr, size_t bytes);
  MemoryStats stats() const;
  void reset_peak();
  /// Returns every cached block to the system.
  void release_cache();

 private:
  friend class Memory;
  void release(void* ptr, size_t bytes);
  CpuAllocator() = default;
  ~CpuAllocator();
  struct Impl;
  Impl& impl() const;
};

/// A standard allocator on CpuAllocator, for a kernel's scratch vectors:
/// a call that repeats the last one's sizes reuses its blocks (large
/// std::vector buffers are fresh pages, faulted in and zeroed by the
/// kernel, on every call) and they count in the allocator's peak.
template <class T>
struct CpuVectorAllocator {
  using value_type = T;
  CpuVectorAllocator() = default;
  template <class U>
  CpuVectorAllocator(const CpuVectorAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(
        CpuAllocator::instance().allocate_bytes(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    CpuAllocator::instance().deallocate_bytes(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const CpuVectorAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CpuVectorAllocator<U>&) const {
    return false;
  }
};

/// CpuVectorAllocator whose vectors leave their elements uninitialised:
/// `std::vector<float, CpuScratchAllocator<float>> v(n)` writes no zeros
/// (2% of an LSTM step was memset over gate buffers written whole right
/// after). For scratch that is written whole before it is read; a sum into
/// one starts from an explicit value (`v(n, 0.0f)`, `assign`).
template <class T>
struct CpuScratchAllocator : CpuVectorAllocator<T> {
  // A type whose default constructor writes (Half and BFloat16 zero their
  // bits) would be cleared anyway: hold such data as its bits.
  static_assert(std::is_trivially_default_constructible_v<T>,
                "CpuScratchAllocator: elements whose default constructor "
                "writes are zeroed anyway; use their bits (uint16_t)");
  template <class U>
  struct rebind {
    using other = CpuScratchAllocator<U>;
  };
  CpuScratchAllocator() = default;
  template <class U>
  CpuScratchAllocator(const CpuScratchAllocator<U>&) {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// Shorthand for CpuAllocator::instance().stats().
MemoryStats cpu_memory_stats();

}  // namespace mg
