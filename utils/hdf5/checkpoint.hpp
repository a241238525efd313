// Solver states and whole-run checkpoints in HDF5.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/solvers/loss_scaling.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// Writes the solver's states in NNabla's layout: a group per parameter
/// name holding the dataset "t" and one dataset per state, each with an
/// integer "index" attribute.
void save_states(const std::string& path, const Solver& solver);
/// Reads states saved by save_states into a solver that holds the same
/// parameters; names, state names and shapes are checked (Solver::set_states)
/// before anything changes.
void load_states(const std::string& path, Solver& solver);

/// Named byte strings a program stores beside its arrays (a data iterator's
/// position, its own counters); saved as uint8 datasets under "extras/".
using CheckpointExtras = std::map<std::string, std::string>;

/// What a checkpoint restores besides the arrays.
struct CheckpointInfo {
  int64_t iteration = 0;
  CheckpointExtras extras;  // empty when the file has none
};

/// One HDF5 file with the parameters, the solver's states, the loss scaler's
/// state (when given), the iteration, the RNG state and the extras, written
/// atomically.
void save_checkpoint(const std::string& path, const ParameterScope& params,
                     const Solver& solver,
                     const DynamicLossScalingUpdater* updater,
                     int64_t iteration, const CheckpointExtras& extras = {});
/// The same with an updater.
void save_checkpoint(const std::string& path, const ParameterScope& params,
                     const Solver& solver,
                     const DynamicLossScalingUpdater& updater,
                     int64_t iteration, const CheckpointExtras& extras = {});

/// Restores what save_checkpoint wrote; parameters must already exist in
/// `params` (build the network first) with the same names and shapes, and
/// the solver must hold them. Everything is checked before anything changes.
CheckpointInfo load_checkpoint(const std::string& path, ParameterScope& params,
                               Solver& solver,
                               DynamicLossScalingUpdater* updater = nullptr);

}  // namespace mg
