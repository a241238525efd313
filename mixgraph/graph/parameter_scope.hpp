// ParameterScope: named parameters in insertion order.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/graph/initializer.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

using ParameterList = std::vector<std::pair<std::string, VariablePtr>>;

/// A view of a shared parameter store under a name prefix. `params["conv1"]`
/// is the scope "conv1/" of the same store; `scope.get_or_create("W", ...)`
/// makes "conv1/W" on first use and returns it after.
class ParameterScope {
 public:
  ParameterScope();

  /// The sub-scope `name` ("a/b" nests twice).
  ParameterScope operator[](const std::string& name) const;
  /// This scope's prefix, "conv1/" ("" at the root).
  const std::string& prefix() const { return prefix_; }

  /// The parameter `name` in this scope; creates it (fp32, persistent,
  /// filled by `init`) when missing. An existing one must have `shape`.
  VariablePtr get_or_create(const std::string& name, const Shape& shape,
                            const Initializer& init, bool need_grad = true);
  /// The parameter, or null.
  VariablePtr get(const std::string& name) const;
  /// Adds or replaces a parameter.
  void set(const std::string& name, const VariablePtr& var);
  /// Removes every parameter in this scope.
  void clear();

  /// Parameters in this scope with their full names, in insertion order.
  /// With grad_only (the default, as NNabla's get_parameters) only those
  /// with need_grad: what a solver trains, without BatchNormalization's
  /// running mean and variance. parameters(/*grad_only=*/false) gives them
  /// all, for saving and loading.
  ParameterList parameters(bool grad_only = true) const;
  /// Number of parameters in this scope, need_grad or not.
  size_t size() const { return parameters(/*grad_only=*/false).size(); }

 private:
  struct Store;
  ParameterScope(std::shared_ptr<Store> store, std::string prefix);
  std::shared_ptr<Store> store_;
  std::string prefix_;
};

}  // namespace mg
