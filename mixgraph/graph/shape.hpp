// Shapes and the helpers every layer above uses to check them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mg {

using Shape = std::vector<int64_t>;

/// Number of elements (1 for a scalar shape ()).
int64_t shape_size(const Shape& shape);
/// Product of shape[begin, end).
int64_t shape_size(const Shape& shape, int begin, int end);
/// "(64, 10)".
std::string shape_str(const Shape& shape);
/// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& shape);
/// "(0, 2)": a list of ints (axes, pads, repeats) written as shape_str does.
std::string ints_str(const std::vector<int>& v);

/// Maps a possibly negative axis into [0, ndim); throws std::invalid_argument
/// "<tag>axis A is out of range for N dimensions" otherwise.
int normalize_axis(int axis, int ndim, const std::string& tag);
/// An axis of `shape` in [0, ndim) (negative counts from the end); throws
/// std::invalid_argument "<tag><what> A is out of range for <name> with
/// shape (2, 3)" otherwise.
int axis_of_shape(int axis, const Shape& shape, const std::string& tag,
                  const std::string& what = "axis",
                  const std::string& name = "x");
/// The axes `what` of `shape` (the shape of `name`) each mapped into
/// [0, ndim) (negative counts from the end), in the given order; throws
/// std::invalid_argument "<tag><what> (0, 5) has axis 5, out of range for x
/// with shape (2, 3)" or "<tag><what> (1, -2) names axis 1 twice for x with
/// shape (2, 3)" otherwise.
std::vector<int> axes_of_shape(const std::vector<int>& axes, const Shape& shape,
                               const std::string& tag,
                               const std::string& what = "axes",
                               const std::string& name = "x");

}  // namespace mg
