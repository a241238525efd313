#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <cctype>
#include <map>
#include <mutex>
#include <stdexcept>

namespace mg {

namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, DeviceBackend*> backends;
};

// Never destroyed: backends register from static initialisers of the
// library and arrays may be freed after main returns.
Table& table() {
  static Table* t = new Table();
  return *t;
}

std::string not_built(const std::string& name) {
  return name == "cuda" ? "mixgraph was built without CUDA"
                        : "no backend named '" + name + "' is built in";
}

}  // namespace

void register_device_backend(const std::string& name, DeviceBackend* backend) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.backends[name] = backend;
}

DeviceBackend* find_device_backend(const std::string& name) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.backends.find(name);
  return it == t.backends.end() ? nullptr : it->second;
}

DeviceRef resolve_device(const std::string& device, const std::string& where) {
  DeviceRef ref;
  if (device == "cpu") {
    ref.name = "cpu";
    return ref;
  }
  const std::string prefix = where + "device '" + device + "' ";
  const auto colon = device.find(':');
  const std::string digits =
      colon == std::string::npos ? "" : device.substr(colon + 1);
  bool numeric = !digits.empty() && digits.size() <= 6;
  for (char c : digits)
    numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
  if (colon == 0 || !numeric) {
    throw std::invalid_argument(msg(prefix,
                                    "is not a device name; expected cpu or "
                                    "<backend>:<index>, e.g. cuda:0"));
  }
  ref.name = device.substr(0, colon);
  ref.index = std::stoi(digits);
  ref.backend = find_device_backend(ref.name);
  const std::string unavailable = prefix + "is not available: ";
  if (!ref.backend)
    throw std::invalid_argument(msg(unavailable, not_built(ref.name)));
  std::string why;
  const int n = ref.backend->count(&why);
  if (n == 0) throw std::invalid_argument(msg(unavailable, why));
  if (ref.index >= n) {
    throw std::invalid_argument(
        msg(unavailable, "there ",
            (n == 1 ? "is 1 " : "are " + std::to_string(n) + " "), ref.name,
            " device", (n == 1 ? "" : "s")));
  }
  return ref;
}

int device_count(const std::string& name, std::string* why) {
  DeviceBackend* b = find_device_backend(name);
  if (!b) {
    if (why) *why = not_built(name);
    return 0;
  }
  std::string reason;
  const int n = b->count(&reason);
  if (why) *why = reason;
  return n;
}

MemoryStats device_memory_stats(const std::string& device) {
  const DeviceRef d = resolve_device(device, "[device_memory_stats] ");
  return d.backend ? d.backend->memory_stats(d.index) : cpu_memory_stats();
}

void reset_device_peak(const std::string& device) {
  const DeviceRef d = resolve_device(device, "[reset_device_peak] ");
  if (d.backend) {
    d.backend->reset_peak(d.index);
  } else {
    CpuAllocator::instance().reset_peak();
  }
}

void synchronize_device(const std::string& device) {
  const DeviceRef d = resolve_device(device, "[synchronize_device] ");
  if (d.backend) d.backend->synchronize(d.index);
}

}  // namespace mg
