// What the Convolution and Deconvolution tests share for their reference
// loops in double: the geometry with 1 to 3 spatial axes as 3, and the
// row-major index into arrays of that form.
#pragma once

#include <array>
#include <cstdint>
#include <mixgraph/mixgraph.hpp>
#include <vector>

namespace mg::test {

/// A convolution's or deconvolution's geometry with 1 to 3 spatial axes as
/// 3 (leading axes of size 1): n batch, c channels of x, oc channels of y,
/// and per axis x's size (in), y's size (out), kernel and options.
struct ConvRefGeometry {
  int64_t n, c, oc, group;
  std::array<int64_t, 3> in, out, k, pad, stride, dil;
};

/// v, one value per spatial axis, as the last of 3 values with `fallback`
/// before it; `fallback` on every axis when v is empty (the option unset).
inline std::array<int64_t, 3> last3(const std::vector<int64_t>& v,
                                    int64_t fallback) {
  std::array<int64_t, 3> r{fallback, fallback, fallback};
  const size_t lead = 3 - v.size();
  for (size_t i = 0; i < v.size(); ++i) r[lead + i] = v[i];
  return r;
}

/// The geometry of x (xs), W (ws) and the options both functions have
/// (base_axis, group, pad, stride, dilation); oc and out, which the two
/// compute differently, are left for the caller.
template <class Options>
ConvRefGeometry conv_ref_geometry(const Shape& xs, const Shape& ws,
                                  const Options& o) {
  const int base = o.base_axis;
  ConvRefGeometry g{};
  g.n = shape_size(xs, 0, base);
  g.c = xs[base];
  g.group = o.group;
  g.in = last3(Shape(xs.begin() + base + 1, xs.end()), 1);
  g.k = last3(Shape(ws.begin() + 2, ws.end()), 1);
  g.pad = last3(o.pad, 0);
  g.stride = last3(o.stride, 1);
  g.dil = last3(o.dilation, 1);
  return g;
}

/// Row-major index of (outer, i0, i1, i2) in an array (..., d0, d1, d2).
inline int64_t at(int64_t outer, const std::array<int64_t, 3>& d, int64_t i0,
                  int64_t i1, int64_t i2) {
  return ((outer * d[0] + i0) * d[1] + i1) * d[2] + i2;
}

}  // namespace mg::test
