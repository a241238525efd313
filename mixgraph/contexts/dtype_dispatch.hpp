// The one place that turns a run-time Dtype into a compile-time type.
#pragma once

#include <stdexcept>
#include <string>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg {

/// A type carried as a value, for generic lambdas:
/// @code
/// [&](auto tag) { using T = typename decltype(tag)::type; }
/// @endcode
template <class T>
struct TypeTag {
  using type = T;
};

/// Calls fn(TypeTag<T>) for the floating types float, half and bfloat16.
/// Any other dtype raises the one "unsupported dtype" error, tagged with
/// `where` (the function's name).
template <class Fn>
decltype(auto) dispatch_float_types(Dtype dtype, const char* where, Fn&& fn) {
  switch (dtype) {
    case Dtype::f32:
      return fn(TypeTag<float>{});
    case Dtype::f16:
      return fn(TypeTag<Half>{});
    case Dtype::bf16:
      return fn(TypeTag<BFloat16>{});
    default:
      break;
  }
  throw std::invalid_argument(msg("[", where, "] unsupported dtype ",
                                  dtype_name(dtype),
                                  "; expected float, half or bfloat16"));
}

/// Calls fn(TypeTag<T>) for every dtype.
template <class Fn>
decltype(auto) dispatch_all_types(Dtype dtype, const char* where, Fn&& fn) {
  switch (dtype) {
    case Dtype::f32:
      return fn(TypeTag<float>{});
    case Dtype::f16:
      return fn(TypeTag<Half>{});
    case Dtype::bf16:
      return fn(TypeTag<BFloat16>{});
    case Dtype::f64:
      return fn(TypeTag<double>{});
    case Dtype::i32:
      return fn(TypeTag<int32_t>{});
    case Dtype::i64:
      return fn(TypeTag<int64_t>{});
    case Dtype::u8:
      return fn(TypeTag<uint8_t>{});
    case Dtype::b8:
      return fn(TypeTag<bool>{});
  }
  throw std::invalid_argument(
      msg("[", where, "] invalid dtype value ", static_cast<int>(dtype)));
}

}  // namespace mg
