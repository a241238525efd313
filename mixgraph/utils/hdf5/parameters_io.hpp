// Internal: parameters written under / read from a group of an open file,
// shared by save_parameters and checkpoints.
#pragma once

#include <mixgraph/utils/hdf5/hdf5_file.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>

namespace mg::h5 {

void write_parameters(File& f, hid_t group, const ParameterList& params);
void read_parameters(const File& f, hid_t group, ParameterScope& scope,
                     const LoadParametersOptions& options);

}  // namespace mg::h5
