// The math of the elementwise losses, for host and device.
#pragma once

#include <cmath>
#include <mixgraph/contexts/macros.hpp>

namespace mg::ops {

/// -(t log s(x) + (1 - t) log(1 - s(x))) as max(x, 0) - x t +
/// log(1 + exp(-|x|)): exp never overflows and log never sees 0.
struct SigmoidCrossEntropyOp {
  MG_HD float operator()(float x, float t) const {
    return fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x)));
  }
  /// dx = dy (s(x) - t).
  MG_HD float grad(float x, float t, float dy) const {
    return dy * (1.0f / (1.0f + expf(-x)) - t);
  }
};

}  // namespace mg::ops
