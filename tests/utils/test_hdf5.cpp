// Parameters, solver states and checkpoints in HDF5: round trips, NNabla's
// layout, h5py, corrupt files, killed writes, and bit-exact resume.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include <mixgraph/contexts/convert.hpp>
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

void expect_runtime_error(const std::function<void()>& f,
                          const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "expected an error mentioning " << parts.front();
  } catch (const std::runtime_error& e) {
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
  expect_runtime_error([&] { load_parameters(path, wrong); },
                       {"[load_parameters]", path,
                        "'fc/b' has shape (3,) in the file, but (4,) in the scope"});
  EXPECT_EQ(W->data()->get<const float>()[0], 5.0f) << "nothing was loaded";

  ParameterScope half;
  auto H = half["fc"].get_or_create("W", {2, 3}, nullptr);
  H->data()->array().cast(Dtype::f16);
  expect_runtime_error([&] { load_parameters(path, half); },
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
  expect_runtime_error([&] { load_parameters(text, p); },
                       {text, "is not an HDF5 file"});
  expect_runtime_error([&] { load_parameters(temp_path("missing.h5"), p); },
                       {"cannot be read"});

  const std::string good = temp_path("good.h5");
  ParameterScope src;
  src.get_or_create("W", {64, 64}, constant_initializer(1));
  save_parameters(good, src);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string cut = temp_path("truncated.h5");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_runtime_error([&] { load_parameters(cut, p); }, {cut});
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
  expect_runtime_error([&] { load_parameters(odd, p); },
                       {odd, "entry 'W'", "attribute 'index' must be an integer"});
  const std::string bare = temp_path("bare.h5");
  h5::write_atomically(bare, "test", [](h5::File& f) {
    float v[2] = {1, 2};
    h5::write_dataset(f, f.handle.get(), "W", {2}, Dtype::f32, v);
  });
  expect_runtime_error([&] { load_parameters(bare, p); },
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
  const float* m = other->states().at("fc/W").pstate.at("mean")->get<const float>();
  EXPECT_FLOAT_EQ(m[0], 0.05f);

  auto momentum = solvers::Momentum();
  momentum->set_parameters({{"fc/W", w2}});
  expect_runtime_error([&] { load_states(path, *momentum); },
                       {"[load_states]", "entry 'm'", "is missing"});
  auto wrong_shape = solvers::Adam();
  wrong_shape->set_parameters({{"fc/W", variable_from({2}, {1, 2}, true)}});
  expect_runtime_error([&] { load_states(path, *wrong_shape); },
                       {"entry 'fc/W/mean'", "has shape (3,)"});
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
print('h5py ok', len(names))
)";
  const std::string cmd = "/usr/bin/python3 " + script + " " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::remove(path.c_str());
  std::remove(script.c_str());
}

// ---- checkpoints ----

// A small regression network trained with Momentum (state that must resume)
// and, in half, the dynamic loss scaler.
struct TrainingRun {
  explicit TrainingRun(const std::string& type_config) : ctx(context("cpu", type_config)) {
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
  std::shared_ptr<Momentum> solver;
  std::unique_ptr<DynamicLossScalingUpdater> updater;
  int64_t iteration = 0;
};

// Runs this test binary again as a fresh process for one resume stage.
void run_stage(const std::string& stage, const std::string& type_config,
               const std::string& path) {
  const std::string cmd =
      "MIXGRAPH_RESUME_STAGE=" + stage + " MIXGRAPH_RESUME_TYPE=" +
      type_config + " MIXGRAPH_RESUME_PATH=" + path +
      " /proc/" + std::to_string(::getpid()) +
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
    auto info = load_checkpoint(path, run.params, *run.solver, run.updater.get());
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
  EXPECT_EQ(resumed.updater->applied_steps(), straight.updater->applied_steps());
  EXPECT_EQ(resumed.solver->states().at("fc1/W").t,
            straight.solver->states().at("fc1/W").t);
  std::remove(path.c_str());
  std::remove((path + ".final").c_str());
}

INSTANTIATE_TEST_SUITE_P(TypeConfigs, Checkpoint,
                         ::testing::Values("float", "half"));

TEST(Checkpoint, LoadingIntoAnotherNetworkChangesNothing) {
  const std::string path = temp_path("other.h5");
  TrainingRun run("float");
  run.train(2);
  save_checkpoint(path, run.params, *run.solver, *run.updater, run.iteration);
  ParameterScope params;
  auto W = params["fc1"].get_or_create("W", {4, 7}, constant_initializer(3));
  auto solver = solvers::Momentum();
  solver->set_parameters(params.parameters());
  expect_runtime_error([&] { load_checkpoint(path, params, *solver); },
                       {"[load_checkpoint]", path});
  EXPECT_EQ(W->data()->get<const float>()[0], 3.0f);
  EXPECT_EQ(solver->states().at("fc1/W").t, 0u);
  std::remove(path.c_str());
}

// A writer killed at a random point never leaves a checkpoint that fails to
// load: the rename is the only step that replaces the old file.
TEST(Checkpoint, AWriteKilledHalfwayLeavesTheOldCheckpointLoadable) {
  const std::string path = temp_path("killed.h5");
  TrainingRun run("float");
  save_checkpoint(path, run.params, *run.solver, *run.updater, 0);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 12; ++trial) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int64_t it = 1;; ++it) {
        save_checkpoint(path, run.params, *run.solver, *run.updater, it);
      }
    }
    ::usleep(std::uniform_int_distribution<int>(200, 20000)(rng));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    TrainingRun fresh("float");
    EXPECT_NO_THROW(load_checkpoint(path, fresh.params, *fresh.solver,
                                    fresh.updater.get()))
        << "trial " << trial;
    std::remove((path + ".tmp." + std::to_string(child)).c_str());
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mg::test
