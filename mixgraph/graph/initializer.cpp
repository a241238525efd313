#include <mixgraph/graph/initializer.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/random.hpp>

namespace mg {

namespace {

void check_fan(int64_t fan, const char* what) {
  if (fan <= 0) {
    throw std::invalid_argument(
        msg("[initializer] ", what, " must be positive, got ", fan));
  }
}

}  // namespace

Initializer constant_initializer(float value) {
  return [value](NdArray& a) { a.fill(value); };
}

Initializer uniform_initializer(float lower, float upper) {
  if (!(lower < upper)) {
    throw std::invalid_argument(
        msg("[uniform_initializer] lower ", std::to_string(lower),
            " must be below upper ", std::to_string(upper)));
  }
  return [lower, upper](NdArray& a) {
    std::uniform_real_distribution<float> dist(lower, upper);
    float* p = a.cast<float>(true);
    for (int64_t i = 0; i < a.size(); ++i) p[i] = dist(random_engine());
  };
}

Initializer normal_initializer(float mean, float std) {
  if (!(std >= 0)) {
    throw std::invalid_argument(msg(
        "[normal_initializer] std must be >= 0, got ", std::to_string(std)));
  }
  return [mean, std](NdArray& a) {
    std::normal_distribution<float> dist(mean, std);
    float* p = a.cast<float>(true);
    for (int64_t i = 0; i < a.size(); ++i) p[i] = dist(random_engine());
  };
}

float glorot_normal_std(int64_t fan_in, int64_t fan_out) {
  check_fan(fan_in, "fan_in");
  check_fan(fan_out, "fan_out");
  return std::sqrt(2.0f / static_cast<float>(fan_in + fan_out));
}

float he_normal_std(int64_t fan_in) {
  check_fan(fan_in, "fan_in");
  return std::sqrt(2.0f / static_cast<float>(fan_in));
}

Initializer glorot_uniform_initializer(int64_t fan_in, int64_t fan_out) {
  const float limit = std::sqrt(3.0f) * glorot_normal_std(fan_in, fan_out);
  return uniform_initializer(-limit, limit);
}

Initializer glorot_normal_initializer(int64_t fan_in, int64_t fan_out) {
  return normal_initializer(0.0f, glorot_normal_std(fan_in, fan_out));
}

Initializer he_uniform_initializer(int64_t fan_in) {
  const float limit = std::sqrt(3.0f) * he_normal_std(fan_in);
  return uniform_initializer(-limit, limit);
}

Initializer he_normal_initializer(int64_t fan_in) {
  return normal_initializer(0.0f, he_normal_std(fan_in));
}

}  // namespace mg
