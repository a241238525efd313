#include <mixgraph/utils/onnx/onnx_tensor.hpp>

#include <cstring>
#include <stdexcept>

#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg::onnx_io {

using onnx::TensorProto_DataType;

int32_t elem_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return onnx::TensorProto_DataType_FLOAT;
    case Dtype::f16:
      return onnx::TensorProto_DataType_FLOAT16;
    case Dtype::bf16:
      return onnx::TensorProto_DataType_BFLOAT16;
    case Dtype::f64:
      return onnx::TensorProto_DataType_DOUBLE;
    case Dtype::i32:
      return onnx::TensorProto_DataType_INT32;
    case Dtype::i64:
      return onnx::TensorProto_DataType_INT64;
    case Dtype::u8:
      return onnx::TensorProto_DataType_UINT8;
    case Dtype::b8:
      return onnx::TensorProto_DataType_BOOL;
  }
  return onnx::TensorProto_DataType_UNDEFINED;
}

std::string elem_name(int32_t elem) {
  if (!onnx::TensorProto_DataType_IsValid(elem)) {
    return "type " + std::to_string(elem);
  }
  return onnx::TensorProto_DataType_Name(
      static_cast<TensorProto_DataType>(elem));
}

Dtype dtype_of(int32_t elem, const std::string& where) {
  switch (elem) {
    case onnx::TensorProto_DataType_FLOAT:
      return Dtype::f32;
    case onnx::TensorProto_DataType_FLOAT16:
      return Dtype::f16;
    case onnx::TensorProto_DataType_BFLOAT16:
      return Dtype::bf16;
    case onnx::TensorProto_DataType_DOUBLE:
      return Dtype::f64;
    case onnx::TensorProto_DataType_INT32:
      return Dtype::i32;
    case onnx::TensorProto_DataType_INT64:
      return Dtype::i64;
    case onnx::TensorProto_DataType_UINT8:
      return Dtype::u8;
    case onnx::TensorProto_DataType_BOOL:
      return Dtype::b8;
    default:
      break;
  }
  throw std::invalid_argument(
      msg(where, ": element type ", elem_name(elem),
          " is not supported (float, float16, bfloat16, "
          "double, int32, int64, uint8, bool are)"));
}

namespace {

template <class T>
void append(std::vector<uint8_t>& bytes, T v) {
  const size_t at = bytes.size();
  bytes.resize(at + sizeof(T));
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Tensor read_tensor(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    throw std::invalid_argument(
        msg(where, ": tensor '", t.name(),
            "' keeps its data in an external file, which load_onnx does not "
            "read (save the model with its data inside: "
            "onnx.save(model, path, save_as_external_data=False))"));
  }
  Tensor out;
  out.dtype = dtype_of(t.data_type(), where + ": tensor '" + t.name() + "'");
  for (int64_t d : t.dims()) {
    if (d < 0) {
      throw std::invalid_argument(
          msg(where, ": tensor '", t.name(), "' has a negative dimension"));
    }
    out.shape.push_back(d);
  }
  const int64_t n = out.size();
  const size_t want = static_cast<size_t>(n) * dtype_size(out.dtype);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    out.bytes.assign(raw.begin(), raw.end());
  } else {
    switch (t.data_type()) {
      case onnx::TensorProto_DataType_FLOAT:
        for (float v : t.float_data()) append(out.bytes, v);
        break;
      case onnx::TensorProto_DataType_DOUBLE:
        for (double v : t.double_data()) append(out.bytes, v);
        break;
      case onnx::TensorProto_DataType_INT64:
        for (int64_t v : t.int64_data()) append(out.bytes, v);
        break;
      case onnx::TensorProto_DataType_INT32:
        for (int32_t v : t.int32_data()) append(out.bytes, v);
        break;
      case onnx::TensorProto_DataType_FLOAT16:
      case onnx::TensorProto_DataType_BFLOAT16:
        // 16-bit patterns, one per int32 (ONNX's rule).
        for (int32_t v : t.int32_data())
          append(out.bytes, static_cast<uint16_t>(v));
        break;
      case onnx::TensorProto_DataType_UINT8:
      case onnx::TensorProto_DataType_BOOL:
        for (int32_t v : t.int32_data())
          append(out.bytes, static_cast<uint8_t>(v));
        break;
      default:
        break;
    }
  }
  if (out.bytes.size() != want) {
    throw std::invalid_argument(
        msg(where, ": tensor '", t.name(), "' of shape ", shape_str(out.shape),
            " and type ", elem_name(t.data_type()), " holds ", out.bytes.size(),
            " bytes, not ", want));
  }
  return out;
}

void write_tensor(onnx::TensorProto* t, const std::string& name,
                  const Shape& shape, Dtype dtype, const void* data) {
  t->set_name(name);
  for (int64_t d : shape) t->add_dims(d);
  t->set_data_type(elem_type(dtype));
  t->set_raw_data(data,
                  static_cast<size_t>(shape_size(shape)) * dtype_size(dtype));
}

std::vector<double> Tensor::reals() const {
  std::vector<double> v(static_cast<size_t>(size()));
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case Dtype::f32:
        v[i] = load<float>(p + 4 * i);
        break;
      case Dtype::f16:
        v[i] = detail::half_bits_to_float(load<uint16_t>(p + 2 * i));
        break;
      case Dtype::bf16:
        v[i] = detail::bf16_bits_to_float(load<uint16_t>(p + 2 * i));
        break;
      case Dtype::f64:
        v[i] = load<double>(p + 8 * i);
        break;
      case Dtype::i32:
        v[i] = load<int32_t>(p + 4 * i);
        break;
      case Dtype::i64:
        v[i] = static_cast<double>(load<int64_t>(p + 8 * i));
        break;
      case Dtype::u8:
      case Dtype::b8:
        v[i] = p[i];
        break;
    }
  }
  return v;
}

std::vector<int64_t> Tensor::ints() const {
  if (dtype == Dtype::i64) {
    std::vector<int64_t> v(static_cast<size_t>(size()));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  std::vector<int64_t> v;
  for (double r : reals()) v.push_back(static_cast<int64_t>(r));
  return v;
}

}  // namespace mg::onnx_io
