#include <mixgraph/utils/yaml/network.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/inference.hpp>
#include <mixgraph/utils/network_graph.hpp>

namespace mg {

namespace {

void emit_value(YAML::Emitter& out, const ArgValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                      std::is_same_v<T, std::vector<double>>) {
          out << YAML::Flow << YAML::BeginSeq;
          for (auto e : x) out << e;
          out << YAML::EndSeq;
        } else {
          out << x;
        }
      },
      v);
}

// A float as a YAML scalar that reads back to the same float (9
// significant digits; YAML's .inf, -.inf and .nan).
std::string float_scalar(float x) {
  if (std::isnan(x)) return ".nan";
  if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
  return buf;
}

// The graph's constants (attention's causal mask) with their values: the
// network file is their only home (parameters go to HDF5 apart).
void emit_constants(YAML::Emitter& out,
                    const network_graph::NamedVariables& constants) {
  out << YAML::Key << "constants" << YAML::Value << YAML::BeginSeq;
  for (const auto& [n, v] : constants) {
    const SyncedArray& a = v->data()->array();
    if (a.has_head() && !is_floating(a.dtype())) {
      throw std::invalid_argument(
          msg("[save_network] constant '", n, "' holds ", dtype_name(a.dtype()),
              " data: a network file keeps floating constants only"));
    }
    const float* x = v->data()->get<const float>();
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
        << n << YAML::Key << "shape" << YAML::Value << YAML::Flow << v->shape()
        << YAML::Key << "data" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int64_t i = 0; i < v->size(); ++i) out << float_scalar(x[i]);
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

std::string where(const std::string& source, const YAML::Node& n) {
  return source + ":" + std::to_string(n.Mark().line + 1);
}

[[noreturn]] void fail(const std::string& source, const YAML::Node& n,
                       const std::string& what) {
  throw std::invalid_argument(
      msg("[load_network] ", where(source, n), ": ", what));
}

// A YAML scalar or list as an argument value: bool, int, float, string.
ArgValue to_arg(const YAML::Node& n, const std::string& source) {
  auto scalar = [](const YAML::Node& s) -> ArgValue {
    const std::string t = s.Scalar();
    if (s.Tag() == "!") return t;  // quoted: always a string
    if (t == "true" || t == "false") return t == "true";
    try {
      size_t used = 0;
      const long long i = std::stoll(t, &used);
      if (used == t.size()) return static_cast<int64_t>(i);
    } catch (...) {
    }
    try {
      size_t used = 0;
      const double d = std::stod(t, &used);
      if (used == t.size()) return d;
    } catch (...) {
    }
    return t;
  };
  if (n.IsScalar()) return scalar(n);
  if (n.IsSequence()) {
    std::vector<int64_t> ints;
    std::vector<double> reals;
    bool all_int = true;
    for (const auto& e : n) {
      if (!e.IsScalar()) fail(source, e, "lists may hold only numbers");
      ArgValue v = scalar(e);
      if (auto p = std::get_if<int64_t>(&v)) {
        ints.push_back(*p);
        reals.push_back(static_cast<double>(*p));
      } else if (auto q = std::get_if<double>(&v)) {
        all_int = false;
        reals.push_back(*q);
      } else {
        fail(source, e,
             "lists may hold only numbers, got '" + e.Scalar() + "'");
      }
    }
    if (n.size() == 0) return std::vector<double>{};
    if (all_int) return ints;
    return reals;
  }
  fail(source, n, "an argument must be a value or a list of numbers");
}

Shape to_shape(const YAML::Node& n, const std::string& source) {
  if (!n || !n.IsSequence())
    fail(source, n, "'shape' must be a list of integers");
  Shape s;
  for (const auto& e : n) {
    try {
      s.push_back(e.as<int64_t>());
    } catch (const YAML::Exception&) {
      fail(source, e,
           "'shape' must be a list of integers, got '" + e.Scalar() + "'");
    }
    if (s.back() < 0) {
      fail(source, e,
           "'shape' " + shape_str(s) + "...: a dimension is negative");
    }
  }
  return s;
}

// An input's shape: its first dimension may be free (null or -1), then
// options.batch_size sets it. [] is a scalar input (a shared slope).
Shape to_input_shape(const YAML::Node& n, const std::string& source,
                     const std::string& name, const NetworkOptions& options) {
  if (!n || !n.IsSequence()) {
    fail(source, n, "input '" + name + "': 'shape' must be a list of integers");
  }
  if (n.size() == 0) return {};
  const YAML::Node first = n[0];
  const bool free =
      first.IsNull() || (first.IsScalar() && (first.Scalar() == "-1"));
  if (!free) return to_shape(n, source);
  if (options.batch_size <= 0) {
    fail(source, n,
         "input '" + name +
             "' has a free batch dimension (null or -1): set "
             "NetworkOptions::batch_size to the batch size to run");
  }
  YAML::Node rest(YAML::NodeType::Sequence);
  for (size_t i = 1; i < n.size(); ++i) rest.push_back(n[i]);
  Shape s = to_shape(rest, source);
  s.insert(s.begin(), options.batch_size);
  return s;
}

YAML::Node need(const YAML::Node& parent, const char* key,
                const std::string& source, const std::string& what) {
  YAML::Node found = parent[key];
  if (!found) fail(source, parent, what + " lacks '" + key + "'");
  return found;
}

}  // namespace

VariablePtr Network::input(const std::string& n) const {
  for (const auto& [k, v] : inputs) {
    if (k == n) return v;
  }
  throw std::invalid_argument(msg("[Network] no input named '", n, "'"));
}

VariablePtr Network::output(const std::string& n) const {
  for (const auto& [k, v] : outputs) {
    if (k == n) return v;
  }
  throw std::invalid_argument(msg("[Network] no output named '", n, "'"));
}

std::string network_to_yaml(
    const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveNetworkOptions& options) {
  const auto graph = network_graph::name_graph(outputs, params, "save_network");
  YAML::Emitter fout;
  fout << YAML::BeginSeq;
  for (const auto& f : graph.functions) {
    fout << YAML::BeginMap;
    fout << YAML::Key << "type" << YAML::Value << f.node->function().name();
    fout << YAML::Key << "inputs" << YAML::Value << YAML::Flow
         << YAML::BeginSeq;
    for (const auto& in : f.inputs) fout << in;
    fout << YAML::EndSeq;
    fout << YAML::Key << "outputs" << YAML::Value << YAML::Flow
         << YAML::BeginSeq;
    for (const auto& out : f.outputs) fout << out;
    fout << YAML::EndSeq;
    fout << YAML::Key << "args" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : f.node->function().args()) {
      fout << YAML::Key << k << YAML::Value;
      emit_value(fout, v);
    }
    fout << YAML::EndMap << YAML::EndMap;
  }
  fout << YAML::EndSeq;

  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "network" << YAML::Value
      << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "inputs" << YAML::Value << YAML::BeginSeq;
  for (const auto& [n, v] : graph.inputs) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
        << n << YAML::Key << "shape" << YAML::Value << YAML::Flow
        << YAML::BeginSeq;
    for (size_t i = 0; i < v->shape().size(); ++i) {
      if (i == 0 && options.free_batch) {
        out << YAML::Null;
      } else {
        out << v->shape()[i];
      }
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginSeq;
  for (const auto& [n, v] : graph.parameters) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
        << n << YAML::Key << "shape" << YAML::Value << YAML::Flow << v->shape()
        << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!graph.constants.empty()) emit_constants(out, graph.constants);
  out << YAML::Key << "outputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& [n, v] : outputs) out << n;
  out << YAML::EndSeq;
  out << YAML::Key << "functions" << YAML::Value << YAML::Load(fout.c_str());
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void save_network(
    const std::string& path, const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveNetworkOptions& options) {
  if (!options.training) {
    std::vector<VariablePtr> vars;
    for (const auto& [oname, v] : outputs) vars.push_back(v);
    const auto found = training_only_functions(vars);
    if (!found.empty()) {
      std::string list;
      for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
      throw std::invalid_argument(
          msg("[save_network] '", path, "': the graph trains (", list,
              "), and reloaded for inference it would compute something else: "
              "save mg::inference_graph(outputs) (utils/inference.hpp), or set "
              "SaveNetworkOptions::training to write the training graph as it "
              "is"));
    }
  }
  const std::string text = network_to_yaml(name, outputs, params, options);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f)
      throw std::runtime_error(msg("[save_network] cannot write '", tmp, "'"));
    f << text;
    if (!f)
      throw std::runtime_error(
          msg("[save_network] writing '", tmp, "' failed"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(
        msg("[save_network] cannot rename '", tmp, "' to '", path, "'"));
  }
}

namespace {

Network build_network(const std::string& yaml, ParameterScope& params,
                      const std::string& source, const NetworkOptions& options);

}  // namespace

// yaml-cpp's own exceptions (a list where a name belongs: a bad conversion)
// become std::invalid_argument with the line, as every error of a bad file.
Network network_from_yaml(const std::string& yaml, ParameterScope& params,
                          const std::string& source,
                          const NetworkOptions& options) {
  try {
    return build_network(yaml, params, source, options);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(
        msg("[load_network] ", source, ":", e.mark.line + 1, ": ", e.msg));
  }
}

namespace {

Network build_network(const std::string& yaml, ParameterScope& params,
                      const std::string& source,
                      const NetworkOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(
        msg("[load_network] ", source, ":", e.mark.line + 1, ": ", e.msg));
  }
  if (!root.IsMap() || !root["network"]) {
    fail(source, root, "expected a map with the key 'network'");
  }
  const YAML::Node net = root["network"];
  Network result;
  if (net["name"]) result.name = net["name"].as<std::string>();
  std::unordered_map<std::string, VariablePtr> vars;
  for (const auto& in : net["inputs"]) {
    const std::string n =
        need(in, "name", source, "an input").as<std::string>();
    auto v = make_variable(to_input_shape(in["shape"], source, n, options));
    v->set_name(n);
    vars[n] = v;
    result.inputs.emplace_back(n, v);
  }
  std::string missing;
  for (const auto& p : net["parameters"]) {
    const std::string n =
        need(p, "name", source, "a parameter").as<std::string>();
    const Shape shape = to_shape(p["shape"], source);
    VariablePtr v = params.get(n);
    if (!v) {
      missing += "\n  '" + n + "' " + shape_str(shape) + " (line " +
                 std::to_string(p.Mark().line + 1) + ")";
      continue;
    }
    if (v->shape() != shape) {
      fail(source, p,
           "parameter '" + n + "' has shape " + shape_str(shape) +
               " here, but " + shape_str(v->shape()) + " in the scope");
    }
    vars[n] = v;
  }
  if (!missing.empty()) {
    throw std::invalid_argument(msg(
        "[load_network] ", source,
        ": these parameters have no value in the scope (load them first with "
        "load_parameters, or use load_trained_network):",
        missing));
  }
  for (const auto& c : net["constants"]) {
    const std::string n =
        need(c, "name", source, "a constant").as<std::string>();
    const Shape shape =
        to_shape(need(c, "shape", source, "constant " + n), source);
    const YAML::Node data = need(c, "data", source, "constant " + n);
    auto v = make_variable(shape);
    if (!data.IsSequence() || static_cast<int64_t>(data.size()) != v->size()) {
      fail(source, data,
           "constant '" + n + "' of shape " + shape_str(shape) + " needs " +
               std::to_string(v->size()) + " values in 'data'");
    }
    float* x = v->data()->cast<float>(/*write_only=*/true);
    for (size_t i = 0; i < data.size(); ++i) {
      try {
        x[i] = data[i].as<float>();
      } catch (const YAML::Exception&) {
        fail(
            source, data[i],
            "constant '" + n + "': '" + data[i].Scalar() + "' is not a number");
      }
    }
    v->set_name(n);
    v->set_constant(true);
    vars[n] = v;
  }
  const YAML::Node functions = net["functions"];
  if (!functions || !functions.IsSequence()) {
    fail(source, net, "'functions' must be a list");
  }
  for (const auto& f : functions) {
    const std::string type =
        need(f, "type", source, "a function").as<std::string>();
    if (!FunctionRegistry::instance().has(type)) {
      fail(source, f,
           "unknown function '" + type + "'" +
               did_you_mean(FunctionRegistry::instance().names(), type));
    }
    std::vector<VariablePtr> inputs;
    for (const auto& in : need(f, "inputs", source, type)) {
      auto it = vars.find(in.as<std::string>());
      if (it == vars.end()) {
        fail(source, in,
             type + " reads '" + in.as<std::string>() +
                 "', which no input, parameter, constant or earlier "
                 "function defines");
      }
      inputs.push_back(it->second);
    }
    FunctionArgs args;
    if (const YAML::Node a = f["args"]) {
      if (!a.IsMap()) fail(source, a, "'args' of " + type + " must be a map");
      for (const auto& kv : a) {
        args.emplace_back(kv.first.as<std::string>(),
                          to_arg(kv.second, source));
      }
    }
    const auto outs = network_graph::build_function(
        type, args, inputs,
        [&](const std::string& what) { fail(source, f, what); });
    const YAML::Node names = need(f, "outputs", source, type);
    if (names.size() != outs.size()) {
      fail(source, names,
           type + " has " + std::to_string(outs.size()) + " outputs, but " +
               std::to_string(names.size()) + " names are given");
    }
    for (size_t i = 0; i < outs.size(); ++i)
      vars[names[i].as<std::string>()] = outs[i];
  }
  for (const auto& o : need(net, "outputs", source, "the network")) {
    auto it = vars.find(o.as<std::string>());
    if (it == vars.end()) {
      fail(source, o, "output '" + o.as<std::string>() + "' is never computed");
    }
    result.outputs.emplace_back(o.as<std::string>(), it->second);
  }
  return result;
}

}  // namespace

Network load_network(const std::string& path, ParameterScope& params,
                     const NetworkOptions& options) {
  std::ifstream in(path);
  if (!in)
    throw std::invalid_argument(msg("[load_network] cannot open '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return network_from_yaml(ss.str(), params, path, options);
}

Network load_trained_network(const std::string& network_path,
                             const std::string& parameters_path,
                             ParameterScope& params,
                             const NetworkOptions& options) {
  load_parameters(parameters_path, params);
  return load_network(network_path, params, options);
}

}  // namespace mg
