// SyncedArray: one logical buffer with physical copies keyed by
// (device, dtype). See DESIGN.md, "The one mechanism".
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/memory.hpp>

namespace mg {

/// How a copy orders its elements. Plain (block 0): as the array's shape
/// says, row-major. Channel-blocked (block > 0, on "cpu" only): the array
/// read as `batch` images of `channels` x `spatial` values, held in oneDNN's
/// layout nChw<block>c, [n][c / block][s][c % block], with channels a
/// multiple of block, so the copy holds the same elements in another order.
/// Convolutions write their outputs so and the functions between them
/// (batch normalization, elementwise ones) keep that layout, which spares
/// a pass over every activation at each end of each convolution; whoever
/// asks for the plain copy gets it converted, as for another dtype.
struct Layout {
  int64_t block = 0, batch = 0, channels = 0, spatial = 0;
  bool plain() const { return block == 0; }
  auto tie() const { return std::tie(block, batch, channels, spatial); }
  bool operator==(const Layout& o) const { return tie() == o.tie(); }
  bool operator!=(const Layout& o) const { return !(*this == o); }
  bool operator<(const Layout& o) const { return tie() < o.tie(); }
};

/// dst = src, n elements, converted from (src_type, from) to (dst_type,
/// to) on the host in one pass (contexts/cpu/channel_blocks.cpp).
void convert_layout(const void* src, Dtype src_type, const Layout& from,
                    void* dst, Dtype dst_type, const Layout& to, size_t n);

/// One physical copy of a SyncedArray.
struct Array {
  Dtype dtype;
  std::string device;
  Layout layout;
  std::unique_ptr<Memory> memory;
  void* data() const { return memory->ptr(); }
};

/// A buffer of `size` elements whose dtype is decided by whoever touches it:
/// - get(dtype) returns a readable copy, converting from the head once and
///   caching the copy until the next write;
/// - cast(dtype) makes that copy the head, for writing, and drops the others;
/// - zero() and fill(v) are deferred to the next get or cast.
/// A new array reads as zeros. Devices other than "cpu" ("cuda:0") go
/// through the DeviceBackend registered for them (contexts/device.hpp);
/// conversions between dtypes on a device run there.
class SyncedArray {
 public:
  explicit SyncedArray(size_t size);
  SyncedArray(const SyncedArray&) = delete;
  SyncedArray& operator=(const SyncedArray&) = delete;

  size_t size() const { return size_; }

  /// A readable pointer to the data as `dtype` on `device`, plain.
  const void* get(Dtype dtype, const std::string& device = "cpu");
  /// A writable pointer to the data as `dtype` on `device`, plain; that copy
  /// becomes the only one. With write_only the old contents are not
  /// converted (the caller overwrites every element).
  void* cast(Dtype dtype, const std::string& device = "cpu",
             bool write_only = false);
  /// The same on the host in `layout` (Layout{} is plain).
  const void* get(Dtype dtype, const Layout& layout);
  void* cast(Dtype dtype, const Layout& layout, bool write_only);

  /// cast(dtype) on the host, plain, for a kernel that writes, beside the
  /// head, every element of the plain host copy of type `beside` as get()
  /// would make it from the head (the solvers' update, which writes a
  /// weight's fp32 master and rounds it into the 16-bit copy that the next
  /// pass reads: no conversion pass of its own). Both pointers are
  /// writable; that copy stays current beside the head (its memory too,
  /// where it was held), every other copy is dropped. The caller must write
  /// all of both before anything reads either. `beside` must differ from
  /// `dtype` (std::invalid_argument).
  std::pair<void*, void*> cast_with_copy(Dtype dtype, Dtype beside);

  /// For a kernel that reads the head and writes every element of a new
  /// `dtype` copy on `device` (the loss scaler's fused unscale): like
  /// cast(dtype, device, true), but the old head moves into `*old_head`
  /// (left without memory when the head already is that copy), so that it
  /// can be read until the caller's work is done.
  void* cast_taking_head(Dtype dtype, const std::string& device,
                         Array* old_head);

  /// Sets every element to zero at the next access.
  void zero();
  /// Sets every element to `value` at the next access.
  void fill(double value);
  /// True while a deferred zero is pending: nothing was written since zero()
  /// (or since construction). Solvers skip such grads.
  bool zeroing() const { return pending_fill_ && pending_value_ == 0.0; }
  /// True while any deferred zero or fill is pending.
  bool filling() const { return pending_fill_; }

  /// For a kernel that has just written every element of the head, through
  /// the pointer of its own latest cast, and saw each value finite as it
  /// wrote it (our matrix product's epilogue, gemm(..., c_finite)): every
  /// element of the head is finite. A kernel that wrote part of the array
  /// must not call it. It holds until the next cast, zero, fill or clear,
  /// so that the Solver's checks for inf and NaN that only read (the loss
  /// scaler's, check_inf_or_nan_grad) need not read the array again. It
  /// speaks of the head only: a half copy of a finite fp32 head may hold
  /// inf (the check reads fp32).
  void mark_finite() { known_finite_ = head_ != nullptr; }
  /// Whether mark_finite() holds: false unless a writer said so.
  bool known_finite() const { return known_finite_; }

  /// Frees every copy; the array then reads as zeros.
  void clear();

  /// The dtype of the head copy; float while only a fill is pending.
  Dtype dtype() const { return head_ ? head_->dtype : Dtype::f32; }
  /// The layout of the head copy; plain while only a fill is pending.
  Layout layout() const { return head_ ? head_->layout : Layout{}; }
  /// The device of the head copy; "cpu" while only a fill is pending.
  std::string head_device() const { return head_ ? head_->device : "cpu"; }
  bool has_head() const { return head_ != nullptr; }
  /// Number of physical copies currently held.
  size_t num_copies() const { return copies_.size(); }
  bool has_copy(Dtype dtype, const std::string& device = "cpu",
                const Layout& layout = {}) const;
  /// Bytes held by all copies.
  size_t bytes() const;

 private:
  using Key = std::tuple<std::string, Dtype, Layout>;
  const void* get_copy(Dtype dtype, const std::string& device,
                       const Layout& layout);
  void* cast_copy(Dtype dtype, const std::string& device, const Layout& layout,
                  bool write_only);
  Array& make_copy(Dtype dtype, const std::string& device,
                   const Layout& layout = {});
  void check_device(const std::string& device, const char* where) const;
  void fill_copy(Array& a, const char* where);

  size_t size_;
  std::map<Key, Array> copies_;
  Array* head_ = nullptr;
  bool pending_fill_ = true;
  double pending_value_ = 0.0;
  bool known_finite_ = false;
};

}  // namespace mg
