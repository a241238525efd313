// The one timing helper of the benchmarks: warm-up, N runs, median.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace mg::bench {

/// Runs fn `warmup` times untimed, then `runs` times, appending the wall
/// time of each run in seconds to `samples`.
template <class Fn>
void time_runs(Fn&& fn, int warmup, int runs, std::vector<double>& samples) {
  for (int i = 0; i < warmup; ++i) fn();
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    samples.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
}

/// The median of the samples (0 when there are none).
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  auto mid = samples.begin() + samples.size() / 2;
  std::nth_element(samples.begin(), mid, samples.end());
  return *mid;
}

/// The median wall time of one run of fn, in seconds, after `warmup`.
template <class Fn>
double median_seconds(Fn&& fn, int warmup, int runs) {
  std::vector<double> samples;
  time_runs(fn, warmup, runs, samples);
  return median(samples);
}

}  // namespace mg::bench
