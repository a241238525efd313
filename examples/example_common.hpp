// What the training examples share: the command line (--smoke, --steps N),
// the training loop, the smoke check that the loss went down and the
// accuracy of the sequence examples.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mixgraph/mixgraph.hpp>
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

/// Runs `steps` updates, printing the loss and the loss scale every
/// `print_every` steps and on the last, then the time taken; returns the
/// losses.
inline LossLog train(mg::DynamicLossScalingUpdater& updater,
                     const mg::VariablePtr& loss, int steps, int print_every) {
  LossLog log;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    updater.update();
    log.add(*loss->data()->get<const float>());
    if (step % print_every == 0 || step == steps - 1) {
      std::printf("step %5d  loss %.4f  scale %g\n", step, log.losses.back(),
                  updater.scale());
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("%d steps in %.1f s (%d skipped for overflow)\n", steps, secs,
              static_cast<int>(updater.skipped_steps()));
  return log;
}

/// Correct answers of a sequence model: digits (single steps) and whole
/// sequences, out of how many of each were seen.
struct SequenceAccuracy {
  int digits = 0, sequences = 0;
  int digits_seen = 0, sequences_seen = 0;
  double digit_percent() const { return 100.0 * digits / digits_seen; }
  double sequence_percent() const { return 100.0 * sequences / sequences_seen; }
};

/// The accuracy of `guess`, the argmax over the vocabulary at each step
/// (T, N, ...), against the answers t (T, N, 1), both time-major, on
/// `batches` fresh batches that `next_batch` fills in. Counted in the graph:
/// Equal makes a mask of right answers, and a sequence is right where the
/// mask's minimum over time is 1.
inline SequenceAccuracy sequence_accuracy(
    const mg::VariablePtr& guess, const mg::VariablePtr& t, int batches,
    const std::function<void()>& next_batch) {
  namespace F = mg::functions;
  // (T, N, 1): 1 where right, else 0.
  auto right = F::equal(F::reshape(guess, t->shape(), false), t);
  auto digits = F::sum(right);
  auto sequences = F::sum(F::min(right, {0}));
  const int steps = static_cast<int>(t->shape()[0]);
  const int batch = static_cast<int>(t->shape()[1]);
  SequenceAccuracy a;
  for (int b = 0; b < batches; ++b) {
    next_batch();
    digits->forward(true);
    sequences->forward(true);
    a.digits += static_cast<int>(*digits->data()->get<const float>());
    a.sequences += static_cast<int>(*sequences->data()->get<const float>());
    a.digits_seen += steps * batch;
    a.sequences_seen += batch;
  }
  return a;
}

}  // namespace example
