#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <stdexcept>

namespace mg {

size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return 4;
    case Dtype::f16:
      return 2;
    case Dtype::bf16:
      return 2;
    case Dtype::f64:
      return 8;
    case Dtype::i32:
      return 4;
    case Dtype::i64:
      return 8;
    case Dtype::u8:
      return 1;
    case Dtype::b8:
      return 1;
  }
  throw std::invalid_argument(
      msg("[dtype_size] invalid dtype value ", static_cast<int>(dtype)));
}

const char* dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32:
      return "float";
    case Dtype::f16:
      return "half";
    case Dtype::bf16:
      return "bfloat16";
    case Dtype::f64:
      return "double";
    case Dtype::i32:
      return "int";
    case Dtype::i64:
      return "long";
    case Dtype::u8:
      return "uint8";
    case Dtype::b8:
      return "bool";
  }
  return "invalid";
}

Dtype parse_dtype(const std::string& name) {
  if (name == "float" || name == "float32") return Dtype::f32;
  if (name == "half" || name == "float16") return Dtype::f16;
  if (name == "bfloat16" || name == "bf16") return Dtype::bf16;
  if (name == "double" || name == "float64") return Dtype::f64;
  if (name == "int" || name == "int32") return Dtype::i32;
  if (name == "long" || name == "int64") return Dtype::i64;
  if (name == "uint8") return Dtype::u8;
  if (name == "bool") return Dtype::b8;
  throw std::invalid_argument(
      msg("[parse_dtype] unknown dtype '", name,
          "'; expected one of float, half, bfloat16, double, int, long, uint8, "
          "bool"));
}

bool is_floating(Dtype dtype) {
  return dtype == Dtype::f32 || dtype == Dtype::f16 || dtype == Dtype::bf16 ||
         dtype == Dtype::f64;
}

}  // namespace mg
