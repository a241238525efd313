// What the training examples share: the command line (--smoke, --steps N)
// and the smoke check that the loss went down.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace example {

struct Args {
  bool smoke = false;  // a few steps, for CI: exits 1 unless the loss fell
  int steps = -1;      // overrides the example's step count
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--smoke")) {
      a.smoke = true;
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      a.steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--steps N]\n", argv[0]);
      std::exit(2);
    }
  }
  return a;
}

/// The losses of a run; went_down compares the mean of the first and the
/// last `window` steps.
struct LossLog {
  std::vector<float> losses;
  void add(float l) { losses.push_back(l); }
  float mean(size_t begin, size_t end) const {
    return std::accumulate(losses.begin() + begin, losses.begin() + end, 0.0f) /
           static_cast<float>(end - begin);
  }
  bool went_down(size_t window) const {
    if (losses.size() < 2 * window) return false;
    const float first = mean(0, window);
    const float last = mean(losses.size() - window, losses.size());
    std::printf("mean loss of the first %zu steps %.4f, of the last %zu %.4f\n",
                window, first, window, last);
    return last < 0.9f * first;
  }
};

}  // namespace example
