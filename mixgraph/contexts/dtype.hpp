// Element types and their names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <mixgraph/contexts/half.hpp>

namespace mg {

/// The element types an array can hold.
enum class Dtype : uint8_t { f32, f16, bf16, f64, i32, i64, u8, b8 };

inline constexpr int kNumDtypes = 8;

/// Bytes per element.
size_t dtype_size(Dtype dtype);

/// NNabla-style name: "float", "half", "bfloat16", "double", "int", "long",
/// "uint8", "bool".
const char* dtype_name(Dtype dtype);

/// Parses a name produced by dtype_name (also "float32", "float16", ...).
/// Throws std::invalid_argument naming the text on failure.
Dtype parse_dtype(const std::string& name);

/// True for f32, f16, bf16 and f64.
bool is_floating(Dtype dtype);

template <class T>
struct DtypeOf;
template <>
struct DtypeOf<float> {
  static constexpr Dtype value = Dtype::f32;
};
template <>
struct DtypeOf<Half> {
  static constexpr Dtype value = Dtype::f16;
};
template <>
struct DtypeOf<BFloat16> {
  static constexpr Dtype value = Dtype::bf16;
};
template <>
struct DtypeOf<double> {
  static constexpr Dtype value = Dtype::f64;
};
template <>
struct DtypeOf<int32_t> {
  static constexpr Dtype value = Dtype::i32;
};
template <>
struct DtypeOf<int64_t> {
  static constexpr Dtype value = Dtype::i64;
};
template <>
struct DtypeOf<uint8_t> {
  static constexpr Dtype value = Dtype::u8;
};
template <>
struct DtypeOf<bool> {
  static constexpr Dtype value = Dtype::b8;
};

/// The Dtype of a C++ element type (const is ignored).
template <class T>
inline constexpr Dtype dtype_of = DtypeOf<std::remove_const_t<T>>::value;

}  // namespace mg
