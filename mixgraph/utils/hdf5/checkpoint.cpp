#include <mixgraph/utils/hdf5/checkpoint.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/random.hpp>
#include <mixgraph/utils/hdf5/parameters_io.hpp>

namespace mg {

namespace {

void write_states(h5::File& f, hid_t group, const Solver& solver) {
  const auto states = solver.states();
  const auto names = solver.state_names();
  int64_t index = 0;
  for (const auto& [pname, var] : solver.parameters()) {
    const SolverState& s = states.at(pname);
    h5::Handle parent = h5::ensure_parent_groups(group, pname + "/");
    const int64_t t = s.t;
    h5::write_dataset(f, parent.get(), "t", {}, Dtype::i64, &t);
    for (const auto& sname : names) {
      const NdArrayPtr& a = s.pstate.at(sname);
      h5::write_dataset(f, parent.get(), sname, a->shape(), Dtype::f32,
                        a->get<const float>());
      h5::Handle ds(H5Dopen2(parent.get(), sname.c_str(), H5P_DEFAULT),
                    H5Dclose);
      h5::write_int_attr(f, ds.get(), "index", index);
    }
    h5::Handle g(H5Gopen2(parent.get(), ".", H5P_DEFAULT), H5Gclose);
    h5::write_int_attr(f, g.get(), "index", index++);
  }
}

// The states of every parameter the solver holds; every problem (a
// parameter without states, states of another solver, a shape) is listed in
// one error naming the parameters and both solvers.
std::map<std::string, SolverState> read_states(const h5::File& f, hid_t group,
                                               const std::string& group_name,
                                               const Solver& solver) {
  const std::string written_by =
      h5::read_string_attr(f, group, group_name, "solver");
  const auto needed = solver.state_names();
  auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
    return out.empty() ? std::string("none") : out;
  };
  std::map<std::string, SolverState> states;
  std::string problems;
  for (const auto& [pname, var] : solver.parameters()) {
    if (!h5::exists(group, pname)) {
      problems += "\n  parameter '" + pname + "' has no state in the file";
      continue;
    }
    h5::Handle g = h5::open_group(f, group, pname);
    std::vector<std::string> have;
    for (const auto& n : h5::list_datasets(f, g.get())) {
      if (n != "t") have.push_back(n);
    }
    std::vector<std::string> sorted_needed = needed;
    std::sort(sorted_needed.begin(), sorted_needed.end());
    std::sort(have.begin(), have.end());
    if (have != sorted_needed) {
      problems += "\n  parameter '" + pname + "' has the states " + join(have) +
                  (written_by.empty() ? "" : " (of " + written_by + ")") +
                  ", but " + solver.name() + " needs " + join(needed);
      continue;
    }
    SolverState s;
    int64_t t = 0;
    const auto tinfo = h5::dataset_info(f, g.get(), "t");
    if (!tinfo.shape.empty() || tinfo.dtype == Dtype::f32 ||
        tinfo.dtype == Dtype::f64) {
      h5::fail(f.tag, f.path, pname + "/t", "must be an integer scalar");
    }
    h5::read_dataset(f, g.get(), "t", Dtype::i64, &t, 1);
    s.t = static_cast<uint32_t>(t);
    bool shapes_ok = true;
    for (const auto& sname : needed) {
      const auto info = h5::dataset_info(f, g.get(), sname);
      if (info.shape != var->shape()) {
        problems += "\n  state '" + pname + "/" + sname + "' has shape " +
                    shape_str(info.shape) + ", but parameter '" + pname +
                    "' has shape " + shape_str(var->shape());
        shapes_ok = false;
      }
    }
    if (!shapes_ok) continue;
    for (const auto& sname : needed) {
      auto a = make_ndarray(var->shape());
      h5::read_dataset(f, g.get(), sname, Dtype::f32, a->cast<float>(true),
                       a->size());
      s.pstate[sname] = a;
    }
    states[pname] = std::move(s);
  }
  if (!problems.empty()) {
    h5::fail(
        f.tag, f.path, group_name,
        "does not fit the solver " + solver.name() +
            (written_by.empty() ? "" : " (the file's is " + written_by + ")") +
            ":" + problems);
  }
  return states;
}

const char* type_name(const CheckpointExtras::Value& v) {
  return std::holds_alternative<int64_t>(v)  ? "an integer"
         : std::holds_alternative<double>(v) ? "a float"
                                             : "a string";
}

}  // namespace

const CheckpointExtras::Value& CheckpointExtras::at(const std::string& name,
                                                    const char* type) const {
  const std::string from = source.empty() ? "" : " of '" + source + "'";
  auto it = values_.find(name);
  if (it == values_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, v] : values_) names.push_back(n);
    throw std::invalid_argument(msg("[CheckpointExtras] the extras", from,
                                    " have no value '", name, "'",
                                    did_you_mean(names, name)));
  }
  if (std::string(type_name(it->second)) != type) {
    throw std::invalid_argument(msg("[CheckpointExtras] '", name, "'", from,
                                    " is ", type_name(it->second), ", not ",
                                    type));
  }
  return it->second;
}

int64_t CheckpointExtras::get_int(const std::string& name) const {
  return std::get<int64_t>(at(name, "an integer"));
}

double CheckpointExtras::get_float(const std::string& name) const {
  return std::get<double>(at(name, "a float"));
}

const std::string& CheckpointExtras::get_string(const std::string& name) const {
  return std::get<std::string>(at(name, "a string"));
}

void save_states(const std::string& path, const Solver& solver) {
  h5::write_atomically(path, "save_states", [&](h5::File& f) {
    write_states(f, f.handle.get(), solver);
    h5::write_string_attr(f, f.handle.get(), "solver", solver.name());
  });
}

void load_states(const std::string& path, Solver& solver) {
  h5::File f = h5::open_for_read(path, "load_states");
  solver.set_states(read_states(f, f.handle.get(), "/", solver));
}

void save_checkpoint(const std::string& path, const ParameterScope& params,
                     const Solver& solver,
                     const DynamicLossScalingUpdater* updater,
                     int64_t iteration, const CheckpointExtras& extras) {
  for (const auto& [name, value] : extras.values()) {
    if (name.empty() || name.find('/') != std::string::npos) {
      throw std::invalid_argument(msg("[save_checkpoint] extra '", name,
                                      "' for ", path,
                                      ": names must be non-empty without '/'"));
    }
  }
  h5::write_atomically(path, "save_checkpoint", [&](h5::File& f) {
    hid_t root = f.handle.get();
    h5::Handle pg = h5::create_group(root, "parameters");
    h5::write_parameters(f, pg.get(), params.parameters(/*grad_only=*/false));
    h5::Handle sg = h5::create_group(root, "solver");
    write_states(f, sg.get(), solver);
    h5::write_string_attr(f, sg.get(), "solver", solver.name());
    h5::write_double_attr(f, sg.get(), "learning_rate", solver.learning_rate());
    h5::write_dataset(f, root, "iteration", {}, Dtype::i64, &iteration);
    const std::string rng = random_state();
    h5::write_dataset(f, root, "rng_state", {static_cast<int64_t>(rng.size())},
                      Dtype::u8, rng.data());
    if (updater) {
      const LossScalerState s = updater->state();
      h5::Handle lg = h5::create_group(root, "loss_scaler");
      h5::write_double_attr(f, lg.get(), "scale", s.scale);
      h5::write_int_attr(f, lg.get(), "counter", s.counter);
      h5::write_int_attr(f, lg.get(), "applied_steps", s.applied_steps);
      h5::write_int_attr(f, lg.get(), "skipped_steps", s.skipped_steps);
    }
    if (!extras.empty()) {
      h5::Handle eg = h5::create_group(root, "extras");
      for (const auto& [name, value] : extras.values()) {
        if (auto i = std::get_if<int64_t>(&value)) {
          h5::write_int_attr(f, eg.get(), name, *i);
        } else if (auto d = std::get_if<double>(&value)) {
          h5::write_double_attr(f, eg.get(), name, *d);
        } else {
          const auto& bytes = std::get<std::string>(value);
          h5::write_dataset(f, eg.get(), name,
                            {static_cast<int64_t>(bytes.size())}, Dtype::u8,
                            bytes.data());
        }
      }
    }
  });
}

void save_checkpoint(const std::string& path, const ParameterScope& params,
                     const Solver& solver,
                     const DynamicLossScalingUpdater& updater,
                     int64_t iteration, const CheckpointExtras& extras) {
  save_checkpoint(path, params, solver, &updater, iteration, extras);
}

CheckpointInfo load_checkpoint(const std::string& path, ParameterScope& params,
                               Solver& solver,
                               DynamicLossScalingUpdater* updater) {
  h5::File f = h5::open_for_read(path, "load_checkpoint");
  hid_t root = f.handle.get();
  // Read and check everything first; apply only when all of it is good.
  CheckpointInfo info;
  info.extras.source = path;
  h5::read_dataset(f, root, "iteration", Dtype::i64, &info.iteration, 1);
  const auto rng_info = h5::dataset_info(f, root, "rng_state");
  std::string rng(rng_info.shape.empty() ? 0 : rng_info.shape[0], '\0');
  h5::read_dataset(f, root, "rng_state", Dtype::u8, rng.data(),
                   static_cast<int64_t>(rng.size()));
  if (h5::exists(root, "extras")) {
    h5::Handle eg = h5::open_group(f, root, "extras");
    for (const auto& name : h5::list_datasets(f, eg.get())) {
      const auto einfo = h5::dataset_info(f, eg.get(), name);
      if (einfo.shape.size() != 1 || einfo.dtype != Dtype::u8) {
        h5::fail(
            f.tag, f.path, "extras/" + name,
            "must be a 1-D uint8 dataset, got shape " + shape_str(einfo.shape));
      }
      std::string bytes(einfo.shape[0], '\0');
      h5::read_dataset(f, eg.get(), name, Dtype::u8, bytes.data(),
                       einfo.shape[0]);
      info.extras.set(name, std::move(bytes));
    }
    for (const auto& [name, cls] : h5::list_attrs(f, eg.get())) {
      if (cls == H5T_INTEGER) {
        info.extras.set(name, h5::read_int_attr(f, eg.get(), "extras", name));
      } else if (cls == H5T_FLOAT) {
        info.extras.set(name,
                        h5::read_double_attr(f, eg.get(), "extras", name));
      } else {
        h5::fail(f.tag, f.path, "extras",
                 "attribute '" + name + "' must be an integer or a float");
      }
    }
  }
  // The parameters first: every one the network and the file do not share,
  // or whose shape differs, listed together (a checkpoint of a smaller
  // network names every layer that grew).
  h5::Handle pg = h5::open_group(f, root, "parameters");
  std::string problems;
  std::map<std::string, Shape> in_file;
  for (const auto& name : h5::list_datasets(f, pg.get())) {
    in_file[name] = h5::dataset_info(f, pg.get(), name).shape;
  }
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      problems += "\n  '" + name + "' " + shape_str(var->shape()) +
                  " is not in the file";
    } else if (it->second != var->shape()) {
      problems += "\n  '" + name + "' has shape " + shape_str(it->second) +
                  " in the file, but " + shape_str(var->shape()) +
                  " in the network";
    }
  }
  for (const auto& [name, shape] : in_file) {
    if (!params.get(name)) {
      problems += "\n  '" + name + "' " + shape_str(shape) +
                  " is in the file but not in the network";
    }
  }
  if (!problems.empty()) {
    h5::fail(f.tag, f.path, "parameters",
             "was written for another network:" + problems);
  }
  ParameterScope staged;  // the file's parameters, checked against `params`
  h5::read_parameters(f, pg.get(), staged, {});
  h5::Handle sg = h5::open_group(f, root, "solver");
  auto states = read_states(f, sg.get(), "solver", solver);
  const double lr =
      h5::read_double_attr(f, sg.get(), "solver", "learning_rate");
  LossScalerState scaler;
  if (updater) {
    h5::Handle lg = h5::open_group(f, root, "loss_scaler");
    scaler.scale = static_cast<float>(
        h5::read_double_attr(f, lg.get(), "loss_scaler", "scale"));
    scaler.counter = static_cast<int>(
        h5::read_int_attr(f, lg.get(), "loss_scaler", "counter"));
    scaler.applied_steps =
        h5::read_int_attr(f, lg.get(), "loss_scaler", "applied_steps");
    scaler.skipped_steps =
        h5::read_int_attr(f, lg.get(), "loss_scaler", "skipped_steps");
  }
  if (updater) {
    LossScalerState check = scaler;
    DynamicLossScalingUpdater* u = updater;
    try {
      const LossScalerState old = u->state();
      u->set_state(check);  // validates
      u->set_state(old);
    } catch (const std::exception& e) {
      h5::fail(f.tag, f.path, "loss_scaler", e.what());
    }
  }
  solver.set_states(states);  // validates all, then applies
  solver.set_learning_rate(static_cast<float>(lr));
  for (const auto& [name, v] : staged.parameters(/*grad_only=*/false)) {
    SyncedArray& src = v->data()->array();
    const Dtype dt = src.dtype();
    std::memcpy(params.get(name)->data()->array().cast(dt, "cpu", true),
                src.get(dt), src.size() * dtype_size(dt));
  }
  if (updater) updater->set_state(scaler);
  set_random_state(rng);
  return info;
}

}  // namespace mg
