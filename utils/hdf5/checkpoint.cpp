#include <mixgraph/utils/hdf5/checkpoint.hpp>

#include <cstring>
#include <stdexcept>

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

std::map<std::string, SolverState> read_states(const h5::File& f, hid_t group,
                                               const Solver& solver) {
  std::map<std::string, SolverState> states;
  for (const auto& [pname, var] : solver.parameters()) {
    h5::Handle g = h5::open_group(f, group, pname);
    SolverState s;
    int64_t t = 0;
    const auto tinfo = h5::dataset_info(f, g.get(), "t");
    if (!tinfo.shape.empty() || tinfo.dtype == Dtype::f32 ||
        tinfo.dtype == Dtype::f64) {
      h5::fail(f.tag, f.path, pname + "/t", "must be an integer scalar");
    }
    h5::read_dataset(f, g.get(), "t", Dtype::i64, &t, 1);
    s.t = static_cast<uint32_t>(t);
    for (const auto& sname : solver.state_names()) {
      const std::string entry = pname + "/" + sname;
      const auto info = h5::dataset_info(f, g.get(), sname);
      if (info.shape != var->shape()) {
        h5::fail(f.tag, f.path, entry,
                 "has shape " + shape_str(info.shape) + ", but parameter '" +
                     pname + "' has shape " + shape_str(var->shape()));
      }
      auto a = make_ndarray(info.shape);
      h5::read_dataset(f, g.get(), sname, Dtype::f32, a->cast<float>(true),
                       a->size());
      s.pstate[sname] = a;
    }
    states[pname] = std::move(s);
  }
  return states;
}

}  // namespace

void save_states(const std::string& path, const Solver& solver) {
  h5::write_atomically(path, "save_states", [&](h5::File& f) {
    write_states(f, f.handle.get(), solver);
  });
}

void load_states(const std::string& path, Solver& solver) {
  h5::File f = h5::open_for_read(path, "load_states");
  solver.set_states(read_states(f, f.handle.get(), solver));
}

void save_checkpoint(const std::string& path, const ParameterScope& params,
                     const Solver& solver,
                     const DynamicLossScalingUpdater* updater,
                     int64_t iteration, const CheckpointExtras& extras) {
  for (const auto& [name, bytes] : extras) {
    if (name.empty() || name.find('/') != std::string::npos) {
      throw std::invalid_argument("[save_checkpoint] extra '" + name +
                                  "' for " + path +
                                  ": names must be non-empty without '/'");
    }
  }
  h5::write_atomically(path, "save_checkpoint", [&](h5::File& f) {
    hid_t root = f.handle.get();
    h5::Handle pg = h5::create_group(root, "parameters");
    h5::write_parameters(f, pg.get(), params.parameters(/*grad_only=*/false));
    h5::Handle sg = h5::create_group(root, "solver");
    write_states(f, sg.get(), solver);
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
      for (const auto& [name, bytes] : extras) {
        h5::write_dataset(f, eg.get(), name,
                          {static_cast<int64_t>(bytes.size())}, Dtype::u8,
                          bytes.data());
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
        h5::fail(f.tag, f.path, "extras/" + name,
                 "must be a 1-D uint8 dataset, got shape " +
                     shape_str(einfo.shape));
      }
      std::string bytes(einfo.shape[0], '\0');
      h5::read_dataset(f, eg.get(), name, Dtype::u8, bytes.data(),
                       einfo.shape[0]);
      info.extras[name] = std::move(bytes);
    }
  }
  h5::Handle sg = h5::open_group(f, root, "solver");
  auto states = read_states(f, sg.get(), solver);
  const double lr = h5::read_double_attr(f, sg.get(), "solver", "learning_rate");
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
  // Parameters must exist already: check the file covers exactly them.
  h5::Handle pg = h5::open_group(f, root, "parameters");
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    if (!h5::exists(pg.get(), name)) {
      h5::fail(f.tag, f.path, "parameters/" + name,
               "is missing: the checkpoint was written for another network");
    }
  }
  ParameterScope staged;  // the file's parameters, checked against `params`
  h5::read_parameters(f, pg.get(), staged, {});
  for (const auto& [name, v] : staged.parameters(/*grad_only=*/false)) {
    auto have = params.get(name);
    if (!have) {
      h5::fail(f.tag, f.path, "parameters/" + name,
               "is not a parameter of this network");
    }
    if (have->shape() != v->shape()) {
      h5::fail(f.tag, f.path, "parameters/" + name,
               "has shape " + shape_str(v->shape()) + ", but the network's is " +
                   shape_str(have->shape()));
    }
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
