#include <mixgraph/graph/shape.hpp>

#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

int64_t shape_size(const Shape& shape) {
  return shape_size(shape, 0, static_cast<int>(shape.size()));
}

int64_t shape_size(const Shape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= shape[i];
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string ints_str(const std::vector<int>& v) {
  return shape_str(Shape(v.begin(), v.end()));
}

std::vector<int64_t> shape_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

int axis_of_shape(int axis, const Shape& shape, const std::string& tag,
                  const std::string& what, const std::string& name) {
  const int ndim = static_cast<int>(shape.size());
  if (axis < -ndim || axis >= ndim) {
    throw std::invalid_argument(msg(tag, what, " ", axis,
                                    " is out of range for ", name,
                                    " with shape ", shape_str(shape)));
  }
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int> axes_of_shape(const std::vector<int>& axes, const Shape& shape,
                               const std::string& tag, const std::string& what,
                               const std::string& name) {
  const int ndim = static_cast<int>(shape.size());
  std::vector<int> out;
  out.reserve(axes.size());
  for (int a : axes) {
    if (a < -ndim || a >= ndim) {
      throw std::invalid_argument(msg(tag, what, " ", ints_str(axes),
                                      " has axis ", a, ", out of range for ",
                                      name, " with shape ", shape_str(shape)));
    }
    const int n = a < 0 ? a + ndim : a;
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      throw std::invalid_argument(msg(tag, what, " ", ints_str(axes),
                                      " names axis ", n, " twice for ", name,
                                      " with shape ", shape_str(shape)));
    }
    out.push_back(n);
  }
  return out;
}

int normalize_axis(int axis, int ndim, const std::string& tag) {
  if (axis < -ndim || axis >= ndim) {
    throw std::invalid_argument(
        msg(tag, "axis ", axis, " is out of range for ", ndim, " dimensions"));
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace mg
