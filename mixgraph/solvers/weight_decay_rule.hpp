// Coupled weight decay as an update rule, so that Solver::weight_decay runs
// where update() runs (on a device too).
#pragma once

#include <mixgraph/contexts/macros.hpp>

namespace mg {

/// grad += rate * w, applied with the grad in the weight's place:
/// apply_rule(WeightDecayRule{rate}, n, g, w).
struct WeightDecayRule {
  float rate;
  MG_HD void operator()(float& g, float w) const { g += rate * w; }
};

}  // namespace mg
