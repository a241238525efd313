// The windows of pooling on the CPU: the geometry as three pooled axes,
// each window's range, and the rule of a window's maximum, shared by the
// pooling functions and MaxPoolingBackward.
#pragma once

#include <algorithm>
#include <cstdint>

#include <mixgraph/functions/pooling.hpp>

namespace mg::cpu::pooling {

// The geometry with 1 to 3 pooled axes as 3, leading axes of size 1.
struct Dims3 {
  int64_t in[3], out[3], k[3], s[3], p[3];
  int64_t in_size, out_size;
};

inline Dims3 dims3(const PoolingGeometry& g) {
  Dims3 d;
  const int lead = 3 - static_cast<int>(g.kernel.size());
  for (int a = 0; a < 3; ++a) {
    const bool pooled = a >= lead;
    d.in[a] = pooled ? g.in[a - lead] : 1;
    d.out[a] = pooled ? g.out[a - lead] : 1;
    d.k[a] = pooled ? g.kernel[a - lead] : 1;
    d.s[a] = pooled ? g.stride[a - lead] : 1;
    d.p[a] = pooled ? g.pad[a - lead] : 0;
  }
  d.in_size = d.in[0] * d.in[1] * d.in[2];
  d.out_size = d.out[0] * d.out[1] * d.out[2];
  return d;
}

// One axis of a window: [begin, end) inside the input, and its length
// inside the padded input (NNabla's including_pad count: a window running
// past the padded end, with ignore_border false, is cut there).
struct Range {
  int64_t begin, end, padded;
};

inline Range window(const Dims3& d, int a, int64_t o) {
  const int64_t b = o * d.s[a] - d.p[a];
  const int64_t e = std::min(b + d.k[a], d.in[a] + d.p[a]);
  return {std::max<int64_t>(b, 0), std::min(e, d.in[a]), e - b};
}

// Calls fn(output index, window) for every output of a map.
template <class Fn>
void for_each_window(const Dims3& d, Fn&& fn) {
  int64_t o = 0;
  for (int64_t i = 0; i < d.out[0]; ++i) {
    const Range r0 = window(d, 0, i);
    for (int64_t j = 0; j < d.out[1]; ++j) {
      const Range r1 = window(d, 1, j);
      for (int64_t l = 0; l < d.out[2]; ++l) fn(o++, r0, r1, window(d, 2, l));
    }
  }
}

// Calls fn(input index) for every input element of a window.
template <class Fn>
void for_each_in(const Dims3& d, const Range& r0, const Range& r1,
                 const Range& r2, Fn&& fn) {
  for (int64_t i = r0.begin; i < r0.end; ++i) {
    for (int64_t j = r1.begin; j < r1.end; ++j) {
      const int64_t row = (i * d.in[1] + j) * d.in[2];
      for (int64_t l = r2.begin; l < r2.end; ++l) fn(row + l);
    }
  }
}

// The index of the window's first maximum, nan winning (so it propagates
// to the loss scaler's check); -1 for a window wholly in the padding.
inline int64_t argmax(const float* x, const Dims3& d, const Range& r0,
                      const Range& r1, const Range& r2) {
  int64_t best = -1;
  float m = 0.0f;
  for_each_in(d, r0, r1, r2, [&](int64_t i) {
    const float v = x[i];
    if (best < 0 || v > m || (v != v && m == m)) best = i, m = v;
  });
  return best;
}

}  // namespace mg::cpu::pooling
