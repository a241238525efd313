// Networks in YAML: the functions of a graph, their arguments, inputs,
// outputs and parameter names, written out and rebuilt into a runnable graph.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

/// A graph rebuilt from YAML: its inputs to fill and its outputs to run.
struct Network {
  std::string name;
  std::vector<std::pair<std::string, VariablePtr>> inputs;
  std::vector<std::pair<std::string, VariablePtr>> outputs;
  VariablePtr input(const std::string& name) const;
  VariablePtr output(const std::string& name) const;
};

/// Writes the graph that computes `outputs` (named) to `path`. Leaves found
/// in `params` are written as parameters by name (their values go to HDF5
/// with save_parameters); other leaves are the network's inputs, named by
/// Variable::name() or "x0", "x1", ... in the order found.
void save_network(const std::string& path, const std::string& name,
                  const std::vector<std::pair<std::string, VariablePtr>>& outputs,
                  const ParameterScope& params);
/// The same, as YAML text.
std::string network_to_yaml(
    const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params);

/// Rebuilds a network in the default context. Parameters are taken from
/// `params` by name (load their values first with load_parameters); one it
/// lacks is created with zeros. A syntax error, an unknown function, or a
/// missing, mistyped or unknown argument is std::invalid_argument naming the
/// file and line.
Network load_network(const std::string& path, ParameterScope& params);
Network network_from_yaml(const std::string& yaml, ParameterScope& params,
                          const std::string& source = "<string>");

}  // namespace mg
