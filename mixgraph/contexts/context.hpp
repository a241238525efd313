// Context: where and in which precision functions run.
#pragma once

#include <string>
#include <vector>

#include <mixgraph/contexts/dtype.hpp>

namespace mg {

/// One entry of a context's backend list, e.g. "cpu:half".
struct Backend {
  std::string name;  // "cpu", "cuda", "cudnn"
  Dtype type;        // the type functions compute and store in

  /// "cpu:half".
  std::string str() const;
  bool operator==(const Backend& o) const {
    return name == o.name && type == o.type;
  }
};

/// An ordered list of backends (tried first to last), an array class and a
/// device id. Build one with mg::context().
struct Context {
  std::vector<Backend> backends;
  std::string array_class = "CpuArray";
  std::string device_id = "0";

  /// "cpu:half,cpu:float" style text.
  std::string str() const;
  /// The type_config the context was made from: the first backend's type.
  Dtype type_config() const;
  /// The device name arrays live on: "cpu" or "cuda:<id>".
  std::string device() const;
};

/// Builds the context for an extension ("cpu", "cuda", "cudnn") and a
/// type_config ("float", "half", "bfloat16"), as DESIGN.md's table lists.
/// Throws std::invalid_argument naming what is not understood, and for
/// "cuda" / "cudnn" when the device is not available (a build without CUDA,
/// no GPU, no such device id), saying why.
Context context(const std::string& ext = "cpu",
                const std::string& type_config = "float",
                const std::string& device_id = "0");

/// Parses "cpu:half,cpu:float" into a context; each entry is backend:type.
Context parse_context(const std::string& text);

/// The context functions are created in when none is given.
const Context& default_context();
void set_default_context(const Context& ctx);

/// Sets the default context for the lifetime of the guard.
class ContextGuard {
 public:
  explicit ContextGuard(const Context& ctx);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  Context previous_;
};

}  // namespace mg
