// Solver states and whole-run checkpoints in HDF5.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>

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

/// Named values a program stores beside its arrays: integers and floats (its
/// counters, a hand-written loss scaler's state) and strings (a data
/// iterator's position). Integers and floats are attributes of the group
/// "extras", strings uint8 datasets in it, so h5py reads them all. A value
/// comes back with the type it was set with, floats bit for bit.
class CheckpointExtras {
 public:
  using Value = std::variant<int64_t, double, std::string>;

  void set(const std::string& name, int64_t value) { values_[name] = value; }
  void set(const std::string& name, int value) {
    values_[name] = static_cast<int64_t>(value);
  }
  void set(const std::string& name, double value) { values_[name] = value; }
  void set(const std::string& name, float value) {
    values_[name] = static_cast<double>(value);
  }
  void set(const std::string& name, std::string value) {
    values_[name] = std::move(value);
  }
  void set(const std::string& name, const char* value) {
    values_[name] = std::string(value);
  }

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  /// The value set under `name`; a missing name (with the nearest names) or
  /// another type is std::invalid_argument naming the file it came from.
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;

  const std::map<std::string, Value>& values() const { return values_; }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  /// The file the values were read from ("" when set in memory), for errors.
  std::string source;

 private:
  const Value& at(const std::string& name, const char* type) const;
  std::map<std::string, Value> values_;
};

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
