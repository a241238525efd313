#include <mixgraph/graph/profile.hpp>

#include <mixgraph/contexts/device.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace mg {

struct FunctionProfile::State {
  mutable std::mutex mutex;
  std::map<std::string, Time> times;
  std::string device;  // waited for around each call; "" for none
};

namespace {

std::atomic<FunctionProfile*> g_recording{nullptr};
// How many timed calls this thread is inside: only the outermost records.
thread_local int t_depth = 0;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FunctionProfile::FunctionProfile(const std::string& device)
    : state_(new State) {
  if (device != "cpu") state_->device = device;
  if (!state_->device.empty()) {
    try {
      resolve_device(device, "[FunctionProfile]");
    } catch (...) {
      delete state_;
      throw;
    }
  }
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

void FunctionProfile::clear() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->times.clear();
}

bool FunctionProfile::recording() {
  return g_recording.load(std::memory_order_relaxed) != nullptr;
}

FunctionProfile::Scope::Scope(std::string_view name, const char* what) {
  if (!recording()) return;
  counted_ = true;
  if (t_depth++ > 0) return;
  key_.assign(name).append(" ").append(what);
  if (FunctionProfile* p = g_recording.load();
      p && !p->state_->device.empty()) {
    synchronize_device(p->state_->device);  // the work queued before
  }
  start_ns_ = now_ns();
}

FunctionProfile::Scope::~Scope() {
  if (!counted_) return;
  --t_depth;
  if (key_.empty()) return;
  FunctionProfile* p = g_recording.load();
  if (!p) return;  // the profile ended during the call
  if (!p->state_->device.empty()) synchronize_device(p->state_->device);
  const double seconds = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  std::lock_guard<std::mutex> lock(p->state_->mutex);
  Time& t = p->state_->times[key_];
  t.seconds += seconds;
  ++t.calls;
}

}  // namespace mg
