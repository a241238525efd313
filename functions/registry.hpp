// The function registry: name and backend:type -> factory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/functions/args_codec.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

/// Makes a function from a pointer to its options struct.
using FunctionFactory = std::function<std::shared_ptr<Function>(const void*)>;
/// Makes a function from its arguments as values (a graph read from a file).
using ArgsFactory = std::function<std::shared_ptr<Function>(const FunctionArgs&)>;

/// Maps (function name, backend, type) to a factory. Creating a function
/// walks the context's backend list, skipping the reduced types for
/// functions the precision policy keeps in float, and takes the first that
/// is registered.
class FunctionRegistry {
 public:
  /// The registry, with every built-in function registered.
  static FunctionRegistry& instance();

  void add(const std::string& name, const Backend& backend,
           std::type_index options, FunctionFactory factory,
           ArgsFactory from_args);
  /// Throws std::invalid_argument naming the function and every backend it
  /// tried when none fits; std::invalid_argument for an unknown name.
  std::shared_ptr<Function> create(const std::string& name, const Context& ctx,
                                   std::type_index options,
                                   const void* opts) const;
  /// The same from arguments as values; a missing, mistyped or unknown
  /// argument is std::invalid_argument naming it.
  std::shared_ptr<Function> create_from_args(const std::string& name,
                                             const Context& ctx,
                                             const FunctionArgs& args) const;
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
    ArgsFactory from_args;
  };
  const Entry& pick(const std::string& name, const Context& ctx) const;
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

/// Registers Impl (constructed from `const Options&`) for one backend:type;
/// the function records its options as arguments and can be rebuilt from
/// them.
template <class Impl, class Options>
void register_one(FunctionRegistry& r, const std::string& name,
                  const Backend& backend) {
  auto make = [](const Options& o) {
    auto f = std::make_shared<Impl>(o);
    f->set_args(options_to_args(o));
    return f;
  };
  r.add(
      name, backend, typeid(Options),
      [make](const void* o) { return make(*static_cast<const Options*>(o)); },
      [make, name](const FunctionArgs& a) {
        return make(options_from_args<Options>(a, name));
      });
}

/// Registers Impl<float>, Impl<Half> and Impl<BFloat16> for `backend_name`.
template <template <class> class Impl, class Options>
void register_float_types(FunctionRegistry& r, const std::string& name,
                          const std::string& backend_name) {
  register_one<Impl<float>, Options>(r, name, {backend_name, Dtype::f32});
  register_one<Impl<Half>, Options>(r, name, {backend_name, Dtype::f16});
  register_one<Impl<BFloat16>, Options>(r, name, {backend_name, Dtype::bf16});
}

}  // namespace mg
