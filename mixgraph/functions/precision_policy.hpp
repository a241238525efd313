// The precision policy: which functions run in the reduced type.
#pragma once

#include <map>
#include <string>

#include <mixgraph/graph/function_decl.hpp>

namespace mg {

/// Per-function precision. Each function's declaration gives its default
/// (mg::function_list() lists them); the policy holds the overrides, read
/// from YAML
///   reduced: [Exp, ...]      # run in the type_config's fp16/bf16
///   float: [Tanh, ...]       # run in fp32 whatever the context
/// or set one at a time. Every name is checked against the registered
/// functions; a function a file does not mention keeps its default. Sums
/// accumulate in fp32 in both categories.
class PrecisionPolicy {
 public:
  /// The process-wide policy the registry consults.
  static PrecisionPolicy& instance();

  /// Replaces the overrides with the YAML text; `source` names it in
  /// errors. On error (syntax, an unknown key or function name, with the
  /// line) the policy is unchanged.
  void load_string(const std::string& yaml,
                   const std::string& source = "<string>");
  /// Replaces the overrides with a YAML file.
  void load_file(const std::string& path);
  /// Overrides one function; an unknown name is std::invalid_argument.
  void set(const std::string& function, Precision precision);
  /// The precision `decl` runs in now.
  Precision get(const FunctionDecl& decl) const;
  /// The same by name; an unknown name is std::invalid_argument.
  Precision get(const std::string& function) const;
  /// Drops every override: back to the declarations' defaults.
  void reset();
  /// The whole policy (every function, defaults included) as YAML.
  std::string to_yaml() const;

 private:
  std::map<std::string, Precision> overrides_;
};

/// The declarations' defaults as a policy file.
std::string default_policy_yaml();

}  // namespace mg
