#include <mixgraph/contexts/context.hpp>

#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <sstream>
#include <stdexcept>

namespace mg {

namespace {

Dtype parse_type_config(const std::string& type_config,
                        const std::string& where) {
  if (type_config == "float") return Dtype::f32;
  if (type_config == "half") return Dtype::f16;
  if (type_config == "bfloat16") return Dtype::bf16;
  throw std::invalid_argument(msg("[", where, "] unknown type_config '",
                                  type_config,
                                  "'; expected float, half or bfloat16"));
}

Context& mutable_default() {
  static Context ctx = context("cpu", "float");
  return ctx;
}

}  // namespace

std::string Backend::str() const { return name + ":" + dtype_name(type); }

std::string Context::str() const {
  std::string s;
  for (size_t i = 0; i < backends.size(); ++i) {
    if (i) s += ",";
    s += backends[i].str();
  }
  return s;
}

Dtype Context::type_config() const {
  return backends.empty() ? Dtype::f32 : backends.front().type;
}

std::string Context::device() const {
  return array_class == "CpuArray" ? "cpu" : "cuda:" + device_id;
}

Context context(const std::string& ext, const std::string& type_config,
                const std::string& device_id) {
  const Dtype t = parse_type_config(type_config, "context");
  Context ctx;
  ctx.device_id = device_id;
  auto add = [&](const std::string& name, Dtype type) {
    ctx.backends.push_back({name, type});
  };
  if (ext == "cpu") {
    add("cpu", t);
    if (t != Dtype::f32) add("cpu", Dtype::f32);
  } else if (ext == "cuda" || ext == "cudnn") {
    if (ext == "cudnn") {
      add("cudnn", t);
      if (t != Dtype::f32) add("cudnn", Dtype::f32);
    }
    add("cuda", t);
    if (t != Dtype::f32) add("cuda", Dtype::f32);
    add("cpu", Dtype::f32);
    ctx.array_class = "CudaArray";
    // Fail here, where the program asked for the GPU, rather than at the
    // first array it moves there: "device 'cuda:0' is not available:
    // mixgraph was built without CUDA" (or: no GPU present, ...).
    resolve_device(ctx.device(), "[context] " + ext + ": ");
  } else {
    throw std::invalid_argument(msg("[context] unknown extension '", ext,
                                    "'; expected cpu, cuda or cudnn"));
  }
  return ctx;
}

Context parse_context(const std::string& text) {
  Context ctx;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      throw std::invalid_argument(msg("[parse_context] entry '", item, "' of '",
                                      text,
                                      "' is not of the form backend:type, e.g. "
                                      "cpu:half"));
    }
    const std::string name = item.substr(0, colon);
    if (name != "cpu" && name != "cuda" && name != "cudnn") {
      throw std::invalid_argument(msg("[parse_context] unknown backend '", name,
                                      "' in '", text,
                                      "'; expected cpu, cuda or cudnn"));
    }
    ctx.backends.push_back(
        {name, parse_type_config(item.substr(colon + 1), "parse_context")});
    if (name != "cpu") ctx.array_class = "CudaArray";
  }
  if (ctx.backends.empty()) {
    throw std::invalid_argument(
        msg("[parse_context] '", text, "' names no backend"));
  }
  return ctx;
}

const Context& default_context() { return mutable_default(); }

void set_default_context(const Context& ctx) {
  if (ctx.backends.empty()) {
    throw std::invalid_argument(
        "[set_default_context] the context has no backends");
  }
  mutable_default() = ctx;
}

ContextGuard::ContextGuard(const Context& ctx) : previous_(default_context()) {
  set_default_context(ctx);
}

ContextGuard::~ContextGuard() { mutable_default() = previous_; }

}  // namespace mg
