// Ctrl-C that stops a training loop between steps, so that it can save a
// checkpoint, instead of killing it halfway.
#pragma once

#include <functional>

namespace mg {

/// While a guard lives, SIGINT (Ctrl-C) does not end the process: it sets a
/// flag that the loop reads with stop() between steps; stop() then runs
/// `on_interrupt` (saving a checkpoint) once and says to stop. A second
/// Ctrl-C ends the process at once (the handler resets itself), for a loop
/// that is stuck. Guards nest; the handler the first one replaced comes back
/// when the last one goes.
///
///   mg::InterruptGuard guard([&] { mg::save_checkpoint(path, ...); });
///   for (int step = 0; step < steps && !guard.stop(); ++step) { ... }
class InterruptGuard {
 public:
  explicit InterruptGuard(std::function<void()> on_interrupt = {});
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  /// False while no Ctrl-C came. After one: runs on_interrupt the first
  /// time (an exception from it propagates, and the next call tries again)
  /// and returns true from then on.
  bool stop();

  /// True once Ctrl-C came while a guard lived (process-wide).
  static bool requested();
  /// Forgets a Ctrl-C (a program that goes on after stopping a loop) and
  /// re-arms the handler for the guards alive.
  static void clear();

 private:
  std::function<void()> on_interrupt_;
  int handled_ = -1;  // the clear() generation whose Ctrl-C was handled
};

}  // namespace mg
