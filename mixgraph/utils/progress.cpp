#include <mixgraph/utils/progress.hpp>

#include <unistd.h>

#include <algorithm>

namespace mg {

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t line_every,
                         std::FILE* out)
    : label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      line_every_(line_every > 0 ? line_every
                                 : std::max<int64_t>(total_ / 10, 1)),
      out_(out),
      tty_(is_terminal(out)) {}

ProgressBar::~ProgressBar() { finish(); }

bool ProgressBar::is_terminal(std::FILE* out) {
  return ::isatty(::fileno(out)) == 1;
}

void ProgressBar::update(int64_t done, const std::string& fields) {
  const bool last = done >= total_;
  if (!tty_) {
    if (done % line_every_ == 0 || last) {
      std::fprintf(out_, "%s %lld/%lld  %s\n", label_.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total_),
                   fields.c_str());
      std::fflush(out_);
    }
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!last && open_ && now - last_draw_ < std::chrono::milliseconds(100)) {
    return;
  }
  last_draw_ = now;
  const int width = 24;
  const int filled = static_cast<int>(width * std::min(done, total_) / total_);
  std::string bar(filled, '#');
  bar.append(width - filled, '.');
  // \33[K clears what a longer previous line left behind.
  std::fprintf(out_, "\r%s [%s] %lld/%lld  %s\33[K", label_.c_str(),
               bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), fields.c_str());
  std::fflush(out_);
  open_ = true;
}

void ProgressBar::finish() {
  if (tty_ && open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  open_ = false;
}

}  // namespace mg
