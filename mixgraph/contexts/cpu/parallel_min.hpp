// How many elements a loop needs before a team of threads pays: the one
// threshold every parallel loop on the host takes (the functions' loops,
// the conversions between types and layouts).
#pragma once

#include <cstdint>

namespace mg::cpu {

/// Below this many elements a loop of a few operations an element runs on
/// one thread: 1 << 15, or 1 << 20 where OMP_WAIT_POLICY is passive. There
/// the team sleeps between parallel regions and each region pays a futex
/// wake and a reschedule of the other threads first: on a 2-core VM (AMD
/// EPYC Zen 4) a vectorized ReLU over 4 MB of floats took 124 us on one
/// thread and 222 us on two, and the U-Net's training step 63-74 ms with
/// the lower bound against 31-39 ms with this one. MIXGRAPH_PARALLEL_MIN=n
/// in the environment sets it to n (> 0) instead, for tuning.
int64_t parallel_min();
/// parallel_min()'s rule for those two variables' values (null: unset).
int64_t parallel_min_for(const char* wait_policy, const char* forced);
/// Below this many elements a loop that takes an exp or a log an element
/// (softmax, its cross entropy: the class-axis tiles) runs on one thread:
/// parallel_min(), but at most 1 << 18. Under the passive policy a wake of
/// the team costs about 0.15 ms where such a loop takes about 0.9 ns an
/// element on one thread: on an Intel Xeon (2 threads, passive, 2026-12-05)
/// SoftmaxCrossEntropy over 128 x 1000 logits took 0.11 ms forward on one
/// thread and 0.24 on two, over the U-Net's 32 x 11 x 784 0.72 against
/// 0.51, over the GPT's 1024 x 1000 0.93 against 0.66 (backward alike).
int64_t parallel_min_exp();
/// parallel_min_exp()'s rule for a given parallel_min().
constexpr int64_t parallel_min_exp_for(int64_t parallel_min) {
  return parallel_min < (int64_t{1} << 18) ? parallel_min : int64_t{1} << 18;
}

}  // namespace mg::cpu
