// Devices other than the host: what SyncedArray needs from a backend, and
// the table of backends by name. The CUDA backend (contexts/cuda/) registers
// itself as "cuda" when the library is loaded; a build without CUDA has no
// backend, and every device but "cpu" is then reported as unavailable.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/memory.hpp>

namespace mg {

/// A family of devices ("cuda:0", "cuda:1", ...) as SyncedArray sees it.
/// Pointers are device pointers of device `index` unless named host.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  /// The number of devices; 0 when there are none, with the reason in
  /// `why` (when given).
  virtual int count(std::string* why) = 0;
  /// Device memory of at least `bytes`, returned to the backend's allocator
  /// when the Memory is destroyed.
  virtual std::unique_ptr<Memory> allocate(int index, size_t bytes) = 0;
  /// Host -> device; the host buffer may be reused as soon as it returns.
  virtual void copy_to_device(int index, void* dst, const void* host_src,
                              size_t bytes) = 0;
  /// Device -> host; the data is in `host_dst` when it returns.
  virtual void copy_to_host(int index, void* host_dst, const void* src,
                            size_t bytes) = 0;
  /// dst = src converted, n elements on the device (a copy for one dtype).
  virtual void convert(int index, const void* src, Dtype src_dtype, void* dst,
                       Dtype dst_dtype, size_t n) = 0;
  /// n elements of dst = value, on the device.
  virtual void fill(int index, void* dst, Dtype dtype, double value,
                    size_t n) = 0;
  /// Waits until the device's work so far is done.
  virtual void synchronize(int index) = 0;
  virtual MemoryStats memory_stats(int index) = 0;
  virtual void reset_peak(int index) = 0;
  /// Returns the allocator's cached blocks to the system.
  virtual void release_cache(int index) = 0;
};

/// Registers `backend` (not owned; it must live as long as the program) for
/// devices named "<name>:<index>". A second registration replaces the first.
void register_device_backend(const std::string& name, DeviceBackend* backend);
/// The backend registered for `name`, or null.
DeviceBackend* find_device_backend(const std::string& name);

/// A device name taken apart: "cuda:1" -> {backend, 1}.
struct DeviceRef {
  DeviceBackend* backend = nullptr;  // null for the host
  std::string name;                  // "cuda"
  int index = 0;
};

/// Resolves "cpu" or "<name>:<index>". Throws std::invalid_argument starting
/// with `where` for a malformed name ("device 'cuda' is not a device name"),
/// or for a device that is not available, saying why: "device 'cuda:0' is
/// not available: mixgraph was built without CUDA", "...: no GPU present
/// (...)", "...: there are 2 cuda devices".
DeviceRef resolve_device(const std::string& device, const std::string& where);

/// How many devices the backend `name` has; 0 when it is not built in or
/// has none, with the reason in `why` (when given).
int device_count(const std::string& name, std::string* why = nullptr);

/// The device allocator's counters of "cuda:0" and the like ("cpu" gives
/// cpu_memory_stats()).
MemoryStats device_memory_stats(const std::string& device);
/// Resets the peak counter of the device's allocator.
void reset_device_peak(const std::string& device);
/// Waits until the device's queued work is done (nothing for "cpu").
void synchronize_device(const std::string& device);

}  // namespace mg
