// NdArray: a shape over a SyncedArray.
#pragma once

#include <memory>
#include <type_traits>

#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/graph/shape.hpp>

namespace mg {

/// An n-dimensional array: a shape and the SyncedArray that holds it.
class NdArray {
 public:
  explicit NdArray(const Shape& shape = {});

  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return shape_size(shape_); }
  std::vector<int64_t> strides() const { return shape_strides(shape_); }

  /// Changes the shape. Same size keeps the data; another size gives a new
  /// zero-filled buffer.
  void reshape(const Shape& shape);

  /// A readable pointer: `get<const float>()`.
  template <class T>
  const T* get(const std::string& device = "cpu") {
    static_assert(std::is_const_v<T>,
                  "get<T> takes a const type: get<const float>()");
    return static_cast<const T*>(array_->get(dtype_of<T>, device));
  }
  /// A writable pointer that makes this dtype the head: `cast<float>()`.
  template <class T>
  T* cast(bool write_only = false, const std::string& device = "cpu") {
    static_assert(!std::is_const_v<T>, "cast<T> takes a non-const type");
    return static_cast<T*>(array_->cast(dtype_of<T>, device, write_only));
  }

  /// The same on the host in `layout` (SyncedArray's Layout).
  template <class T>
  const T* get(const Layout& layout) {
    static_assert(std::is_const_v<T>,
                  "get<T> takes a const type: get<const float>()");
    return static_cast<const T*>(array_->get(dtype_of<T>, layout));
  }
  template <class T>
  T* cast(bool write_only, const Layout& layout) {
    static_assert(!std::is_const_v<T>, "cast<T> takes a non-const type");
    return static_cast<T*>(array_->cast(dtype_of<T>, layout, write_only));
  }

  void zero() { array_->zero(); }
  void fill(double value) { array_->fill(value); }
  SyncedArray& array() { return *array_; }
  const SyncedArray& array() const { return *array_; }
  /// Shares another array's buffer (shapes must have the same size).
  void set_array(std::shared_ptr<SyncedArray> array);
  const std::shared_ptr<SyncedArray>& array_ptr() const { return array_; }

 private:
  Shape shape_;
  std::shared_ptr<SyncedArray> array_;
};

using NdArrayPtr = std::shared_ptr<NdArray>;

/// A new zero-filled array.
NdArrayPtr make_ndarray(const Shape& shape);

/// True when the array's data is held in fp32: a parameter's master copy
/// (or a pending fill, which materialises in whatever type is asked for).
/// Kernels on half and bfloat16 read such a weight as it is and write its
/// grad in fp32, on every backend.
inline bool held_in_float(const NdArray& a) {
  return a.array().filling() || a.array().has_copy(Dtype::f32);
}

}  // namespace mg
