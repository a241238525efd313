#include <mixgraph/functions/registry.hpp>

#include <algorithm>
#include <stdexcept>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/precision_policy.hpp>
#ifdef MIXGRAPH_WITH_CUDA
#include <mixgraph/functions/cuda/cuda_functions.hpp>  // no CUDA headers
#endif

namespace mg {

FunctionRegistry& FunctionRegistry::instance() {
  static FunctionRegistry* registry = [] {
    auto* r = new FunctionRegistry();
    cpu::register_cpu_functions(*r);
#ifdef MIXGRAPH_WITH_CUDA
    cuda::register_cuda_functions(*r);
#endif
    return r;
  }();
  return *registry;
}

const std::vector<FunctionRegistry::Entry>* FunctionRegistry::find(
    const std::string& name) const {
  for (const auto& kv : table_) {
    if (kv.first == name) return &kv.second;
  }
  return nullptr;
}

void FunctionRegistry::add(const std::string& name, const Backend& backend,
                           std::type_index options, FunctionFactory factory,
                           ArgsFactory from_args) {
  auto* entries = const_cast<std::vector<Entry>*>(find(name));
  if (!entries) {
    table_.emplace_back(name, std::vector<Entry>{});
    entries = &table_.back().second;
  }
  for (auto& e : *entries) {
    if (e.backend == backend) {
      e = Entry{backend, options, std::move(factory), std::move(from_args)};
      return;
    }
  }
  entries->push_back(
      Entry{backend, options, std::move(factory), std::move(from_args)});
}

const FunctionRegistry::Entry& FunctionRegistry::pick(
    const std::string& name, const Context& ctx) const {
  const auto* entries = find(name);
  if (!entries) {
    throw std::invalid_argument("[create_function] unknown function '" + name +
                                "'");
  }
  const bool keep_float =
      PrecisionPolicy::instance().get(name) == Precision::float32;
  std::string tried;
  for (const Backend& b : ctx.backends) {
    if (keep_float && b.type != Dtype::f32) continue;
    if (!tried.empty()) tried += ", ";
    tried += b.str();
    for (const auto& e : *entries) {
      if (e.backend == b) return e;
    }
  }
  std::string have;
  for (const auto& e : *entries) {
    if (!have.empty()) have += ", ";
    have += e.backend.str();
  }
  throw std::invalid_argument(
      "[create_function] " + name + " has no implementation for context '" +
      ctx.str() + "' (tried " + (tried.empty() ? "nothing" : tried) +
      (keep_float ? "; the precision policy keeps it in float" : "") +
      "); it is implemented for " + have);
}

std::shared_ptr<Function> FunctionRegistry::create(const std::string& name,
                                                   const Context& ctx,
                                                   std::type_index options,
                                                   const void* opts) const {
  const Entry& e = pick(name, ctx);
  if (e.options != options) {
    throw std::invalid_argument("[create_function] " + name +
                                " was given options of the wrong type");
  }
  auto fn = e.factory(opts);
  fn->set_backend(e.backend);
  fn->set_device(e.backend.name == "cpu" ? "cpu" : ctx.device());
  return fn;
}

std::shared_ptr<Function> FunctionRegistry::create_from_args(
    const std::string& name, const Context& ctx,
    const FunctionArgs& args) const {
  const Entry& e = pick(name, ctx);
  auto fn = e.from_args(args);
  fn->set_backend(e.backend);
  fn->set_device(e.backend.name == "cpu" ? "cpu" : ctx.device());
  return fn;
}

bool FunctionRegistry::has(const std::string& name) const {
  return find(name) != nullptr;
}

std::vector<std::string> FunctionRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& kv : table_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Backend> FunctionRegistry::backends(const std::string& name) const {
  std::vector<Backend> out;
  if (const auto* entries = find(name)) {
    for (const auto& e : *entries) out.push_back(e.backend);
  }
  return out;
}

}  // namespace mg
