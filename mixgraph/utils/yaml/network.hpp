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

/// How save_network writes a network.
struct SaveNetworkOptions {
  /// Write every input's first dimension as `null`: the batch size is then
  /// chosen when the network is loaded (NetworkOptions::batch_size). Only
  /// the inputs change: a function argument that holds the batch size (a
  /// Reshape to (64, -1)) still does; write such shapes with -1 there.
  bool free_batch = false;
  /// Write training-only behaviour as it is (batch normalization on batch
  /// statistics, Dropout, random augmentation: training_only_functions()),
  /// to share or resume training. Without it save_network refuses such a
  /// graph, which reloaded for inference computes something else: save
  /// mg::inference_graph(outputs) instead (utils/inference.hpp).
  bool training = false;
};

/// Writes the graph that computes `outputs` (named) to `path`. Leaves found
/// in `params` are written as parameters by name (their values go to HDF5
/// with save_parameters); constant leaves (Variable::constant(): attention's
/// causal mask) are written with their values, under `constants`, and come
/// back as constants; other leaves are the network's inputs, named by
/// Variable::name() or "x0", "x1", ... in the order found. A graph with
/// training-only functions is std::invalid_argument naming them and what to
/// call (see SaveNetworkOptions::training). A failed write is
/// std::runtime_error.
void save_network(
    const std::string& path, const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveNetworkOptions& options = {});
/// The same, as YAML text: the graph as it is, training-only functions
/// included (the codec; save_network is what checks).
std::string network_to_yaml(
    const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveNetworkOptions& options = {});

/// How a network is rebuilt.
struct NetworkOptions {
  /// The size of a free first dimension of the inputs: `shape: [null, 4]`
  /// or `[-1, 4]` in the file. 0 (the default) leaves none free: such an
  /// input is then an error that says to set this.
  int64_t batch_size = 0;
};

/// Rebuilds a network in the default context. Parameters are taken from
/// `params` by name: load their values first (load_parameters), or use
/// load_trained_network. A parameter the scope lacks is an error listing
/// every missing one (never zeros); so are a syntax error, an unknown
/// function or argument (with the nearest known names), a missing or
/// mistyped argument and a free batch dimension without
/// options.batch_size: std::invalid_argument naming the file and line.
Network load_network(const std::string& path, ParameterScope& params,
                     const NetworkOptions& options = {});
Network network_from_yaml(const std::string& yaml, ParameterScope& params,
                          const std::string& source = "<string>",
                          const NetworkOptions& options = {});

/// The network of `network_path` (YAML) with the values of
/// `parameters_path` (save_parameters' file, or a checkpoint's parameters),
/// ready to run: parameters are loaded into `params` first, then the graph
/// is built on them. For inference:
///   mg::ParameterScope params;
///   auto net = mg::load_trained_network("mlp.yaml", "mlp.h5", params, {10});
Network load_trained_network(const std::string& network_path,
                             const std::string& parameters_path,
                             ParameterScope& params,
                             const NetworkOptions& options = {});

}  // namespace mg
