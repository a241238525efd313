// The conversion of one element between two dtypes, for host and device:
// the CPU's scalar path and the CUDA conversion kernels share it.
#pragma once

#include <type_traits>

#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/macros.hpp>

namespace mg {

/// s as a D. bool is "not zero"; the 16-bit types go through float (double
/// -> float -> half can round twice, as in NNabla and PyTorch; every other
/// source type is exact in float); the rest is static_cast (floating to
/// integer truncates toward zero).
template <class D, class S>
MG_HD D convert_one(S s) {
  if constexpr (std::is_same_v<D, bool>) {
    return static_cast<float>(s) != 0.0f;
  } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
    return static_cast<D>(static_cast<float>(s));
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    return D(static_cast<float>(s));
  } else {
    return static_cast<D>(s);
  }
}

}  // namespace mg
