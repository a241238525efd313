#include <mixgraph/functions/precision_policy.hpp>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg {

namespace {

const FunctionDecl& known(const std::string& name, const std::string& where) {
  return FunctionRegistry::instance().decl(name, where);
}

std::string policy_yaml(const std::map<std::string, Precision>& overrides) {
  std::map<Precision, std::vector<std::string>> groups;
  for (const FunctionDecl* d : FunctionRegistry::instance().decls()) {
    auto it = overrides.find(d->name);
    groups[it == overrides.end() ? d->precision : it->second].push_back(
        d->name);
  }
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (Precision p : {Precision::reduced, Precision::float32}) {
    out << YAML::Key << precision_name(p) << YAML::Value << YAML::Flow
        << groups[p];
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace

PrecisionPolicy& PrecisionPolicy::instance() {
  static PrecisionPolicy policy;
  return policy;
}

void PrecisionPolicy::reset() { overrides_.clear(); }

void PrecisionPolicy::load_string(const std::string& yaml,
                                  const std::string& source) {
  auto where = [&](const YAML::Mark& m) {
    return msg("[PrecisionPolicy] ", source, ":", m.line + 1, ": ");
  };
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(msg(where(e.mark), e.msg));
  }
  std::map<std::string, Precision> overrides;
  if (root.IsNull()) {  // an empty file: no overrides
    overrides_ = std::move(overrides);
    return;
  }
  if (!root.IsMap()) {
    throw std::invalid_argument(msg("[PrecisionPolicy] ", source,
                                    ": expected a map with the keys reduced "
                                    "and float"));
  }
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    Precision p;
    if (key == "reduced") {
      p = Precision::reduced;
    } else if (key == "float") {
      p = Precision::float32;
    } else if (key == "accumulate_float") {
      throw std::invalid_argument(
          msg(where(kv.first.Mark()),
              "'accumulate_float' is no longer a category: every function sums "
              "in fp32 already; list these functions under 'reduced'"));
    } else {
      throw std::invalid_argument(msg(where(kv.first.Mark()), "unknown key '",
                                      key, "'; expected reduced or float"));
    }
    if (!kv.second.IsSequence()) {
      throw std::invalid_argument(msg(where(kv.second.Mark()), "'", key,
                                      "' must be a list of function names"));
    }
    for (const auto& item : kv.second) {
      const std::string name = item.as<std::string>();
      if (!FunctionRegistry::instance().has(name)) {
        throw std::invalid_argument(
            msg(where(item.Mark()), "unknown function '", name, "'",
                did_you_mean(FunctionRegistry::instance().names(), name)));
      }
      if (overrides.count(name) && overrides[name] != p) {
        throw std::invalid_argument(
            msg(where(item.Mark()), "'", name,
                "' is listed under both reduced and float"));
      }
      overrides[name] = p;
    }
  }
  overrides_ = std::move(overrides);
}

void PrecisionPolicy::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument(
        msg("[PrecisionPolicy] cannot open '", path, "'"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  load_string(ss.str(), path);
}

void PrecisionPolicy::set(const std::string& function, Precision precision) {
  known(function, "PrecisionPolicy");
  overrides_[function] = precision;
}

Precision PrecisionPolicy::get(const FunctionDecl& decl) const {
  auto it = overrides_.find(decl.name);
  return it == overrides_.end() ? decl.precision : it->second;
}

Precision PrecisionPolicy::get(const std::string& function) const {
  return get(known(function, "PrecisionPolicy"));
}

std::string PrecisionPolicy::to_yaml() const { return policy_yaml(overrides_); }

std::string default_policy_yaml() {
  return "# mixgraph's default precision policy, from the functions' "
         "declarations.\n# reduced: the type_config's fp16/bf16 in and out. "
         "float: fp32 whatever the\n# context. Every sum accumulates in "
         "fp32 in both.\n" +
         policy_yaml({});
}

}  // namespace mg
