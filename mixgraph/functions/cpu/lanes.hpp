// Reductions of a run in 16 lanes: lane k takes the elements k mod 16, in
// order, and a fixed pairwise tree joins the lanes. The compiler keeps the
// lanes in vector registers at any width (one zmm, two ymm or four xmm), so
// every ISA gives the same bits. One element at a time, a sum is a chain of
// dependent adds, 4 cycles an element: softmax over a 1000-word vocabulary
// was 3% of an LSTM step, batch normalization's statistics 7% of
// ResNet-18's.
#pragma once

#include <cstdint>
#include <cstring>

namespace mg::cpu {

constexpr int kLanes = 16;

/// Four lanes' values, for the tree that joins the 16 lanes (16 bytes: in
/// every x86-64 ISA's registers, so no ABI changes between the per-ISA
/// copies).
typedef float LaneQuad __attribute__((vector_size(16)));

/// q's lanes (2, 3, 2, 3), and (1, 1, 1, 1): the upper lanes brought down
/// for the tree's last two steps.
__attribute__((always_inline)) inline LaneQuad lanes_upper_pair(LaneQuad q) {
  typedef int Index __attribute__((vector_size(16)));
#if defined(__clang__)
  return __builtin_shufflevector(q, q, 2, 3, 2, 3);
#else
  return __builtin_shuffle(q, Index{2, 3, 2, 3});
#endif
}
__attribute__((always_inline)) inline LaneQuad lanes_second(LaneQuad q) {
  typedef int Index __attribute__((vector_size(16)));
#if defined(__clang__)
  return __builtin_shufflevector(q, q, 1, 1, 1, 1);
#else
  return __builtin_shuffle(q, Index{1, 1, 1, 1});
#endif
}

/// op over get(i) for i in [0, n), from init, in the lanes' order. op
/// takes two floats or two LaneQuads (lane by lane: a generic lambda or a
/// template), for the tree: lane k with lane k + 8, then k + 4, k + 2 and
/// k + 1, as four-lane vectors held in registers. Written on an array of
/// 16 floats, the compiler spilled the accumulator and joined it one lane
/// at a time through the stack, 4x the time of the whole reduction of a
/// 16-value row (BatchNormalization over 4x4 maps, a head's softmax).
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
  LaneQuad q[4];
  std::memcpy(q, acc, sizeof q);
  // q[j] holds lanes 4j..4j+3: k with k + 8, into lanes 0-7; then k + 4.
  const LaneQuad low = op(q[0], q[2]), high = op(q[1], q[3]);
  const LaneQuad four = op(low, high);
  const LaneQuad two = op(four, lanes_upper_pair(four));
  return op(two, lanes_second(two))[0];
}

/// The fp32 sum of get(i) for i in [0, n), in the lanes' order.
template <class Get>
__attribute__((always_inline)) inline float lanes_sum(int64_t n, Get get) {
  return lanes_reduce(n, 0.0f, get, [](auto s, auto v) { return s + v; });
}

}  // namespace mg::cpu
