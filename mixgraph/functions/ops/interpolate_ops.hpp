// The math of Interpolate's axis passes, for host and device.
#pragma once

#include <mixgraph/contexts/macros.hpp>

namespace mg::ops {

/// Output j of a resized axis (a ResizedAxis) from its sources a = x[i0[j]]
/// and b = x[i1[j]] with w = w[j]: a itself where w is 0 (no 0 * inf from
/// a neighbour that is not used).
MG_HD inline float resize_tap(float w, float a, float b) {
  return w == 0.0f ? a : (1.0f - w) * a + w * b;
}

}  // namespace mg::ops
