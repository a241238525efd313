#include <mixgraph/functions/registry.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/backends.hpp>
#include <mixgraph/functions/precision_policy.hpp>

namespace mg {

FunctionRegistry& FunctionRegistry::instance() {
  static FunctionRegistry* registry = [] {
    auto* r = new FunctionRegistry();
    register_backends(*r);
    return r;
  }();
  return *registry;
}

const FunctionRegistry::Function_* FunctionRegistry::find(
    const std::string& name) const {
  for (const auto& f : table_) {
    if (name == f.decl->name) return &f;
  }
  return nullptr;
}

void FunctionRegistry::add(const FunctionDecl& decl, const Backend& backend,
                           std::type_index options, FunctionFactory factory,
                           ArgsFactory from_args) {
  auto* f = const_cast<Function_*>(find(decl.name));
  if (!f) {
    table_.push_back(Function_{&decl, {}});
    f = &table_.back();
  } else if (f->decl != &decl) {
    throw std::logic_error(
        msg("[FunctionRegistry] ", decl.name,
            " is declared twice: one name, one declaration"));
  }
  Entry entry{backend, options, std::move(factory), std::move(from_args)};
  for (auto& e : f->entries) {
    if (e.backend == backend) {
      e = std::move(entry);
      return;
    }
  }
  f->entries.push_back(std::move(entry));
}

const FunctionDecl* FunctionRegistry::find_decl(const std::string& name) const {
  const Function_* f = find(name);
  return f ? f->decl : nullptr;
}

const FunctionDecl& FunctionRegistry::decl(const std::string& name,
                                           const std::string& where) const {
  if (const FunctionDecl* d = find_decl(name)) return *d;
  throw std::invalid_argument(msg("[", where, "] unknown function '", name, "'",
                                  did_you_mean(names(), name)));
}

const FunctionRegistry::Entry& FunctionRegistry::pick(
    const FunctionDecl& decl, const Context& ctx) const {
  const Function_* f = find(decl.name);
  if (!f) {
    throw std::invalid_argument(msg("[create_function] ", decl.name,
                                    " is declared but has no implementation"));
  }
  const bool keep_float =
      PrecisionPolicy::instance().get(decl) == Precision::float32;
  std::string tried;
  for (const Backend& b : ctx.backends) {
    if (keep_float && b.type != Dtype::f32) continue;
    if (!tried.empty()) tried += ", ";
    tried += b.str();
    for (const auto& e : f->entries) {
      if (e.backend == b) return e;
    }
  }
  std::string have;
  for (const auto& e : f->entries) {
    if (!have.empty()) have += ", ";
    have += e.backend.str();
  }
  throw std::invalid_argument(msg(
      "[create_function] ", decl.name, " has no implementation for context '",
      ctx.str(), "' (tried ", tried.empty() ? "nothing" : tried,
      keep_float ? "; the precision policy keeps it in float" : "",
      "); it is implemented for ", have));
}

std::shared_ptr<Function> FunctionRegistry::finish(const Entry& e,
                                                   const FunctionDecl& decl,
                                                   std::shared_ptr<Function> fn,
                                                   const Context& ctx) const {
  fn->set_decl(decl);
  fn->set_backend(e.backend);
  fn->set_device(e.backend.name == "cpu" ? "cpu" : ctx.device());
  return fn;
}

std::shared_ptr<Function> FunctionRegistry::create(const FunctionDecl& decl,
                                                   const Context& ctx,
                                                   std::type_index options,
                                                   const void* opts) const {
  const Entry& e = pick(decl, ctx);
  if (e.options != options) {
    throw std::logic_error(msg("[create_function] ", decl.name,
                               " was given options of the wrong type"));
  }
  return finish(e, decl, e.factory(opts), ctx);
}

std::shared_ptr<Function> FunctionRegistry::create_from_args(
    const std::string& name, const Context& ctx,
    const FunctionArgs& args) const {
  const FunctionDecl& d = decl(name, "create_function");
  const Entry& e = pick(d, ctx);
  return finish(e, d, e.from_args(args), ctx);
}

bool FunctionRegistry::has(const std::string& name) const {
  return find(name) != nullptr;
}

std::vector<std::string> FunctionRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& f : table_) out.push_back(f.decl->name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const FunctionDecl*> FunctionRegistry::decls() const {
  std::vector<const FunctionDecl*> out;
  for (const auto& f : table_) out.push_back(f.decl);
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
    return std::string(a->name) < b->name;
  });
  return out;
}

std::vector<Backend> FunctionRegistry::backends(const std::string& name) const {
  std::vector<Backend> out;
  if (const auto* f = find(name)) {
    for (const auto& e : f->entries) out.push_back(e.backend);
  }
  return out;
}

namespace {

std::string port_text(const Port& p, bool input) {
  std::string s = p.name;
  switch (p.kind) {
    case Port::floating:
      break;
    case Port::integer:
      s += " (integer)";
      break;
    case Port::float32:
      s += " (fp32)";
      break;
    case Port::any:
      s += " (any dtype)";
      break;
  }
  if (input && !p.grad) s += " (no grad)";
  if (input && p.optional) s += " (optional)";
  return s;
}

}  // namespace

std::string function_table_markdown() {
  std::ostringstream os;
  os << "| function | builder | inputs | outputs | under half / bf16 |\n"
     << "| --- | --- | --- | --- | --- |\n";
  for (const FunctionDecl* d : FunctionRegistry::instance().decls()) {
    os << "| " << d->name << " | `F::" << d->snake << "` | ";
    if (d->inputs.size == 0) os << "(none)";
    for (int i = 0; i < d->inputs.size; ++i) {
      os << (i ? ", " : "") << port_text(d->inputs[i], true);
    }
    if (d->variadic) os << ", ...";
    os << " | ";
    for (int i = 0; i < d->outputs.size; ++i) {
      os << (i ? ", " : "") << port_text(d->outputs[i], false);
    }
    if (d->variadic_outputs) os << ", ...";
    os << " | " << (d->precision == Precision::float32 ? "fp32" : "reduced")
       << " |\n";
  }
  return os.str();
}

std::vector<FunctionInfo> function_list() {
  const auto& registry = FunctionRegistry::instance();
  std::vector<FunctionInfo> out;
  for (const FunctionDecl* d : registry.decls()) {
    out.push_back(
        {d, PrecisionPolicy::instance().get(*d), registry.backends(d->name)});
  }
  return out;
}

}  // namespace mg
