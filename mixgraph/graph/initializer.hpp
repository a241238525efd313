// Parameter initializers, with NNabla's fan rules.
#pragma once

#include <functional>

#include <mixgraph/graph/ndarray.hpp>

namespace mg {

/// Fills an fp32 array in place.
using Initializer = std::function<void(NdArray&)>;

/// Every element = value.
Initializer constant_initializer(float value = 0.0f);
/// Uniform in [lower, upper).
Initializer uniform_initializer(float lower = -1.0f, float upper = 1.0f);
/// Normal with the given mean and standard deviation.
Initializer normal_initializer(float mean = 0.0f, float std = 1.0f);

/// Glorot (Xavier) standard deviation sqrt(2 / (fan_in + fan_out)).
float glorot_normal_std(int64_t fan_in, int64_t fan_out);
/// He standard deviation sqrt(2 / fan_in).
float he_normal_std(int64_t fan_in);
/// Uniform Glorot, limit sqrt(6 / (fan_in + fan_out)).
Initializer glorot_uniform_initializer(int64_t fan_in, int64_t fan_out);
Initializer glorot_normal_initializer(int64_t fan_in, int64_t fan_out);
/// Uniform He, limit sqrt(6 / fan_in).
Initializer he_uniform_initializer(int64_t fan_in);
Initializer he_normal_initializer(int64_t fan_in);

}  // namespace mg
