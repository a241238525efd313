#include <mixgraph/utils/inference.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/yaml/network.hpp>

namespace mg {

namespace {

bool floating_dtype(Dtype d) {
  return d == Dtype::f32 || d == Dtype::f16 || d == Dtype::bf16;
}

}  // namespace

InferenceConversion convert_parameters_for_inference(
    const std::vector<VariablePtr>& outputs, const ParameterScope& params) {
  const char* tag = "[convert_parameters_for_inference] ";
  std::map<const Variable*, std::string> name_of;
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    name_of[var.get()] = name;
  }
  // The type each reading function wants of each parameter.
  std::map<const Variable*, std::set<Dtype>> wanted;
  std::set<const FunctionNode*> seen;
  std::vector<const FunctionNode*> stack;
  for (const auto& out : outputs) {
    if (!out) throw std::invalid_argument(msg(tag, "an output is null"));
    if (out->parent()) stack.push_back(out->parent().get());
  }
  while (!stack.empty()) {
    const FunctionNode* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    auto& fn = const_cast<FunctionNode*>(node)->function();
    const auto& inputs = node->inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Variable* v = inputs[i].get();
      if (!v) continue;
      if (v->parent()) {
        stack.push_back(v->parent().get());
        continue;
      }
      if (!name_of.count(v)) continue;  // an input, not a parameter
      const Port::Kind kind = fn.input_decl(static_cast<int>(i)).kind;
      if (kind == Port::integer) continue;
      wanted[v].insert(kind == Port::float32 ? Dtype::f32 : fn.dtype());
    }
  }
  InferenceConversion report;
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    SyncedArray& a = var->data()->array();
    const Dtype have = a.has_head() ? a.dtype() : Dtype::f32;
    report.bytes_before += static_cast<int64_t>(a.size() * dtype_size(have));
    auto it = wanted.find(var.get());
    Dtype to = have;
    if (it != wanted.end() && floating_dtype(have)) {
      // One reader in fp32 keeps it fp32; else the reduced type they share.
      to = it->second.count(Dtype::f32) || it->second.size() != 1
               ? Dtype::f32
               : *it->second.begin();
      if (to == Dtype::f32) {
        report.kept_float.push_back(name);
      } else {
        report.reduced.push_back(name);
        report.type_config = dtype_name(to);
      }
      if (to != have) a.cast(to);  // converts once, drops the fp32 copy
    }
    report.bytes_after += static_cast<int64_t>(a.size() * dtype_size(to));
  }
  return report;
}

InferenceConversion convert_network_for_inference(const std::string& yaml_in,
                                                  const std::string& h5_in,
                                                  const std::string& yaml_out,
                                                  const std::string& h5_out,
                                                  const Context& context) {
  ContextGuard guard(context);
  ParameterScope params;
  // A free batch dimension needs a size to build the graph; 1 will do.
  const Network net =
      load_trained_network(yaml_in, h5_in, params, NetworkOptions{1});
  std::vector<VariablePtr> outputs;
  for (const auto& [name, v] : net.outputs) outputs.push_back(v);
  InferenceConversion report =
      convert_parameters_for_inference(outputs, params);
  save_parameters(h5_out, params);
  if (yaml_out != yaml_in) {
    std::filesystem::copy_file(
        yaml_in, yaml_out, std::filesystem::copy_options::overwrite_existing);
  }
  return report;
}

}  // namespace mg
