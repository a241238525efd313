// oneDNN plumbing: the engine and stream, dtype mapping, error wrapping.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <stdexcept>
#include <string>

#include <mixgraph/contexts/dtype.hpp>

namespace mg::cpu {

/// The process's oneDNN CPU engine (it uses the OpenMP pool).
dnnl::engine& dnnl_engine();
/// The stream primitives run on.
dnnl::stream& dnnl_stream();

/// Our dtype as oneDNN's; throws for types oneDNN does not compute in.
dnnl::memory::data_type dnnl_type(Dtype dtype);

/// Runs a oneDNN call, turning its error into std::runtime_error that
/// names `where`.
template <class Fn>
decltype(auto) dnnl_call(const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    throw std::runtime_error("[" + where + "] oneDNN: " + e.what() +
                             " (status " + std::to_string(e.status) + ")");
  }
}

}  // namespace mg::cpu
