// The function registry: name and backend:type -> factory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

/// Makes a function from a pointer to its options struct.
using FunctionFactory = std::function<std::shared_ptr<Function>(const void*)>;

/// Maps (function name, backend, type) to a factory. Creating a function
/// walks the context's backend list, skipping the reduced types for
/// functions the precision policy keeps in float, and takes the first that
/// is registered.
class FunctionRegistry {
 public:
  /// The registry, with every built-in function registered.
  static FunctionRegistry& instance();

  void add(const std::string& name, const Backend& backend,
           std::type_index options, FunctionFactory factory);
  /// Throws std::invalid_argument naming the function and every backend it
  /// tried when none fits; std::invalid_argument for an unknown name.
  std::shared_ptr<Function> create(const std::string& name, const Context& ctx,
                                   std::type_index options,
                                   const void* opts) const;
  bool has(const std::string& name) const;
  /// Every registered function name, sorted.
  std::vector<std::string> names() const;
  /// The backends a function is registered for.
  std::vector<Backend> backends(const std::string& name) const;

 private:
  FunctionRegistry() = default;
  struct Entry {
    Backend backend;
    std::type_index options;
    FunctionFactory factory;
  };
  std::vector<std::pair<std::string, std::vector<Entry>>> table_;
  const std::vector<Entry>* find(const std::string& name) const;
};

/// Creates function `name` with `opts` for `ctx`.
template <class Options>
std::shared_ptr<Function> create_function(
    const std::string& name, const Options& opts,
    const Context& ctx = default_context()) {
  return FunctionRegistry::instance().create(name, ctx, typeid(Options),
                                             &opts);
}

/// Registers Impl<float>, Impl<Half> and Impl<BFloat16> (each constructed
/// from `const Options&`) for `backend_name`.
template <template <class> class Impl, class Options>
void register_float_types(FunctionRegistry& r, const std::string& name,
                          const std::string& backend_name) {
  auto add = [&](Dtype type, FunctionFactory f) {
    r.add(name, Backend{backend_name, type}, typeid(Options), std::move(f));
  };
  add(Dtype::f32, [](const void* o) {
    return std::make_shared<Impl<float>>(*static_cast<const Options*>(o));
  });
  add(Dtype::f16, [](const void* o) {
    return std::make_shared<Impl<Half>>(*static_cast<const Options*>(o));
  });
  add(Dtype::bf16, [](const void* o) {
    return std::make_shared<Impl<BFloat16>>(*static_cast<const Options*>(o));
  });
}

/// Registers one implementation for one backend:type.
template <class Impl, class Options>
void register_one(FunctionRegistry& r, const std::string& name,
                  const Backend& backend) {
  r.add(name, backend, typeid(Options), [](const void* o) {
    return std::make_shared<Impl>(*static_cast<const Options*>(o));
  });
}

}  // namespace mg
