// A one-line progress bar that behaves when stdout is not a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mg {

/// On a terminal, redraws one line ("label [#####.....] 120/468 fields")
/// at most ten times a second. Elsewhere (a log file, CI) prints a plain
/// line every `line_every` steps and at the last one, never a carriage
/// return.
class ProgressBar {
 public:
  /// `total` steps; line_every 0 picks about ten lines per bar.
  ProgressBar(std::string label, int64_t total, int64_t line_every = 0,
              std::FILE* out = stdout);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// `done` steps of total are done; `fields` follows the bar
  /// ("loss 0.4123  scale 8192  1734 img/s").
  void update(int64_t done, const std::string& fields);
  /// Ends the bar's line (on a terminal); called by the destructor too.
  void finish();

  /// True when `out` is a terminal.
  static bool is_terminal(std::FILE* out);

 private:
  std::string label_;
  int64_t total_, line_every_;
  std::FILE* out_;
  bool tty_, open_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace mg
