// What the training examples share: the command line (--smoke, --steps N,
// --type-config NAME), the training loop, the smoke check that the loss went
// down and the accuracy of the sequence examples.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mixgraph/mixgraph.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace example {

struct Args {
  bool smoke = false;  // a few steps, for CI: exits 1 unless the loss fell
  int steps = -1;      // overrides the example's step count
  std::string type_config = "half";  // the context's: float, half, bfloat16
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--smoke")) {
      a.smoke = true;
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      a.steps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--type-config") && i + 1 < argc) {
      a.type_config = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--smoke] [--steps N] [--type-config "
                   "float|half|bfloat16]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return a;
}

constexpr int kSide = 28, kPixels = kSide * kSide, kClasses = 10;

/// The image examples' fallback without Fashion-MNIST: class c is a bright bar
/// at one of 10 orientations and offsets, with noise, as 28x28 bytes like the
/// real images.
inline mg::ImageDataset synthetic_images(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 40.0f);
  std::uniform_int_distribution<int> cls(0, kClasses - 1), shift(-3, 3);
  mg::ImageDataset d;
  d.size = n;
  d.height = d.width = kSide;
  d.classes = kClasses;
  d.images.resize(size_t(n) * kPixels);
  d.labels.resize(n);
  for (int i = 0; i < n; ++i) {
    const int c = cls(rng), s = shift(rng);
    d.labels[i] = static_cast<uint8_t>(c);
    const float angle = 3.14159f * (c % 5) / 5, offset = c < 5 ? -4.0f : 4.0f;
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        const float u = (x - 13.5f - s) * std::cos(angle) +
                        (y - 13.5f) * std::sin(angle) - offset;
        const float v = (std::fabs(u) < 2.0f ? 160.0f : 40.0f) + noise(rng);
        d.images[size_t(i) * kPixels + y * kSide + x] =
            static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
  return d;
}

/// The image examples' data: Fashion-MNIST's train and test sets, or (said
/// so) the synthetic task when the files are missing.
struct Images {
  mg::ImageDataset train, test;
  bool real = false;  // Fashion-MNIST, not the synthetic task
};

inline Images load_images() {
  Images d;
  d.real = mg::fashion_mnist_available();
  if (d.real) {
    d.train = mg::load_fashion_mnist("train");
    d.test = mg::load_fashion_mnist("test");
  } else {
    std::printf("Fashion-MNIST not found in %s: using a synthetic task\n",
                mg::default_fashion_mnist_dir().c_str());
    d.train = synthetic_images(20000, 1);
    d.test = synthetic_images(2000, 2);
  }
  return d;
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
