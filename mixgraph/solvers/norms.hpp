// Sums of squares over a whole parameter, for the layer-wise trust ratios of
// Lars and Lamb. They accumulate in double on the host: a norm over millions
// of fp32 values loses digits in a float sum.
#pragma once

#include <cstdint>

namespace mg {

/// The sum over i in [0, n) of f(i)^2, accumulated in double.
template <class F>
double sum_of_squares(int64_t n, const F& f) {
  double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) if (n >= (1 << 15))
  for (int64_t i = 0; i < n; ++i) {
    const double x = f(i);
    s += x * x;
  }
  return s;
}

}  // namespace mg
