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
using ArgsFactory =
    std::function<std::shared_ptr<Function>(const FunctionArgs&)>;

/// Maps (function, backend, type) to a factory. Creating a function walks
/// the context's backend list, skipping the reduced types for functions the
/// precision policy keeps in float, and takes the first that is registered.
class FunctionRegistry {
 public:
  /// The registry, with every built-in function registered.
  static FunctionRegistry& instance();

  /// Registers one backend of `decl`. Two different declarations of one
  /// name are a std::logic_error.
  void add(const FunctionDecl& decl, const Backend& backend,
           std::type_index options, FunctionFactory factory,
           ArgsFactory from_args);
  /// Throws std::invalid_argument naming the function and every backend it
  /// tried when none fits.
  std::shared_ptr<Function> create(const FunctionDecl& decl, const Context& ctx,
                                   std::type_index options,
                                   const void* opts) const;
  /// The same by name from arguments as values (a graph read from a file);
  /// an unknown name (with the nearest known names), or a missing, mistyped
  /// or unknown argument, is std::invalid_argument naming it.
  std::shared_ptr<Function> create_from_args(const std::string& name,
                                             const Context& ctx,
                                             const FunctionArgs& args) const;
  bool has(const std::string& name) const;
  /// The declaration registered under `name`, or null.
  const FunctionDecl* find_decl(const std::string& name) const;
  /// The declaration registered under `name`; std::invalid_argument tagged
  /// `where` ("did you mean ...?") when there is none.
  const FunctionDecl& decl(const std::string& name,
                           const std::string& where) const;
  /// Every registered function name, sorted.
  std::vector<std::string> names() const;
  /// Every registered declaration, sorted by name.
  std::vector<const FunctionDecl*> decls() const;
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
  struct Function_ {
    const FunctionDecl* decl;
    std::vector<Entry> entries;
  };
  const Entry& pick(const FunctionDecl& decl, const Context& ctx) const;
  const Function_* find(const std::string& name) const;
  std::shared_ptr<Function> finish(const Entry& e, const FunctionDecl& decl,
                                   std::shared_ptr<Function> fn,
                                   const Context& ctx) const;
  std::vector<Function_> table_;
};

/// One function as mg::function_list() reports it.
struct FunctionInfo {
  const FunctionDecl* decl;
  /// What it runs in under a half or bfloat16 context now (the policy's
  /// override or the declaration's default).
  Precision precision;
  /// Every backend:type it is registered for ("cpu:float", "cudnn:half").
  std::vector<Backend> backends;
};

/// Every function of the library, sorted by name: its declaration (names,
/// inputs and outputs with their kinds), its current precision and its
/// backends. Documentation and tools are generated from it.
std::vector<FunctionInfo> function_list();

/// The function table of docs/functions.md, generated from the declarations:
/// one row per function with its builder, inputs (kind, grad, optional),
/// outputs and default precision under half and bfloat16. Backends are left out
/// (they depend on the build: see function_list()).
std::string function_table_markdown();

/// Creates the function declared by `decl` with `opts` for `ctx`.
template <class Options>
std::shared_ptr<Function> create_function(
    const FunctionDeclOf<Options>& decl, const Options& opts,
    const Context& ctx = default_context()) {
  return FunctionRegistry::instance().create(decl, ctx, typeid(Options), &opts);
}

/// Registers Impl (constructed from `const Options&`) for one backend:type;
/// the function records its options as arguments and can be rebuilt from
/// them.
template <class Impl, class Options>
void register_one(FunctionRegistry& r, const FunctionDeclOf<Options>& decl,
                  const Backend& backend) {
  auto make = [](const Options& o) {
    auto f = std::make_shared<Impl>(o);
    f->set_args(options_to_args(o));
    return f;
  };
  r.add(
      decl, backend, typeid(Options),
      [make](const void* o) { return make(*static_cast<const Options*>(o)); },
      [make, &decl](const FunctionArgs& a) {
        return make(options_from_args<Options>(a, decl.name));
      });
}

/// Registers Impl<float>, Impl<Half> and Impl<BFloat16> for `backend_name`.
template <template <class> class Impl, class Options>
void register_float_types(FunctionRegistry& r,
                          const FunctionDeclOf<Options>& decl,
                          const std::string& backend_name) {
  register_one<Impl<float>>(r, decl, {backend_name, Dtype::f32});
  register_one<Impl<Half>>(r, decl, {backend_name, Dtype::f16});
  register_one<Impl<BFloat16>>(r, decl, {backend_name, Dtype::bf16});
}

}  // namespace mg
