// The group of every element of an array when some of its axes are reduced
// (a norm or a mean over those axes, kept as size-1 axes): the flat index
// into the reduced array. Shared by the CPU norms (ClipGradByNorm,
// NormNormalization).
#pragma once

#include <cstdint>
#include <vector>

#include <mixgraph/graph/shape.hpp>

namespace mg::cpu {

/// For each element of an array of `shape` (row-major), the flat index of
/// its group in the array with the axes where `reduced` is true set to 1;
/// `groups` receives that array's size.
inline std::vector<int64_t> group_index(const Shape& shape,
                                        const std::vector<bool>& reduced,
                                        int64_t* groups) {
  const int nd = static_cast<int>(shape.size());
  // Strides of the kept array (0 on reduced axes).
  std::vector<int64_t> kept_stride(nd, 0);
  int64_t g = 1;
  for (int a = nd - 1; a >= 0; --a) {
    if (!reduced[a]) {
      kept_stride[a] = g;
      g *= shape[a];
    }
  }
  *groups = g;
  std::vector<int64_t> out(shape_size(shape));
  std::vector<int64_t> idx(nd, 0);
  int64_t cur = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    out[i] = cur;
    // Advance the multi-index like an odometer, keeping cur in step.
    for (int a = nd - 1; a >= 0; --a) {
      if (++idx[a] < shape[a]) {
        cur += kept_stride[a];
        break;
      }
      cur -= kept_stride[a] * (shape[a] - 1);
      idx[a] = 0;
    }
  }
  return out;
}

}  // namespace mg::cpu
