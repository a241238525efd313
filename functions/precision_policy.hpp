// The precision policy: which functions run in the reduced type.
#pragma once

#include <map>
#include <string>

namespace mg {

/// How a function runs under a half or bfloat16 context.
enum class Precision {
  reduced,           // fp16/bf16 in and out
  accumulate_float,  // fp16/bf16 storage, fp32 sums (every reduction does)
  float32,           // fp32 in and out, whatever the context
};

/// "reduced", "accumulate_float" or "float".
const char* precision_name(Precision p);

/// Per-function precision, read from YAML:
///   reduced: [Affine, ReLU, ...]
///   accumulate_float: [Sum, Mean, ...]
///   float: [Exp, Log, ...]
/// A function the policy does not list runs reduced. The compiled-in default
/// is default_policy_yaml(); users load their own or override one function.
class PrecisionPolicy {
 public:
  /// The process-wide policy the registry consults.
  static PrecisionPolicy& instance();

  /// The compiled-in default.
  PrecisionPolicy();
  /// Replaces the policy with the YAML text; `source` names it in errors.
  void load_string(const std::string& yaml, const std::string& source = "<string>");
  /// Replaces the policy with a YAML file.
  void load_file(const std::string& path);
  /// Overrides one function.
  void set(const std::string& function, Precision precision);
  Precision get(const std::string& function) const;
  /// Back to the compiled-in default.
  void reset();
  /// The policy as YAML.
  std::string to_yaml() const;

 private:
  std::map<std::string, Precision> table_;
};

/// The YAML compiled into the library.
const std::string& default_policy_yaml();

}  // namespace mg
