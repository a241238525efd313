#include <mixgraph/graph/ndarray.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

void check_shape(const Shape& shape, const char* where) {
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument(msg("[", where, "] shape ", shape_str(shape),
                                      " has a negative dimension"));
    }
  }
}

}  // namespace

NdArray::NdArray(const Shape& shape) : shape_(shape) {
  check_shape(shape, "NdArray");
  array_ = std::make_shared<SyncedArray>(static_cast<size_t>(size()));
}

void NdArray::reshape(const Shape& shape) {
  check_shape(shape, "NdArray::reshape");
  if (shape_size(shape) != size()) {
    array_ =
        std::make_shared<SyncedArray>(static_cast<size_t>(shape_size(shape)));
  }
  shape_ = shape;
}

void NdArray::set_array(std::shared_ptr<SyncedArray> array) {
  if (array->size() != static_cast<size_t>(size())) {
    throw std::invalid_argument(
        msg("[NdArray::set_array] array of ", array->size(),
            " elements cannot back shape ", shape_str(shape_)));
  }
  array_ = std::move(array);
}

NdArrayPtr make_ndarray(const Shape& shape) {
  return std::make_shared<NdArray>(shape);
}

}  // namespace mg
