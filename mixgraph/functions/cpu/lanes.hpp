// Reductions of a run in 16 lanes: lane k takes the elements k mod 16, in
// order, and a fixed pairwise tree joins the lanes. The compiler keeps the
// lanes in vector registers at any width (one zmm, two ymm or four xmm), so
// every ISA gives the same bits. One element at a time, a sum is a chain of
// dependent adds, 4 cycles an element: softmax over a 1000-word vocabulary
// was 3% of an LSTM step, batch normalization's statistics 7% of
// ResNet-18's.
#pragma once

#include <cstdint>

namespace mg::cpu {

constexpr int kLanes = 16;

/// op over get(i) for i in [0, n), from init, in the lanes' order.
template <class Get, class Op>
__attribute__((always_inline)) inline float lanes_reduce(int64_t n, float init,
                                                         Get get, Op op) {
  float acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = init;
  int64_t a = 0;
  for (; a + kLanes <= n; a += kLanes) {
    for (int k = 0; k < kLanes; ++k) acc[k] = op(acc[k], get(a + k));
  }
  for (int k = 0; a + k < n; ++k) acc[k] = op(acc[k], get(a + k));
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
  }
  return acc[0];
}

/// The fp32 sum of get(i) for i in [0, n), in the lanes' order.
template <class Get>
__attribute__((always_inline)) inline float lanes_sum(int64_t n, Get get) {
  return lanes_reduce(n, 0.0f, get, [](float s, float v) { return s + v; });
}

}  // namespace mg::cpu
