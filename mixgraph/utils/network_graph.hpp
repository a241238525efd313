// Internal: a graph as the network files store it (functions by type, with
// their arguments and the names of what they read and write), shared by the
// YAML networks (utils/yaml/network.cpp) and NNabla's .nnp files
// (utils/nnp/nnp_load.cpp, nnp_save.cpp), so both name variables and report bad
// functions the same way.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/graph/function_args.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

class FunctionNode;

namespace network_graph {

using NamedVariables = std::vector<std::pair<std::string, VariablePtr>>;

struct NamedFunction {
  FunctionNode* node;
  std::vector<std::string> inputs, outputs;
};

/// The graph below `outputs`, every variable named: outputs by the names
/// given, leaves found in `params` by their parameter names, constant
/// leaves (Variable::constant(): data of the graph's own, attention's
/// causal mask) by Variable::name() or "constant0", "constant1", ..., other
/// leaves (the inputs) by Variable::name() or "x0", "x1", ..., in the order
/// found, the values in between "v0", "v1", ...
struct NamedGraph {
  std::vector<NamedFunction> functions;  // each after those it reads from
  NamedVariables inputs, parameters;     // in the order first read
  NamedVariables constants;              // the files keep their data
  /// Every function output, named: also keeps the outputs the graph does not
  /// use (Split's) alive, so no other variable takes their address.
  NamedVariables values;
};

/// `caller` tags the error for a null output. With `nnabla_functions`, a
/// function of ours that NNabla lacks (ScaledDotProductAttention) is
/// written as its Function::composition() of NNabla's functions (for .nnp
/// files; our YAML keeps it whole).
NamedGraph name_graph(const NamedVariables& outputs,
                      const ParameterScope& params, const std::string& caller,
                      bool nnabla_functions = false);

/// Creates function `type` from `args` in the default context and connects
/// it to `inputs`; returns its outputs. An argument list that does not fit
/// is diagnosed (every unknown argument named, with the known name it is
/// near, and what the function takes), and that message, or setup's, is
/// passed to `fail`, which must throw.
std::vector<VariablePtr> build_function(
    const std::string& type, const FunctionArgs& args,
    const std::vector<VariablePtr>& inputs,
    const std::function<void(const std::string&)>& fail);

}  // namespace network_graph
}  // namespace mg
