// Tensors between ONNX's TensorProto and mixgraph's arrays, shared by the
// exporter and the importer. Internal: it includes ONNX's protobuf classes.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/graph/shape.hpp>

namespace mg::onnx_io {

/// ONNX's element type of a dtype (FLOAT, FLOAT16, BFLOAT16, ...).
int32_t elem_type(Dtype dtype);
/// The dtype of an ONNX element type; std::invalid_argument naming
/// `where` for a type mixgraph has no array of (INT8, STRING, ...).
Dtype dtype_of(int32_t elem, const std::string& where);
/// "FLOAT16": an element type's name, for messages.
std::string elem_name(int32_t elem);

/// A tensor's values as read from a file: little-endian bytes of `dtype`.
struct Tensor {
  Shape shape;
  Dtype dtype = Dtype::f32;
  std::vector<uint8_t> bytes;
  int64_t size() const { return shape_size(shape); }
  /// The values as integers or as doubles (any numeric dtype).
  std::vector<int64_t> ints() const;
  std::vector<double> reals() const;
};

/// Reads raw_data or the typed fields; external data, or a byte count that
/// does not match the shape, is std::invalid_argument naming `where`.
Tensor read_tensor(const onnx::TensorProto& t, const std::string& where);
/// Fills `t` (name, dims, data_type, raw_data).
void write_tensor(onnx::TensorProto* t, const std::string& name,
                  const Shape& shape, Dtype dtype, const void* data);

}  // namespace mg::onnx_io
