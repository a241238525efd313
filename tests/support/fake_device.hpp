// A device backend made of host memory, registered as "fake": it lets the
// CPU tests drive SyncedArray's device paths and the solver's device hooks
// (the same paths the CUDA backend takes), counting what the device did.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include <mixgraph/contexts/caching_allocator.hpp>
#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/device.hpp>

namespace mg::test {

class FakeDevice : public DeviceBackend {
 public:
  /// Registers itself as "fake" with `devices` devices.
  static FakeDevice& instance() {
    static FakeDevice* d = [] {
      auto* f = new FakeDevice();
      register_device_backend("fake", f);
      return f;
    }();
    return *d;
  }

  int count(std::string* why) override {
    if (devices == 0 && why) *why = "no fake device present";
    return devices;
  }
  std::unique_ptr<Memory> allocate(int index, size_t bytes) override {
    return pool(index).allocate(bytes);
  }
  void copy_to_device(int, void* dst, const void* src, size_t bytes) override {
    ++to_device;
    bytes_to_device += bytes;
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(int, void* dst, const void* src, size_t bytes) override {
    ++to_host;
    bytes_to_host += bytes;
    std::memcpy(dst, src, bytes);
  }
  void convert(int, const void* src, Dtype s, void* dst, Dtype d,
               size_t n) override {
    ++conversions;
    mg::convert(src, s, dst, d, n);
  }
  void fill(int, void* dst, Dtype dtype, double value, size_t n) override {
    ++fills;
    mg::fill(dst, dtype, value, n);
  }
  void synchronize(int) override {}
  MemoryStats memory_stats(int index) override { return pool(index).stats(); }
  void reset_peak(int index) override { pool(index).reset_peak(); }
  void release_cache(int index) override { pool(index).release_cache(); }

  void reset_counters() {
    to_device = to_host = conversions = fills = 0;
    bytes_to_device = bytes_to_host = 0;
  }

  int devices = 2;
  int to_device = 0, to_host = 0, conversions = 0, fills = 0;
  size_t bytes_to_device = 0, bytes_to_host = 0;

 private:
  struct Malloc : RawAllocator {
    void* allocate(size_t bytes) override { return std::malloc(bytes); }
    void free(void* p) override { std::free(p); }
  };
  FakeDevice() = default;
  CachingAllocator& pool(int index) { return index == 0 ? pool0_ : pool1_; }
  Malloc raw_;
  CachingAllocator pool0_{raw_, "fake:0"}, pool1_{raw_, "fake:1"};
};

}  // namespace mg::test
