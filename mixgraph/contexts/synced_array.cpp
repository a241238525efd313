#include <mixgraph/contexts/synced_array.hpp>

#include <atomic>
#include <stdexcept>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/transfers.hpp>

namespace mg {

namespace {

// transfer_stats()'s counters: arrays are cast from several threads.
std::atomic<uint64_t> g_to_device{0}, g_to_host{0}, g_bytes_to_device{0},
    g_bytes_to_host{0};

void copy_to_device(const DeviceRef& d, void* dst, const void* src,
                    size_t bytes) {
  d.backend->copy_to_device(d.index, dst, src, bytes);
  count_transfer_to_device(bytes);
}

void copy_to_host(const DeviceRef& s, void* dst, const void* src,
                  size_t bytes) {
  s.backend->copy_to_host(s.index, dst, src, bytes);
  count_transfer_to_host(bytes);
}

std::string tag(const char* where) {
  return std::string("[SyncedArray::") + where + "] ";
}

// dst = src converted, n elements, wherever the two live. A conversion
// between the host and a device runs on the device: host data travels in
// its own dtype and is converted there; device data is converted there and
// travels in the destination's dtype.
void transfer(const Array& src, Array& dst, size_t n, const char* where) {
  if (n == 0) return;
  const bool src_host = src.device == "cpu", dst_host = dst.device == "cpu";
  if (src_host && dst_host) {
    if (src.layout == dst.layout) {
      convert(src.data(), src.dtype, dst.data(), dst.dtype, n);
    } else {
      convert_layout(src.data(), src.dtype, src.layout, dst.data(), dst.dtype,
                     dst.layout, n);
    }
    return;
  }
  if (!src.layout.plain()) {
    // A blocked host copy travels plain.
    Array host{src.dtype,
               "cpu",
               {},
               CpuAllocator::instance().allocate(n * dtype_size(src.dtype))};
    transfer(src, host, n, where);
    transfer(host, dst, n, where);
    return;
  }
  if (src_host) {
    const DeviceRef d = resolve_device(dst.device, tag(where));
    if (src.dtype == dst.dtype) {
      copy_to_device(d, dst.data(), src.data(), n * dtype_size(src.dtype));
      return;
    }
    auto tmp = d.backend->allocate(d.index, n * dtype_size(src.dtype));
    copy_to_device(d, tmp->ptr(), src.data(), n * dtype_size(src.dtype));
    d.backend->convert(d.index, tmp->ptr(), src.dtype, dst.data(), dst.dtype,
                       n);
    return;  // tmp goes back to the cache; the device reuses it in order
  }
  const DeviceRef s = resolve_device(src.device, tag(where));
  if (dst_host) {
    if (src.dtype == dst.dtype) {
      copy_to_host(s, dst.data(), src.data(), n * dtype_size(dst.dtype));
      return;
    }
    auto tmp = s.backend->allocate(s.index, n * dtype_size(dst.dtype));
    s.backend->convert(s.index, src.data(), src.dtype, tmp->ptr(), dst.dtype,
                       n);
    copy_to_host(s, dst.data(), tmp->ptr(), n * dtype_size(dst.dtype));
    return;
  }
  const DeviceRef d = resolve_device(dst.device, tag(where));
  if (s.backend == d.backend && s.index == d.index) {
    s.backend->convert(s.index, src.data(), src.dtype, dst.data(), dst.dtype,
                       n);
    return;
  }
  // Between two devices: through the host, in the source dtype.
  Array host{src.dtype,
             "cpu",
             {},
             CpuAllocator::instance().allocate(n * dtype_size(src.dtype))};
  copy_to_host(s, host.data(), src.data(), n * dtype_size(src.dtype));
  transfer(host, dst, n, where);
}

}  // namespace

TransferStats transfer_stats() {
  TransferStats t;
  t.to_device = g_to_device.load(std::memory_order_relaxed);
  t.to_host = g_to_host.load(std::memory_order_relaxed);
  t.bytes_to_device = g_bytes_to_device.load(std::memory_order_relaxed);
  t.bytes_to_host = g_bytes_to_host.load(std::memory_order_relaxed);
  return t;
}

void count_transfer_to_device(size_t bytes) {
  g_to_device.fetch_add(1, std::memory_order_relaxed);
  g_bytes_to_device.fetch_add(bytes, std::memory_order_relaxed);
}

void count_transfer_to_host(size_t bytes) {
  g_to_host.fetch_add(1, std::memory_order_relaxed);
  g_bytes_to_host.fetch_add(bytes, std::memory_order_relaxed);
}

void reset_transfer_stats() {
  g_to_device = g_to_host = g_bytes_to_device = g_bytes_to_host = 0;
}

SyncedArray::SyncedArray(size_t size) : size_(size) {}

void SyncedArray::check_device(const std::string& device,
                               const char* where) const {
  if (device != "cpu") resolve_device(device, tag(where));
}

Array& SyncedArray::make_copy(Dtype dtype, const std::string& device,
                              const Layout& layout) {
  auto [it, inserted] = copies_.try_emplace(Key{device, dtype, layout});
  if (inserted) {
    it->second.dtype = dtype;
    it->second.device = device;
    it->second.layout = layout;
    const size_t bytes = size_ * dtype_size(dtype);
    if (device == "cpu") {
      it->second.memory = CpuAllocator::instance().allocate(bytes);
    } else {
      const DeviceRef d = resolve_device(device, tag("allocate"));
      it->second.memory = d.backend->allocate(d.index, bytes);
    }
  }
  return it->second;
}

// Writes the pending fill value into `a`.
void SyncedArray::fill_copy(Array& a, const char* where) {
  if (a.device == "cpu") {
    mg::fill(a.data(), a.dtype, pending_value_, size_);
  } else if (size_) {
    const DeviceRef d = resolve_device(a.device, tag(where));
    d.backend->fill(d.index, a.data(), a.dtype, pending_value_, size_);
  }
}

const void* SyncedArray::get(Dtype dtype, const std::string& device) {
  return get_copy(dtype, device, Layout{});
}

const void* SyncedArray::get(Dtype dtype, const Layout& layout) {
  return get_copy(dtype, "cpu", layout);
}

void* SyncedArray::cast(Dtype dtype, const std::string& device,
                        bool write_only) {
  return cast_copy(dtype, device, Layout{}, write_only);
}

void* SyncedArray::cast(Dtype dtype, const Layout& layout, bool write_only) {
  return cast_copy(dtype, "cpu", layout, write_only);
}

// A blocked layout must cover the array exactly.
static void check_layout(const Layout& l, size_t size, const char* where) {
  if (l.plain()) return;
  if (l.block <= 0 || l.channels % l.block != 0 ||
      static_cast<size_t>(l.batch * l.channels * l.spatial) != size) {
    throw std::invalid_argument(
        tag(where) + "a channel-blocked layout of " + std::to_string(l.batch) +
        " x " + std::to_string(l.channels) + " x " + std::to_string(l.spatial) +
        " in blocks of " + std::to_string(l.block) + " for an array of " +
        std::to_string(size) +
        " elements: the channels must be a multiple of the block and the "
        "layout must cover the array");
  }
}

const void* SyncedArray::get_copy(Dtype dtype, const std::string& device,
                                  const Layout& layout) {
  check_device(device, "get");
  check_layout(layout, size_, "get");
  if (pending_fill_) {
    // Materialise the fill in the requested type only: it becomes the head.
    copies_.clear();
    Array& a = make_copy(dtype, device, layout);
    fill_copy(a, "get");
    head_ = &a;
    pending_fill_ = false;
    return a.data();
  }
  auto it = copies_.find(Key{device, dtype, layout});
  if (it != copies_.end()) return it->second.data();
  Array& a = make_copy(dtype, device, layout);
  transfer(*head_, a, size_, "get");
  return a.data();
}

void* SyncedArray::cast_copy(Dtype dtype, const std::string& device,
                             const Layout& layout, bool write_only) {
  check_device(device, "cast");
  check_layout(layout, size_, "cast");
  known_finite_ = false;  // the caller writes
  if (pending_fill_) {
    copies_.clear();
    Array& a = make_copy(dtype, device, layout);
    if (!write_only) fill_copy(a, "cast");
    head_ = &a;
    pending_fill_ = false;
    return a.data();
  }
  const Key key{device, dtype, layout};
  auto it = copies_.find(key);
  if (it == copies_.end()) {
    Array& a = make_copy(dtype, device, layout);
    if (!write_only) transfer(*head_, a, size_, "cast");
    it = copies_.find(key);
  }
  // Every other copy is stale once the caller writes.
  for (auto other = copies_.begin(); other != copies_.end();) {
    other = other == it ? std::next(other) : copies_.erase(other);
  }
  head_ = &it->second;
  return head_->data();
}

std::pair<void*, void*> SyncedArray::cast_with_copy(Dtype dtype, Dtype beside) {
  if (beside == dtype) {
    throw std::invalid_argument(tag("cast_with_copy") +
                                "the copy beside the head must be of another "
                                "type than the head's, got both " +
                                dtype_name(dtype));
  }
  // The copy's block is kept out of the cast, which drops every other copy,
  // and put back: no free and no allocation between two steps. (Not where
  // it is the head, which the cast converts from.)
  const Key key{"cpu", beside, Layout{}};
  const auto it = copies_.find(key);
  const bool is_head = it != copies_.end() && head_ == &it->second;
  auto kept = is_head ? decltype(copies_)::node_type{} : copies_.extract(key);
  void* head = cast_copy(dtype, "cpu", Layout{}, false);
  if (kept) {
    copies_.insert(std::move(kept));
    return {head, copies_.at(key).data()};
  }
  return {head, make_copy(beside, "cpu").data()};
}

void* SyncedArray::cast_taking_head(Dtype dtype, const std::string& device,
                                    Array* old_head) {
  check_device(device, "cast_taking_head");
  known_finite_ = false;
  old_head->memory.reset();
  if (pending_fill_) get(dtype, device);  // the filled copy becomes the head
  if (head_->dtype == dtype && head_->device == device &&
      head_->layout.plain()) {
    return cast(dtype, device, false);
  }
  const std::string head_device = head_->device;
  const Dtype head_dtype = head_->dtype;
  if (!head_->layout.plain()) get(head_dtype, head_device);  // read it plain
  auto it = copies_.find(Key{head_device, head_dtype, Layout{}});
  *old_head = std::move(it->second);
  copies_.clear();
  head_ = &make_copy(dtype, device);
  return head_->data();
}

void SyncedArray::zero() { fill(0.0); }

void SyncedArray::fill(double value) {
  // Every copy goes back to the allocator's cache; the next access takes
  // a block of the same size from it.
  copies_.clear();
  head_ = nullptr;
  pending_fill_ = true;
  pending_value_ = value;
  known_finite_ = false;
}

void SyncedArray::clear() { zero(); }

bool SyncedArray::has_copy(Dtype dtype, const std::string& device,
                           const Layout& layout) const {
  return copies_.count(Key{device, dtype, layout}) != 0;
}

size_t SyncedArray::bytes() const {
  size_t total = 0;
  for (const auto& kv : copies_) total += kv.second.memory->bytes();
  return total;
}

}  // namespace mg
