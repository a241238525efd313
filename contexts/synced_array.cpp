#include <mixgraph/contexts/synced_array.hpp>

#include <stdexcept>

#include <mixgraph/contexts/convert.hpp>

namespace mg {

SyncedArray::SyncedArray(size_t size) : size_(size) {}

void SyncedArray::check_device(const std::string& device,
                               const char* where) const {
  if (device != "cpu") {
    throw std::invalid_argument(std::string("[SyncedArray::") + where +
                                "] device '" + device +
                                "' is not available in this build; only cpu");
  }
}

Array& SyncedArray::make_copy(Dtype dtype, const std::string& device) {
  auto [it, inserted] = copies_.try_emplace(Key{device, dtype});
  if (inserted) {
    it->second.dtype = dtype;
    it->second.device = device;
    it->second.memory =
        CpuAllocator::instance().allocate(size_ * dtype_size(dtype));
  }
  return it->second;
}

const void* SyncedArray::get(Dtype dtype, const std::string& device) {
  check_device(device, "get");
  if (pending_fill_) {
    // Materialise the fill in the requested type only: it becomes the head.
    copies_.clear();
    Array& a = make_copy(dtype, device);
    mg::fill(a.data(), dtype, pending_value_, size_);
    head_ = &a;
    pending_fill_ = false;
    return a.data();
  }
  auto it = copies_.find(Key{device, dtype});
  if (it != copies_.end()) return it->second.data();
  Array& a = make_copy(dtype, device);
  convert(head_->data(), head_->dtype, a.data(), dtype, size_);
  return a.data();
}

void* SyncedArray::cast(Dtype dtype, const std::string& device,
                        bool write_only) {
  check_device(device, "cast");
  if (pending_fill_) {
    copies_.clear();
    Array& a = make_copy(dtype, device);
    if (!write_only) mg::fill(a.data(), dtype, pending_value_, size_);
    head_ = &a;
    pending_fill_ = false;
    return a.data();
  }
  const Key key{device, dtype};
  auto it = copies_.find(key);
  if (it == copies_.end()) {
    Array& a = make_copy(dtype, device);
    if (!write_only) convert(head_->data(), head_->dtype, a.data(), dtype, size_);
    it = copies_.find(key);
  }
  // Every other copy is stale once the caller writes.
  for (auto other = copies_.begin(); other != copies_.end();) {
    other = other == it ? std::next(other) : copies_.erase(other);
  }
  head_ = &it->second;
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
}

void SyncedArray::clear() { zero(); }

bool SyncedArray::has_copy(Dtype dtype, const std::string& device) const {
  return copies_.count(Key{device, dtype}) != 0;
}

size_t SyncedArray::bytes() const {
  size_t total = 0;
  for (const auto& kv : copies_) total += kv.second.memory->bytes();
  return total;
}

}  // namespace mg
