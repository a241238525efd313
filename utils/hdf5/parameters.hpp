// Parameters in NNabla's HDF5 layout.
#pragma once

#include <string>

#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct LoadParametersOptions {
  /// Convert a dataset whose dtype differs from the parameter's instead of
  /// reporting it.
  bool convert_dtype = false;
};

/// Writes every parameter of `scope` to `path` (atomically): the name
/// "a/b/W" is the dataset "W" in groups "a/b", in the parameter's dtype (fp16
/// as IEEE half, which h5py reads as float16), with integer attributes
/// "need_grad" and "index" (the insertion order).
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
