// NNabla's model files (.nnp), both ways: a zip of the networks in protobuf
// text (network.nntxt) or binary (*.protobuf), the parameters in NNabla's
// HDF5 layout (parameter.h5) or as protobuf `parameter` messages, and the
// executors that say what to feed and what to read. The schema is NNabla
// 1.39's (utils/nnp/nnabla.proto: its field names and numbers); functions
// and arguments are NNabla's, as the YAML networks' are.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/utils/yaml/network.hpp>

namespace mg {

/// An executor of a .nnp: the network it runs, the variables it feeds
/// (data) and those it reads (outputs).
struct NnpExecutor {
  std::string name;
  std::string network_name;
  std::vector<std::string> data;
  std::vector<std::string> outputs;
};

/// A loaded .nnp.
struct Nnp {
  /// Each network, built: its inputs are the variables no function writes
  /// (named as in the file), its outputs those no function reads, then
  /// those an executor reads.
  std::vector<Network> networks;
  std::vector<NnpExecutor> executors;
  /// The sections this library keeps but does not run (global_config,
  /// training_config, dataset, optimizer, monitor), as protobuf text:
  /// save_nnp writes them back (SaveNnpOptions::other_sections).
  std::string other_sections;

  const Network& network(const std::string& name) const;
  /// Executor `name`'s network, its inputs the executor's data and its
  /// outputs the executor's outputs, in the executor's order.
  Network executor(const std::string& name) const;
};

/// How a .nnp is loaded.
struct NnpOptions {
  // A constructor, so that {batch_size} leaves `networks` out quietly.
  NnpOptions(int64_t batch_size = 0, std::vector<std::string> networks = {})
      : batch_size(batch_size), networks(std::move(networks)) {}
  /// The size of the dimensions written -1 (the batch, NNabla's
  /// variable_batch_size) in variables and in a function's `shape`
  /// argument (Reshape, Broadcast). 0: the network's own batch_size.
  int64_t batch_size = 0;
  /// The networks to build (none: all).
  std::vector<std::string> networks;
};

/// Reads `path` and builds its networks in the default context. Parameters
/// from the file are loaded into `params` first (a name the scope has must
/// match in shape and dtype). Refused with std::invalid_argument naming the
/// file (and the network, function, variable or field): a missing file, one
/// that is not a zip or holds no network, protobuf that does not parse, an
/// unknown function or argument, a function input nothing defines, a
/// variable whose declared shape is not the one its function gives, a
/// parameter without a value, and what this library does not run: loop
/// control (repeat_info, repeat_id, Repeat*/Recurrent*/Delay functions).
Nnp load_nnp(const std::string& path, ParameterScope& params,
             const NnpOptions& options = {});

/// How save_nnp writes.
struct SaveNnpOptions {
  /// One binary network.protobuf holding the networks, executors and
  /// parameters, instead of network.nntxt and parameter.h5.
  bool binary = false;
  /// Write the batch dimension (the first input's first dimension) as -1 in
  /// the variables computed from the inputs and in `shape` arguments that
  /// start with it, as NNabla's save does: the batch size is then chosen at
  /// load time.
  bool free_batch = true;
  /// The executor save_nnp(path, name, ...) writes for the network.
  std::string executor_name = "runtime";
  /// Nnp::other_sections, written back as they were read.
  std::string other_sections;
};

/// Writes the graph that computes `outputs` (named) as network `name` of a
/// .nnp, with one executor feeding its inputs and reading `outputs`, and
/// every parameter of `params` (leaves found there are the network's
/// parameters; other leaves are inputs, named as save_network names them).
/// A function NNabla does not have, or an argument it does not take, is
/// std::invalid_argument naming both; a failed write std::runtime_error.
void save_nnp(const std::string& path, const std::string& name,
              const std::vector<std::pair<std::string, VariablePtr>>& outputs,
              const ParameterScope& params, const SaveNnpOptions& options = {});
/// Writes a loaded .nnp back: its networks, executors and other sections
/// (options.other_sections is ignored), with the parameters of `params`.
void save_nnp(const std::string& path, const Nnp& nnp,
              const ParameterScope& params, const SaveNnpOptions& options = {});

}  // namespace mg
