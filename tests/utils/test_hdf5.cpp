// Parameters, solver states and checkpoints in HDF5: round trips, NNabla's
// layout, h5py, corrupt files, killed writes, and bit-exact resume.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/lstm.hpp>
#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/loss_scaling.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>
#include <mixgraph/utils/hdf5/hdf5_file.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "mixgraph_" + std::to_string(::getpid()) + "_" +
         name;
}

// A bad or damaged file is std::invalid_argument (docs/reliability.md: bad
// input; std::runtime_error is for failed writes).
void expect_file_error(const std::function<void()>& f,
                       const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "expected an error mentioning " << parts.front();
  } catch (const std::invalid_argument& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }
}

// A scope with one parameter of every dtype the files hold.
ParameterScope all_dtypes() {
  ParameterScope p;
  const Dtype types[] = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64,
                         Dtype::i32, Dtype::i64, Dtype::u8};
  int k = 0;
  for (Dtype t : types) {
    auto v = p["net"][dtype_name(t)].get_or_create("W", {2, 3}, nullptr, k % 2);
    std::vector<double> vals = {1.5, -2.25, 3, 65504, 0.125, 7};
    if (t == Dtype::u8) vals = {1, 2, 3, 250, 0, 7};
    convert(vals.data(), Dtype::f64, v->data()->array().cast(t, "cpu", true), t,
            6);
    ++k;
  }
  return p;
}

TEST(Parameters, EveryDtypeRoundTripsWithNamesOrderAndNeedGrad) {
  const std::string path = temp_path("params.h5");
  ParameterScope src = all_dtypes();
  save_parameters(path, src);
  ParameterScope dst;
  load_parameters(path, dst);
  auto a = src.parameters(/*grad_only=*/false),
       b = dst.parameters(/*grad_only=*/false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second->need_grad(), b[i].second->need_grad());
    EXPECT_EQ(b[i].second->data()->array().dtype(),
              a[i].second->data()->array().dtype())
        << a[i].first;
    EXPECT_EQ(to_doubles(a[i].second), to_doubles(b[i].second)) << a[i].first;
    EXPECT_TRUE(b[i].second->persistent());
  }
  std::remove(path.c_str());
}

TEST(Parameters, LoadingChecksShapesAndDtypesAndChangesNothingOnError) {
  const std::string path = temp_path("check.h5");
  ParameterScope src;
  src["fc"].get_or_create("W", {2, 3}, constant_initializer(1));
  src["fc"].get_or_create("b", {3}, constant_initializer(2));
  save_parameters(path, src);

  ParameterScope wrong;
  auto W = wrong["fc"].get_or_create("W", {2, 3}, constant_initializer(5));
  wrong["fc"].get_or_create("b", {4}, constant_initializer(5));
  expect_file_error(
      [&] { load_parameters(path, wrong); },
      {"[load_parameters]", path,
       "'fc/b' has shape (3,) in the file, but (4,) in the scope"});
  EXPECT_EQ(W->data()->get<const float>()[0], 5.0f) << "nothing was loaded";

  ParameterScope half;
  auto H = half["fc"].get_or_create("W", {2, 3}, nullptr);
  H->data()->array().cast(Dtype::f16);
  expect_file_error([&] { load_parameters(path, half); },
                    {"'fc/W' is float in the file, but half in the scope"});
  load_parameters(path, half, {/*convert_dtype=*/true});
  EXPECT_EQ(H->data()->array().dtype(), Dtype::f16);
  EXPECT_EQ(H->data()->get<const float>()[0], 1.0f);
  std::remove(path.c_str());
}

TEST(Files, CorruptInputGivesErrorsThatNameFileAndEntry) {
  const std::string text = temp_path("text.h5");
  std::ofstream(text) << "not an hdf5 file";
  ParameterScope p;
  expect_file_error([&] { load_parameters(text, p); },
                    {text, "is not an HDF5 file"});
  expect_file_error([&] { load_parameters(temp_path("missing.h5"), p); },
                    {"cannot be read"});

  const std::string good = temp_path("good.h5");
  ParameterScope src;
  src.get_or_create("W", {64, 64}, constant_initializer(1));
  save_parameters(good, src);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = temp_path("truncated.h5");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_file_error([&] { load_parameters(cut, p); }, {cut});
  EXPECT_TRUE(p.parameters(/*grad_only=*/false).empty());

  // An 'index' attribute that is a float, and a missing 'need_grad'.
  const std::string odd = temp_path("odd.h5");
  h5::write_atomically(odd, "test", [](h5::File& f) {
    float v[2] = {1, 2};
    h5::write_dataset(f, f.handle.get(), "W", {2}, Dtype::f32, v);
    h5::Handle ds(H5Dopen2(f.handle.get(), "W", H5P_DEFAULT), H5Dclose);
    h5::write_double_attr(f, ds.get(), "index", 0.5);
    h5::write_int_attr(f, ds.get(), "need_grad", 1);
  });
  expect_file_error([&] { load_parameters(odd, p); },
                    {odd, "entry 'W'", "attribute 'index' must be an integer"});
  const std::string bare = temp_path("bare.h5");
  h5::write_atomically(bare, "test", [](h5::File& f) {
    float v[2] = {1, 2};
    h5::write_dataset(f, f.handle.get(), "W", {2}, Dtype::f32, v);
  });
  expect_file_error([&] { load_parameters(bare, p); },
                    {"entry 'W'", "lacks the attribute 'index'"});
  for (auto& f : {text, good, cut, odd, bare}) std::remove(f.c_str());
}

TEST(SolverStates, RoundTripInNNablaLayoutAndMissingDatasetsAreNamed) {
  const std::string path = temp_path("states.h5");
  auto w = variable_from({3}, {1, 2, 3}, true);
  auto solver = solvers::Adam(0.01f);
  solver->set_parameters({{"fc/W", w}});
  w->grad()->fill(0.5);
  solver->update();
  save_states(path, *solver);
  auto other = solvers::Adam(0.01f);
  auto w2 = variable_from({3}, {1, 2, 3}, true);
  other->set_parameters({{"fc/W", w2}});
  load_states(path, *other);
  EXPECT_EQ(other->states().at("fc/W").t, 1u);
  const float* m =
      other->states().at("fc/W").pstate.at("mean")->get<const float>();
  EXPECT_FLOAT_EQ(m[0], 0.05f);

  auto momentum = solvers::Momentum();
  momentum->set_parameters({{"fc/W", w2}});
  expect_file_error([&] { load_states(path, *momentum); },
                    {"[load_states]",
                     "does not fit the solver Momentum (the "
                     "file's is Adam)",
                     "parameter 'fc/W' has the states "
                     "'mean', 'var' (of Adam), but Momentum needs 'm'"});
  auto wrong_shape = solvers::Adam();
  wrong_shape->set_parameters({{"fc/W", variable_from({2}, {1, 2}, true)}});
  expect_file_error([&] { load_states(path, *wrong_shape); },
                    {"state 'fc/W/mean' has shape (3,), but parameter 'fc/W' "
                     "has shape (2,)"});
  std::remove(path.c_str());
}

TEST(Interop, H5pyReadsNamesDtypesAttributesAndValues) {
  if (std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0) {
    GTEST_SKIP() << "Debian's python3-h5py is not installed "
                    "(scripts/run_tests.sh installs it)";
  }
  const std::string path = temp_path("interop.h5");
  ParameterScope p = all_dtypes();
  save_parameters(path, p);
  const std::string script = temp_path("check.py");
  std::ofstream(script) << R"(import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r')
names = []
f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
names.sort(key=lambda n: f[n].attrs['index'])
assert names[0] == 'net/float/W', names
assert f['net/half/W'].dtype == np.float16, f['net/half/W'].dtype
assert f['net/float/W'].dtype == np.float32
assert f['net/double/W'].dtype == np.float64
assert f['net/int/W'].dtype == np.int32
assert f['net/long/W'].dtype == np.int64
assert f['net/uint8/W'].dtype == np.uint8
assert f['net/half/W'].shape == (2, 3)
assert list(f['net/half/W'][0]) == [1.5, -2.25, 3.0], f['net/half/W'][...]
assert f['net/half/W'][1, 0] == 65504
assert int(f['net/half/W'].attrs['need_grad']) == 1
assert int(f['net/float/W'].attrs['need_grad']) == 0
assert [int(f[n].attrs['index']) for n in names] == list(range(len(names)))
assert all(f[n].fletcher32 for n in names), 'every array carries a checksum'
print('h5py ok', len(names))
)";
  const std::string cmd = "/usr/bin/python3 " + script + " " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::remove(path.c_str());
  std::remove(script.c_str());
}

// A parameter file as NNabla writes it (nnabla.save_parameters through
// h5py): need_grad a numpy bool (an HDF5 enum), index an int64, datasets
// listed by name but indexed in creation order. Written here with h5py the
// same way; tests/utils/test_nnabla_interop.cpp reads NNabla's own.
TEST(Interop, ReadsParameterFilesAsNNablaWritesThem) {
  if (std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null") != 0) {
    GTEST_SKIP() << "Debian's python3-h5py is not installed "
                    "(scripts/run_tests.sh installs it)";
  }
  const std::string path = temp_path("nnabla_style.h5");
  const std::string script = temp_path("write_nnabla_style.py");
  std::ofstream(script) << R"(import sys, h5py, numpy as np
params = [('conv1/conv/W', np.arange(6, dtype=np.float32).reshape(2, 3), True),
          ('bn1/bn/mean', np.full((1, 2, 1, 1), 0.5, np.float32), False),
          ('bn1/bn/beta', np.zeros((1, 2, 1, 1), np.float32), True)]
with h5py.File(sys.argv[1], 'w') as f:
    for i, (k, v, g) in enumerate(params):
        f[k] = v
        f[k].attrs['need_grad'] = np.bool_(g)
        f[k].attrs['index'] = np.int64(i)
)";
  const std::string cmd = "/usr/bin/python3 " + script + " " + path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ParameterScope scope;
  load_parameters(path, scope);
  const auto params = scope.parameters(/*grad_only=*/false);
  ASSERT_EQ(params.size(), 3u);
  // The file's index order, not the listing's alphabetical one.
  EXPECT_EQ(params[0].first, "conv1/conv/W");
  EXPECT_EQ(params[1].first, "bn1/bn/mean");
  EXPECT_EQ(params[2].first, "bn1/bn/beta");
  EXPECT_TRUE(params[0].second->need_grad());
  EXPECT_FALSE(params[1].second->need_grad());
  EXPECT_TRUE(params[2].second->need_grad());
  EXPECT_EQ(to_doubles(params[0].second), (Doubles{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(to_doubles(params[1].second), (Doubles{0.5, 0.5}));
  std::remove(path.c_str());
  std::remove(script.c_str());
}

TEST(LegacyNames, TheLayerScopeLeftOut) {
  EXPECT_EQ(legacy_parameter_name("conv1/conv/W"), "conv1/W");
  EXPECT_EQ(legacy_parameter_name("block/fc/affine/b"), "block/fc/b");
  EXPECT_EQ(legacy_parameter_name("bn1/bn/mean"), "bn1/mean");
  EXPECT_EQ(legacy_parameter_name("cell/lstm/affine/W"), "cell/W");
  EXPECT_EQ(legacy_parameter_name("seq/lstm/weight_l0"), "seq/weight_l0");
  EXPECT_EQ(legacy_parameter_name("mha/multi_head_attention/q_weight"),
            "mha/q_proj/W");
  EXPECT_EQ(legacy_parameter_name("mha/multi_head_attention/out_bias"),
            "mha/out_proj/b");
  EXPECT_EQ(legacy_parameter_name("fc/W"), "fc/W");  // not a PF name
  EXPECT_EQ(legacy_parameter_name("W"), "W");
}

// A file of the names before the NNabla layout loads into a network built
// now with legacy_names; an LSTM cell's W and b change shape, not size.
TEST(LegacyNames, OldFilesLoadIntoTodaysNetworks) {
  const std::string path = temp_path("legacy.h5");
  {
    ParameterScope old;
    old["conv1"].get_or_create("W", {2, 1, 3, 3}, constant_initializer(0.5f));
    old["conv1"].get_or_create("b", {2}, constant_initializer(-1.0f));
    old["cell"].get_or_create("W", {5, 8}, constant_initializer(0.25f));
    old["cell"].get_or_create("b", {8}, constant_initializer(2.0f));
    save_parameters(path, old);
  }
  ParameterScope params;
  PF::convolution(make_variable({1, 1, 4, 4}), 2, {3, 3}, params["conv1"]);
  PF::lstm_cell(make_variable({1, 3}), make_variable({1, 2}),
                make_variable({1, 2}), 2, params["cell"]);
  LoadParametersOptions o;
  o.legacy_names = true;
  load_parameters(path, params, o);
  EXPECT_EQ(params.size(), 4u) << "filled, nothing created";
  EXPECT_EQ(to_doubles(params.get("conv1/conv/W"))[8], 0.5);
  EXPECT_EQ(to_doubles(params.get("conv1/conv/b"))[1], -1.0);
  EXPECT_EQ(params.get("cell/lstm/affine/W")->shape(), (Shape{5, 4, 2}));
  EXPECT_EQ(to_doubles(params.get("cell/lstm/affine/W"))[39], 0.25);
  EXPECT_EQ(to_doubles(params.get("cell/lstm/affine/b"))[7], 2.0);
  std::remove(path.c_str());
}

// ---- checkpoints ----

// A small regression network trained with Momentum (state that must resume)
// and, in half, the dynamic loss scaler.
struct TrainingRun {
  explicit TrainingRun(const std::string& type_config)
      : ctx(context("cpu", type_config)) {
    ContextGuard g(ctx);
    seed(11);
    x = make_variable({8, 4});
    t = make_variable({8, 2});
    auto h = F::tanh(PF::affine(x, 6, params["fc1"]));
    loss = F::mean(F::squared_error(PF::affine(h, 2, params["fc2"]), t));
    solver = solvers::Momentum(0.05f, 0.9f);
    solver->set_parameters(params.parameters());
    DynamicLossScalingOptions o;
    o.scale = 1024;
    o.interval = 3;
    updater = std::make_unique<DynamicLossScalingUpdater>(
        solver, loss, [this] { feed(); }, o);
  }
  // Batches come from the global RNG, so resuming must restore it too.
  void feed() {
    std::normal_distribution<float> d;
    float* px = x->data()->cast<float>(true);
    float* pt = t->data()->cast<float>(true);
    for (int i = 0; i < 32; ++i) px[i] = d(random_engine());
    for (int i = 0; i < 16; ++i) pt[i] = d(random_engine());
  }
  void train(int steps) {
    ContextGuard g(ctx);
    for (int i = 0; i < steps; ++i, ++iteration) updater->update();
  }
  std::vector<Doubles> weights() {
    std::vector<Doubles> w;
    for (auto& [n, v] : params.parameters(/*grad_only=*/false)) {
      w.push_back(to_doubles(v));
    }
    return w;
  }
  Context ctx;
  ParameterScope params;
  VariablePtr x, t, loss;
  std::shared_ptr<MomentumSolver> solver;
  std::unique_ptr<DynamicLossScalingUpdater> updater;
  int64_t iteration = 0;
};

// Runs this test binary again as a fresh process for one resume stage.
void run_stage(const std::string& stage, const std::string& type_config,
               const std::string& path) {
  const std::string cmd = "MIXGRAPH_RESUME_STAGE=" + stage +
                          " MIXGRAPH_RESUME_TYPE=" + type_config +
                          " MIXGRAPH_RESUME_PATH=" + path + " /proc/" +
                          std::to_string(::getpid()) +
                          "/exe --gtest_filter=ResumeWorker.Stage >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(ResumeWorker, Stage) {
  const char* stage = std::getenv("MIXGRAPH_RESUME_STAGE");
  if (!stage) GTEST_SKIP() << "runs only as a child of Checkpoint tests";
  const std::string path = std::getenv("MIXGRAPH_RESUME_PATH");
  TrainingRun run(std::getenv("MIXGRAPH_RESUME_TYPE"));
  if (std::string(stage) == "first") {
    run.train(6);
    save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  } else {
    auto info =
        load_checkpoint(path, run.params, *run.solver, run.updater.get());
    run.iteration = info.iteration;
    run.train(6);
    save_checkpoint(path + ".final", run.params, *run.solver, *run.updater,
                    run.iteration);
  }
}

class Checkpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(Checkpoint, ResumingInAFreshProcessContinuesBitForBit) {
  const std::string path = temp_path("resume_" + GetParam() + ".h5");
  TrainingRun straight(GetParam());
  straight.train(12);
  run_stage("first", GetParam(), path);
  run_stage("second", GetParam(), path);
  TrainingRun resumed(GetParam());
  auto info = load_checkpoint(path + ".final", resumed.params, *resumed.solver,
                              resumed.updater.get());
  EXPECT_EQ(info.iteration, 12);
  EXPECT_EQ(resumed.weights(), straight.weights()) << "weights differ";
  EXPECT_EQ(resumed.updater->scale(), straight.updater->scale());
  EXPECT_EQ(resumed.updater->applied_steps(),
            straight.updater->applied_steps());
  EXPECT_EQ(resumed.solver->states().at("fc1/affine/W").t,
            straight.solver->states().at("fc1/affine/W").t);
  std::remove(path.c_str());
  std::remove((path + ".final").c_str());
}

INSTANTIATE_TEST_SUITE_P(TypeConfigs, Checkpoint,
                         ::testing::Values("float", "half", "bfloat16"));

TEST(Checkpoint, LoadingIntoAnotherNetworkChangesNothing) {
  const std::string path = temp_path("other.h5");
  TrainingRun run("float");
  run.train(2);
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  ParameterScope params;
  auto W =
      params["fc1/affine"].get_or_create("W", {4, 7}, constant_initializer(3));
  auto solver = solvers::Momentum();
  solver->set_parameters(params.parameters());
  expect_file_error([&] { load_checkpoint(path, params, *solver); },
                    {"[load_checkpoint]", path,
                     "'fc1/affine/W' has shape (4, 6) in the file, but "
                     "(4, 7) in the network",
                     "'fc2/affine/W' (6, 2) is in the file but not in the "
                     "network"});
  EXPECT_EQ(W->data()->get<const float>()[0], 3.0f);
  EXPECT_EQ(solver->states().at("fc1/affine/W").t, 0u);
  std::remove(path.c_str());
}

TEST(Checkpoint, ExtrasKeepTheirTypesAndValuesBitForBit) {
  const std::string path = temp_path("extras.h5");
  TrainingRun run("float");
  CheckpointExtras extras;
  extras.set("steps", int64_t{1} << 40);
  extras.set("negative", -3);
  extras.set("third", 1.0 / 3.0);
  extras.set("scale", 0.1f);
  extras.set("nan", std::numeric_limits<double>::quiet_NaN());
  extras.set("state", std::string("a\0b\nc", 5));
  extras.set("empty", "");
  save_checkpoint(path, run.params, *run.solver, *run.updater, 3, extras);
  TrainingRun fresh("float");
  const CheckpointInfo info =
      load_checkpoint(path, fresh.params, *fresh.solver, fresh.updater.get());
  const CheckpointExtras& e = info.extras;
  EXPECT_EQ(e.size(), 7u);
  EXPECT_EQ(e.get_int("steps"), int64_t{1} << 40);
  EXPECT_EQ(e.get_int("negative"), -3);
  EXPECT_EQ(e.get_float("third"), 1.0 / 3.0);
  EXPECT_EQ(static_cast<float>(e.get_float("scale")), 0.1f);
  EXPECT_TRUE(std::isnan(e.get_float("nan")));
  EXPECT_EQ(e.get_string("state"), std::string("a\0b\nc", 5));
  EXPECT_EQ(e.get_string("empty"), "");
  EXPECT_EQ(e.source, path);
  try {
    e.get_int("step");
    ADD_FAILURE() << "a missing extra must throw";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what())
                  .find("[CheckpointExtras] the extras of '" + path +
                        "' have no value 'step'; did "
                        "you mean 'steps'?"),
              std::string::npos)
        << err.what();
  }
  try {
    e.get_float("steps");
    ADD_FAILURE() << "a type mismatch must throw";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what())
                  .find("'steps' of '" + path + "' is an integer, not a float"),
              std::string::npos)
        << err.what();
  }
  std::remove(path.c_str());
}

// Inference needs the weights only: a checkpoint's parameters load without
// its solver, into a new scope or over a network's parameters.
TEST(Checkpoint, ParametersLoadWithoutASolver) {
  const std::string path = temp_path("weights_only.h5");
  TrainingRun run("float");
  run.train(3);
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  ParameterScope fresh;
  load_parameters(path, fresh);
  ASSERT_EQ(fresh.parameters().size(), run.params.parameters().size());
  for (const auto& [name, v] : run.params.parameters()) {
    ASSERT_TRUE(fresh.get(name)) << name;
    EXPECT_EQ(to_doubles(fresh.get(name)), to_doubles(v)) << name;
  }
  std::remove(path.c_str());
}

TEST(Checkpoint, AnotherSolverIsNamedWithTheParameter) {
  const std::string path = temp_path("other_solver.h5");
  TrainingRun run("float");
  run.train(2);
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  TrainingRun other("float");
  auto adam = solvers::Adam();
  adam->set_parameters(other.params.parameters());
  expect_file_error(
      [&] { load_checkpoint(path, other.params, *adam); },
      {"[load_checkpoint]", path, "entry 'solver'",
       "does not fit the solver Adam (the file's is Momentum)",
       "parameter 'fc1/affine/W' has the states 'm' (of Momentum), but Adam "
       "needs 'mean', 'var'",
       "parameter 'fc2/affine/b' has the states 'm'"});
  EXPECT_EQ(adam->states().at("fc1/affine/W").t, 0u) << "nothing changed";
  std::remove(path.c_str());
}

// A checkpoint of a network whose first layer then grew from 6 to 8 units:
// every parameter that differs is listed, not only the first.
TEST(Checkpoint, ALargerLayerListsEveryMismatch) {
  const std::string path = temp_path("grown.h5");
  TrainingRun run("float");
  save_checkpoint(path, run.params, *run.solver, *run.updater, 0);
  ParameterScope grown;
  auto x = make_variable({8, 4});
  auto h = F::tanh(PF::affine(x, 8, grown["fc1"]));
  PF::affine(h, 2, grown["fc2"]);
  grown["extra"].get_or_create("W", {3}, constant_initializer(7));
  auto solver = solvers::Momentum();
  solver->set_parameters(grown.parameters());
  const float before = grown.get("fc2/affine/b")->data()->get<const float>()[0];
  expect_file_error(
      [&] { load_checkpoint(path, grown, *solver); },
      {"entry 'parameters': was written for another network:",
       "'fc1/affine/W' has shape (4, 6) in the file, but (4, 8) in the "
       "network",
       "'fc1/affine/b' has shape (6,) in the file, but (8,) in the network",
       "'fc2/affine/W' has shape (6, 2) in the file, but (8, 2) in the "
       "network",
       "'extra/W' (3,) is not in the file"});
  EXPECT_EQ(grown.get("fc2/affine/b")->data()->get<const float>()[0], before);
  std::remove(path.c_str());
}

// What the killed writer's save number k holds: every weight k + i / 8
// (i its position), the iteration k and the extra "save" k, so that a
// loaded file tells which save it is and whether it is whole.
void set_save(TrainingRun& run, int64_t k) {
  int64_t i = 0;
  for (auto& [name, v] : run.params.parameters()) {
    float* w = v->data()->cast<float>(true);
    for (int64_t j = 0; j < v->size(); ++j) w[j] = k + (i++ % 8) / 8.0f;
  }
}

bool is_save(TrainingRun& run, int64_t k) {
  int64_t i = 0;
  for (auto& [name, v] : run.params.parameters()) {
    const float* w = v->data()->get<const float>();
    for (int64_t j = 0; j < v->size(); ++j) {
      if (w[j] != k + (i++ % 8) / 8.0f) return false;
    }
  }
  return true;
}

// Where the writer is, in memory it shares with the test: the saves begun
// and finished. A kill that lands with begun > finished landed inside
// save_checkpoint (between its first and last instruction).
struct WriterProgress {
  std::atomic<int64_t> begun{0}, finished{0};
};

// ---- checksums ----

// Every array dataset of a file, with where its (single) chunk lies.
struct StoredArray {
  std::string name;
  haddr_t address;
  hsize_t bytes;
};

herr_t visit_dataset(hid_t root, const char* name, const H5O_info_t* info,
                     void* out) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  h5::Handle ds(H5Dopen2(root, name, H5P_DEFAULT), H5Dclose);
  h5::Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return 0;
  hsize_t offset[8] = {};
  unsigned mask = 0;
  haddr_t address = 0;
  hsize_t bytes = 0;
  h5::Handle space(H5Dget_space(ds.get()), H5Sclose);
  if (H5Dget_chunk_info(ds.get(), space.get(), 0, offset, &mask, &address,
                        &bytes) >= 0) {
    static_cast<std::vector<StoredArray>*>(out)->push_back(
        {name, address, bytes});
  }
  return 0;
}

std::vector<StoredArray> stored_arrays(const std::string& path) {
  h5::Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  std::vector<StoredArray> out;
  H5Ovisit(f.get(), H5_INDEX_NAME, H5_ITER_INC, visit_dataset, &out);
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// One flipped bit in any array of a checkpoint (parameters, solver states,
// the RNG state, string extras) is an error naming the file and the
// dataset; nothing is loaded.
TEST(Checksums, ADamagedByteInAnyArrayIsAnErrorNamingTheDataset) {
  const std::string path = temp_path("checked.h5");
  TrainingRun run("half");
  run.train(3);
  CheckpointExtras extras;
  extras.set("position", std::string(100, 'p'));
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration,
                  extras);
  const std::string bytes = file_bytes(path);
  const auto arrays = stored_arrays(path);
  // 4 parameters, 4 momentum states, the RNG state, the extra.
  ASSERT_EQ(arrays.size(), 10u);
  const std::string bad = temp_path("bad.h5");
  for (const auto& a : arrays) {
    SCOPED_TRACE(a.name);
    std::string damaged = bytes;
    damaged[a.address + a.bytes / 2] ^= 0x10;
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << damaged;
    TrainingRun fresh("half");
    const auto before = fresh.weights();
    expect_file_error(
        [&] {
          load_checkpoint(bad, fresh.params, *fresh.solver,
                          fresh.updater.get());
        },
        {"[load_checkpoint] '" + bad + "', entry '" + a.name + "'",
         "its checksum does not match"});
    EXPECT_EQ(fresh.weights(), before);
  }
  // The same through load_parameters and load_states.
  const std::string params = temp_path("checked_params.h5");
  save_parameters(params, run.params);
  const auto p_arrays = stored_arrays(params);
  ASSERT_EQ(p_arrays.size(), 4u);
  std::string damaged = file_bytes(params);
  damaged[p_arrays[1].address + 3] ^= 0x01;
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << damaged;
  ParameterScope scope;
  expect_file_error(
      [&] { load_parameters(bad, scope); },
      {"[load_parameters]", bad, "entry '" + p_arrays[1].name, "checksum"});
  EXPECT_TRUE(scope.parameters().empty());
  const std::string states = temp_path("checked_states.h5");
  save_states(states, *run.solver);
  const auto s_arrays = stored_arrays(states);
  ASSERT_EQ(s_arrays.size(), 4u);
  damaged = file_bytes(states);
  damaged[s_arrays[0].address] ^= 0x80;
  std::ofstream(bad, std::ios::binary | std::ios::trunc) << damaged;
  expect_file_error(
      [&] { load_states(bad, *run.solver); },
      {"[load_states]", bad, "entry '" + s_arrays[0].name, "checksum"});
  for (auto& f : {path, bad, params, states}) std::remove(f.c_str());
}

// Files written before checksums (contiguous datasets, the default HDF5
// format, as NNabla and h5py write by default) still load.
TEST(Checksums, FilesWithoutChecksumsStillLoad) {
  const std::string path = temp_path("plain.h5");
  {
    h5::Handle f(
        H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
        H5Fclose);
    h5::Handle g(
        H5Gcreate2(f.get(), "fc", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
        H5Gclose);
    const hsize_t dims[2] = {2, 3};
    h5::Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
    h5::Handle ds(H5Dcreate2(g.get(), "W", H5T_IEEE_F32LE, space.get(),
                             H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                  H5Dclose);
    const float w[6] = {1, 2, 3, 4, 5, 6};
    H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w);
    h5::Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
    for (const char* attr : {"index", "need_grad"}) {
      h5::Handle a(H5Acreate2(ds.get(), attr, H5T_STD_I64LE, scalar.get(),
                              H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
      const int64_t v = attr[0] == 'n';
      H5Awrite(a.get(), H5T_NATIVE_INT64, &v);
    }
  }
  EXPECT_TRUE(stored_arrays(path).empty()) << "no chunked dataset";
  ParameterScope scope;
  load_parameters(path, scope);
  ASSERT_TRUE(scope.get("fc/W"));
  EXPECT_EQ(to_doubles(scope.get("fc/W")), (Doubles{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(scope.get("fc/W")->need_grad());
  std::remove(path.c_str());
}

// A writer killed at a random point never leaves a torn checkpoint: the
// file loads and is exactly one complete save, the last one finished (or
// the one whose rename the kill interrupted after it happened).
TEST(Checkpoint, AWriteKilledHalfwayLeavesExactlyOneCompleteSave) {
  const std::string path = temp_path("killed.h5");
  TrainingRun run("float");
  set_save(run, 0);
  save_checkpoint(path, run.params, *run.solver, *run.updater, 0);
  auto* progress = static_cast<WriterProgress*>(
      ::mmap(nullptr, sizeof(WriterProgress), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(progress, MAP_FAILED);
  std::mt19937 rng(5);
  int inside = 0, trials = 12;
  for (int trial = 0; trial < trials; ++trial) {
    new (progress) WriterProgress();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int64_t k = 1;; ++k) {
        set_save(run, k);
        CheckpointExtras extras;
        extras.set("save", k);
        progress->begun = k;
        save_checkpoint(path, run.params, *run.solver, *run.updater, k, extras);
        progress->finished = k;
      }
    }
    // Let it finish a few saves first, then kill it at a random moment.
    while (progress->finished < 2) ::usleep(100);
    ::usleep(std::uniform_int_distribution<int>(0, 3000)(rng));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer must die of the kill, not exit or crash; status "
        << status;
    const int64_t begun = progress->begun, finished = progress->finished;
    inside += begun > finished;
    TrainingRun fresh("float");
    CheckpointInfo info;
    ASSERT_NO_THROW(info = load_checkpoint(path, fresh.params, *fresh.solver,
                                           fresh.updater.get()))
        << "trial " << trial;
    EXPECT_TRUE(info.iteration == finished ||
                (info.iteration == begun && begun == finished + 1))
        << "trial " << trial << ": loaded save " << info.iteration << ", begun "
        << begun << ", finished " << finished;
    EXPECT_TRUE(is_save(fresh, info.iteration))
        << "trial " << trial << ": the weights are not those of save "
        << info.iteration;
    EXPECT_EQ(info.extras.get_int("save"), info.iteration);
    std::remove((path + ".tmp." + std::to_string(child)).c_str());
  }
  // The writer spends nearly all its time inside save_checkpoint, so most
  // kills land there; all of them is likely, none would mean the test
  // tests nothing.
  std::printf("kills inside a write: %d of %d\n", inside, trials);
  EXPECT_GE(inside, trials / 2);
  ::munmap(progress, sizeof(WriterProgress));
  std::remove(path.c_str());
}

// Every prefix of a checkpoint file (cut at 40 places) and a damaged
// superblock are errors naming the file, never a crash or a partial load.
TEST(Checkpoint, TruncatedOrDamagedFilesAreErrorsThatNameTheFile) {
  const std::string path = temp_path("whole.h5");
  TrainingRun run("float");
  run.train(2);
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = temp_path("cut.h5");
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    const size_t n = bytes.size() * i / 40;
    std::ofstream(cut, std::ios::binary | std::ios::trunc)
        << bytes.substr(0, n);
    TrainingRun fresh("float");
    const auto before = fresh.weights();
    try {
      load_checkpoint(cut, fresh.params, *fresh.solver, fresh.updater.get());
      ADD_FAILURE() << "a checkpoint cut to " << n << " of " << bytes.size()
                    << " bytes loaded";
    } catch (const std::invalid_argument& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
    }
    EXPECT_EQ(fresh.weights(), before) << "nothing changes on error";
  }
  EXPECT_EQ(refused, 40);
  std::string damaged = bytes;
  for (int i = 0; i < 8; ++i) damaged[i] ^= 0x5a;  // the HDF5 signature
  std::ofstream(cut, std::ios::binary | std::ios::trunc) << damaged;
  TrainingRun fresh("float");
  expect_file_error([&] { load_checkpoint(cut, fresh.params, *fresh.solver); },
                    {cut, "is not an HDF5 file"});
  std::remove(path.c_str());
  std::remove(cut.c_str());
}

}  // namespace
}  // namespace mg::test
