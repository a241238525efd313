// Parameters in NNabla's HDF5 layout.
#pragma once

#include <string>

#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct LoadParametersOptions {
  /// Convert a dataset whose dtype differs from the parameter's instead of
  /// reporting it.
  bool convert_dtype = false;
  /// Read a file written before mixgraph named parameters as NNabla does
  /// (before 2026-11: "conv1/W" for what is now "conv1/conv/W"). Build the
  /// network first: each parameter of the scope is also looked for under
  /// its old name (legacy_parameter_name), and found there it is filled
  /// from that entry (LSTM cells' W and b may differ in shape, not in size).
  bool legacy_names = false;
};

/// The name a parameter had before the NNabla layout: the layer's scope
/// left out ("conv1/conv/W" -> "conv1/W", "cell/lstm/affine/W" -> "cell/W",
/// "mha/multi_head_attention/q_weight" -> "mha/q_proj/W"); other names are
/// returned unchanged.
std::string legacy_parameter_name(const std::string& name);

/// Writes every parameter of `scope` to `path` (atomically): the name
/// "a/b/W" is the dataset "W" in groups "a/b", in the parameter's dtype (fp16
/// as IEEE half, which h5py reads as float16), with integer attributes
/// "need_grad" and "index" (the insertion order). The parametric functions
/// name their parameters as NNabla's do (PF::convolution(x, 32, {5, 5},
/// params["conv1"]) makes "conv1/conv/W" and "conv1/conv/b"), so NNabla's
/// nnabla.load_parameters reads these files and load_parameters reads
/// NNabla's (need_grad as a bool or an integer, entries in index order).
void save_parameters(const std::string& path, const ParameterScope& scope);

/// Reads parameters from `path` into `scope`, in the file's index order;
/// `path` is save_parameters' file or a checkpoint (save_checkpoint), whose
/// parameters are read without its solver's states (for inference). A
/// name the scope lacks is created (fp32 data in the file's dtype,
/// persistent, need_grad from the file); one it has must match in shape and
/// dtype (or convert_dtype). Every difference is checked before anything is
/// changed and reported together, naming the file and each entry.
void load_parameters(const std::string& path, ParameterScope& scope,
                     const LoadParametersOptions& options = {});

}  // namespace mg
