#include <mixgraph/graph/profile.hpp>

#include <mixgraph/contexts/device.hpp>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace mg {

struct FunctionProfile::State {
  mutable std::mutex mutex;
  std::map<std::string, Time> times;
  std::atomic<int64_t> product_ns{0};  // ProductScope's, shares summed
  // The device waited for around each call; null for none (the host).
  DeviceBackend* device = nullptr;
  int device_index = 0;

  // Waits for the device's queued work, if there is a device.
  void wait() const {
    if (device) device->synchronize(device_index);
  }
};

namespace {

std::atomic<FunctionProfile*> g_recording{nullptr};
// How many timed calls this thread is inside: only the outermost records.
thread_local int t_depth = 0;
// The same for products, and how many outermost products run outside a
// parallel region now (their own teams' products are theirs).
thread_local int t_product_depth = 0;
std::atomic<int> g_whole_team_products{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FunctionProfile::FunctionProfile(const std::string& device) {
  // Resolved once (and refused by name) before anything is held.
  const DeviceRef ref = device.empty() || device == "cpu"
                            ? DeviceRef{}
                            : resolve_device(device, "[FunctionProfile] ");
  state_ = new State;
  state_->device = ref.backend;
  state_->device_index = ref.index;
  FunctionProfile* none = nullptr;
  if (!g_recording.compare_exchange_strong(none, this)) {
    delete state_;
    throw std::logic_error(
        "[FunctionProfile] another profile is recording: one at a time");
  }
}

FunctionProfile::~FunctionProfile() {
  g_recording.store(nullptr);
  delete state_;
}

std::map<std::string, FunctionProfile::Time> FunctionProfile::times() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->times;
}

double FunctionProfile::total_seconds() const {
  double total = 0;
  for (const auto& [key, t] : times()) total += t.seconds;
  return total;
}

double FunctionProfile::product_seconds() const {
  return static_cast<double>(state_->product_ns.load()) * 1e-9;
}

void FunctionProfile::clear() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->times.clear();
  state_->product_ns = 0;
}

bool FunctionProfile::recording() {
  return g_recording.load(std::memory_order_relaxed) != nullptr;
}

FunctionProfile::Scope::Scope(std::string_view name, const char* what) {
  if (!recording()) return;
  counted_ = true;
  if (t_depth++ > 0) return;
  key_.assign(name).append(" ").append(what);
  if (FunctionProfile* p = g_recording.load()) {
    p->state_->wait();  // the work queued before is not this call's
  }
  start_ns_ = now_ns();
}

FunctionProfile::Scope::~Scope() {
  if (!counted_) return;
  --t_depth;
  if (key_.empty()) return;
  FunctionProfile* p = g_recording.load();
  if (!p) return;  // the profile ended during the call
  try {
    p->state_->wait();
  } catch (...) {
    // A device error in a destructor must not end the program; the next
    // call on the device reports it. This call goes unrecorded.
    return;
  }
  const double seconds = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  std::lock_guard<std::mutex> lock(p->state_->mutex);
  Time& t = p->state_->times[key_];
  t.seconds += seconds;
  ++t.calls;
}

FunctionProfile::ProductScope::ProductScope() {
  if (!recording()) return;
  counted_ = true;
  if (t_product_depth++ > 0) return;
  if (omp_in_parallel()) {
    if (g_whole_team_products.load(std::memory_order_relaxed) > 0) return;
    team_size_ = omp_get_num_threads();
  } else {
    whole_team_ = true;
    g_whole_team_products.fetch_add(1, std::memory_order_relaxed);
  }
  start_ns_ = now_ns();
}

FunctionProfile::ProductScope::~ProductScope() {
  if (!counted_) return;
  --t_product_depth;
  if (whole_team_) {
    g_whole_team_products.fetch_sub(1, std::memory_order_relaxed);
  }
  if (start_ns_ < 0) return;
  const int64_t share = (now_ns() - start_ns_) / team_size_;
  if (FunctionProfile* p = g_recording.load()) {
    p->state_->product_ns.fetch_add(share, std::memory_order_relaxed);
  }
}

}  // namespace mg
