#include <mixgraph/utils/interrupt.hpp>

#include <signal.h>

#include <csignal>
#include <mutex>

namespace mg {

namespace {

volatile std::sig_atomic_t g_requested = 0;
struct sigaction g_previous;
int g_guards = 0;      // guards alive
int g_generation = 0;  // clear() calls: a guard handles each Ctrl-C once
std::mutex g_mutex;

extern "C" void on_sigint(int) { g_requested = 1; }

// SA_RESETHAND: the handler runs once, so a second Ctrl-C takes the default
// action and ends the process.
void install(struct sigaction* previous) {
  struct sigaction action = {};
  action.sa_handler = on_sigint;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, previous);
}

}  // namespace

InterruptGuard::InterruptGuard(std::function<void()> on_interrupt)
    : on_interrupt_(std::move(on_interrupt)) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_guards++ == 0) install(&g_previous);
}

InterruptGuard::~InterruptGuard() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_guards == 0) sigaction(SIGINT, &g_previous, nullptr);
}

bool InterruptGuard::stop() {
  if (!g_requested) return false;
  if (handled_ != g_generation) {
    if (on_interrupt_) on_interrupt_();
    handled_ = g_generation;
  }
  return true;
}

bool InterruptGuard::requested() { return g_requested != 0; }

void InterruptGuard::clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_requested = 0;
  ++g_generation;
  if (g_guards > 0) install(nullptr);
}

}  // namespace mg
