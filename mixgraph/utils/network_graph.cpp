#include <mixgraph/utils/network_graph.hpp>

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>

namespace mg::network_graph {

namespace {

[[noreturn]] void fail_with(const std::function<void(const std::string&)>& fail,
                            const std::string& what) {
  fail(what);
  throw std::invalid_argument(what);  // a `fail` that returned
}

// Creates function `type` from `args`; when the arguments do not fit, finds
// out which names are wrong. Every argument may be left out (NNabla's lists
// make most of them optional), so a wrong name is an unknown one: the
// registry reports one at a time, so this drops it and asks again, then
// names each with the known names it is near ("axis" for "axes") and lists
// what the function takes.
std::shared_ptr<Function> create_function(
    const std::string& type, const FunctionArgs& args,
    const std::function<void(const std::string&)>& fail) {
  auto& registry = FunctionRegistry::instance();
  try {
    return registry.create_from_args(type, default_context(), args);
  } catch (const std::invalid_argument& first_error) {
    const std::string first = first_error.what();
    auto quoted_after = [](const std::string& text, const std::string& key,
                           std::string* out) {
      const size_t at = text.find(key);
      if (at == std::string::npos) return false;
      const size_t begin = at + key.size();
      const size_t end = text.find('\'', begin);
      if (end == std::string::npos) return false;
      *out = text.substr(begin, end - begin);
      return true;
    };
    FunctionArgs trial = args;
    std::vector<std::string> unknown;
    std::shared_ptr<Function> fn;
    for (size_t attempt = 0; attempt <= args.size() && !fn; ++attempt) {
      try {
        fn = registry.create_from_args(type, default_context(), trial);
      } catch (const std::invalid_argument& e) {
        std::string name;
        if (!quoted_after(e.what(), "unknown argument '", &name)) break;
        trial.erase(
            std::remove_if(trial.begin(), trial.end(),
                           [&](const auto& kv) { return kv.first == name; }),
            trial.end());
        unknown.push_back(name);
      }
    }
    if (unknown.empty()) fail_with(fail, first);
    std::vector<std::string> known, not_given;
    if (fn) {
      for (const auto& kv : fn->args()) {
        known.push_back(kv.first);
        const bool given =
            std::any_of(args.begin(), args.end(),
                        [&](const auto& a) { return a.first == kv.first; });
        if (!given) not_given.push_back(kv.first);
      }
    }
    std::string what = "[" + type + "] unknown argument";
    what += unknown.size() > 1 ? "s " : " ";
    for (size_t i = 0; i < unknown.size(); ++i) {
      what += (i ? ", '" : "'") + unknown[i] + "'";
      // A typo is near a name the function takes and was not given.
      const auto near = nearest_names(not_given, unknown[i], 1);
      if (!near.empty()) what += " (did you mean '" + near[0] + "'?)";
    }
    if (fn) {
      what += "; it takes ";
      for (size_t i = 0; i < known.size(); ++i) {
        what += (i ? ", '" : "'") + known[i] + "'";
      }
      if (known.empty()) what += "no arguments";
    }
    fail_with(fail, what);
  }
}

}  // namespace

NamedGraph name_graph(const NamedVariables& outputs,
                      const ParameterScope& params, const std::string& caller,
                      bool nnabla_functions) {
  std::vector<VariablePtr> roots;
  for (const auto& [name, v] : outputs) {
    if (!v) {
      throw std::invalid_argument(
          msg("[", caller, "] output '", name, "' is null"));
    }
    roots.push_back(v);
  }
  std::unordered_map<const Variable*, std::string> param_names;
  std::unordered_set<std::string> taken_by_params;
  for (const auto& [pname, v] : params.parameters(/*grad_only=*/false)) {
    param_names[v.get()] = pname;
    taken_by_params.insert(pname);
  }
  NamedGraph graph;
  std::unordered_map<const Variable*, std::string> names;
  for (const auto& [oname, v] : outputs) names[v.get()] = oname;
  int next_input = 0, next_value = 0, next_constant = 0;
  auto name_of = [&](const VariablePtr& v, bool output) -> std::string {
    auto it = names.find(v.get());
    if (it != names.end()) return it->second;
    std::string n;
    if (output) {
      n = "v" + std::to_string(next_value++);
    } else if (auto p = param_names.find(v.get()); p != param_names.end()) {
      n = p->second;
      graph.parameters.emplace_back(n, v);
    } else if (!v->parent() && v->constant()) {
      n = v->name().empty() ? "constant" + std::to_string(next_constant++)
                            : v->name();
      // The files read constants and parameters by name (.nnp keeps
      // constants as parameters): one name must not stand for both.
      if (taken_by_params.count(n)) {
        throw std::invalid_argument(
            msg("[", caller, "] constant '", n,
                "' has the name of a parameter: rename it "
                "(Variable::set_name)"));
      }
      graph.constants.emplace_back(n, v);
    } else if (!v->parent()) {
      n = v->name().empty() ? "x" + std::to_string(next_input++) : v->name();
      graph.inputs.emplace_back(n, v);
    } else {
      n = "v" + std::to_string(next_value++);
    }
    names[v.get()] = n;
    return n;
  };
  std::unordered_set<const FunctionNode*> named;
  auto add = [&](FunctionNode* node) {
    named.insert(node);
    NamedFunction f{node, {}, {}};
    for (const auto& in : node->inputs())
      f.inputs.push_back(name_of(in, false));
    for (const auto& out : node->outputs()) {
      f.outputs.push_back(name_of(out, true));
      graph.values.emplace_back(f.outputs.back(), out);
    }
    graph.functions.push_back(std::move(f));
  };
  for (FunctionNode* node : mg::functions_in_order(roots)) {
    const std::vector<VariablePtr> composed =
        nnabla_functions ? node->function().composition(node->inputs())
                         : std::vector<VariablePtr>{};
    if (composed.empty()) {
      add(node);
      continue;
    }
    // The composition's outputs take the names of the function's; its
    // functions are those not named yet (what lies before the inputs came
    // first).
    for (size_t o = 0; o < composed.size(); ++o) {
      names[composed[o].get()] = name_of(node->outputs()[o], true);
    }
    for (FunctionNode* part : mg::functions_in_order(composed)) {
      if (!named.count(part)) add(part);
    }
  }
  return graph;
}

std::vector<VariablePtr> build_function(
    const std::string& type, const FunctionArgs& args,
    const std::vector<VariablePtr>& inputs,
    const std::function<void(const std::string&)>& fail) {
  auto fn = create_function(type, args, fail);
  try {
    Variables raw;
    for (const auto& v : inputs) raw.push_back(v.get());
    const int n = fn->num_outputs_for(raw);
    return connect(std::make_shared<FunctionNode>(std::move(fn), inputs), n);
  } catch (const std::invalid_argument& e) {
    fail_with(fail, e.what());
  }
}

}  // namespace mg::network_graph
