// Files exchanged with NNabla itself (nnabla 1.39 from PyPI, in the
// virtual environment scripts/install_nnabla.sh makes; skipped with a
// message without it): the same small network written with each library's
// parametric functions, trained a few steps in one and run in the other
// from its parameter file, and Adam's states both ways. Names are NNabla's
// on both sides ("conv1/conv/W", "bn1/bn/mean", "fc4/affine/b"), so nothing
// is renamed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>

#include "../support/function_tester.hpp"
#include "../support/nnabla_venv.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

using mg::test::nnabla_python;

std::string temp(const std::string& name) {
  // The process id keeps the two tests (run in parallel) apart.
  return (std::filesystem::temp_directory_path() /
          ("mg_nnabla_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The network both sides build: conv 3x3 (4) -> batch norm -> relu ->
// max pool 2 -> affine 10, on (2, 1, 8, 8).
mg::VariablePtr net(const mg::VariablePtr& x, const mg::ParameterScope& p,
                    bool batch_stat) {
  auto h = PF::convolution(x, 4, {3, 3}, p["conv1"]);
  h = PF::batch_normalization(h, p["bn1"], batch_stat);
  h = F::max_pooling(F::relu(h), {2, 2});
  return PF::affine(h, 10, p["fc4"]);
}

const char* kPythonNet = R"(
import sys, h5py, numpy as np
import nnabla as nn, nnabla.functions as F, nnabla.parametric_functions as PF
import nnabla.solvers as S

def net(x, batch_stat):
    h = PF.convolution(x, 4, (3, 3), name="conv1")
    h = PF.batch_normalization(h, batch_stat=batch_stat, name="bn1")
    h = F.max_pooling(F.relu(h), (2, 2))
    return PF.affine(h, 10, name="fc4")

def write(path, arrays):  # as nnabla.save_parameters writes
    with h5py.File(path, "w") as f:
        for i, (k, v) in enumerate(arrays):
            f[k] = v
            f[k].attrs["need_grad"] = np.bool_(False)
            f[k].attrs["index"] = np.int64(i)
)";

int run_python(const std::string& body, const std::string& args) {
  const std::string script = temp("script.py");
  std::ofstream(script) << kPythonNet << body;
  const std::string cmd = nnabla_python() + " " + script + " " + args;
  const int rc = std::system(cmd.c_str());
  std::remove(script.c_str());
  return rc;
}

std::vector<float> values(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

}  // namespace

// Trained here, run by NNabla from our file with NNabla's own PF code; our
// Adam states read by NNabla's solver and written back by it, then read
// here again: the same states bit for bit.
TEST(NNablaInterop, OurTrainedNetworkRunsInNNabla) {
  SKIP_WITHOUT_NNABLA();
  mg::seed(3);
  mg::ParameterScope params;
  auto x = mg::make_variable({2, 1, 8, 8});
  auto t = mg::make_variable({2, 1});
  auto loss = F::mean(F::softmax_cross_entropy(net(x, params, true), t));
  auto solver = mg::solvers::Adam(1e-2f);
  solver->set_parameters(params.parameters());
  mg::uniform_initializer(-1, 1)(*x->data());
  t->data()->cast<float>()[0] = 3;
  t->data()->cast<float>()[1] = 7;
  for (int i = 0; i < 3; ++i) {  // BN's running statistics move too
    solver->zero_grad();
    loss->forward();
    loss->backward();
    solver->update();
  }
  auto y = net(x, params, false);
  y->forward();
  const std::string weights = temp("ours.h5"), io = temp("ours_io.h5"),
                    states = temp("ours_states.h5"),
                    back = temp("states_back.h5");
  mg::save_parameters(weights, params);
  mg::save_states(states, *solver);
  mg::ParameterScope data;
  data.set("x", x);
  data.set("y", y);
  mg::save_parameters(io, data);

  const int rc = run_python(R"(
weights, io, states, back = sys.argv[1:5]
nn.load_parameters(weights)
f = h5py.File(io, "r")
x = nn.Variable.from_numpy_array(f["x"][...])
y = net(x, batch_stat=False)
y.forward()
err = np.abs(y.d - f["y"][...]).max()
print("NNabla's forward of mixgraph's trained parameters: max |dy| = %.3g" % err)
solver = S.Adam(1e-2)
solver.set_parameters(nn.get_parameters())
solver.load_states(states)
solver.save_states(back)
sys.exit(0 if err < 1e-5 else 1)
)",
                            weights + " " + io + " " + states + " " + back);
  EXPECT_EQ(rc, 0) << "NNabla's output differs from ours (printed above)";

  // Our states, through NNabla and back.
  auto again = mg::solvers::Adam(1e-2f);
  again->set_parameters(params.parameters());
  mg::load_states(back, *again);
  const auto want = solver->states(), got = again->states();
  for (const auto& [name, s] : want) {
    SCOPED_TRACE(name);
    EXPECT_EQ(got.at(name).t, s.t);
    for (const auto& [state, array] : s.pstate) {
      const float* a = array->get<const float>();
      const float* b = got.at(name).pstate.at(state)->get<const float>();
      for (int64_t i = 0; i < static_cast<int64_t>(array->size()); ++i) {
        ASSERT_EQ(a[i], b[i]);
      }
    }
  }
  for (const auto& f : {weights, io, states, back}) std::remove(f.c_str());
}

// Trained in NNabla with its PF code, saved with nnabla.save_parameters
// (need_grad as bools), loaded here into the network built with ours.
TEST(NNablaInterop, NNablasTrainedNetworkRunsHere) {
  SKIP_WITHOUT_NNABLA();
  const std::string weights = temp("theirs.h5"), io = temp("theirs_io.h5");
  const int rc = run_python(R"(
weights, io = sys.argv[1:3]
np.random.seed(0)
x = nn.Variable.from_numpy_array(np.random.uniform(-1, 1, (2, 1, 8, 8)).astype(np.float32))
t = nn.Variable.from_numpy_array(np.array([[3], [7]], np.int32))
loss = F.mean(F.softmax_cross_entropy(net(x, True), t))
solver = S.Adam(1e-2)
solver.set_parameters(nn.get_parameters())
for i in range(3):
    solver.zero_grad()
    loss.forward()
    loss.backward()
    solver.update()
y = net(x, False)
y.forward()
nn.save_parameters(weights)
write(io, [("x", x.d), ("y", y.d)])
)",
                            weights + " " + io);
  ASSERT_EQ(rc, 0) << "the NNabla script failed (its output is above)";
  mg::ParameterScope data;
  mg::load_parameters(io, data);
  mg::ParameterScope params;
  auto x = mg::make_variable({2, 1, 8, 8});
  auto y = net(x, params, false);
  const size_t created = params.size();
  mg::load_parameters(weights, params);
  EXPECT_EQ(params.size(), created) << "every name matched: nothing created";
  EXPECT_FALSE(params.get("bn1/bn/mean")->need_grad());
  EXPECT_TRUE(params.get("conv1/conv/W")->need_grad());
  const auto xs = values(data.get("x"));
  std::copy(xs.begin(), xs.end(), x->data()->cast<float>());
  y->forward();
  const auto ours = values(y), theirs = values(data.get("y"));
  float err = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    err = std::max(err, std::fabs(ours[i] - theirs[i]));
  }
  std::printf(
      "mixgraph's forward of NNabla's trained parameters: "
      "max |dy| = %.3g\n",
      err);
  EXPECT_LT(err, 1e-5f);
  for (const auto& f : {weights, io}) std::remove(f.c_str());
}

// Functions built here from NNabla's own argument lists (functions.yaml's
// names, the optional ones given) compute what NNabla computes with the
// same lists on the same inputs: Shift's reflect, Max and Min with their
// indices, BatchNormalization on (x, mean, variance), Split, a two-layer
// bidirectional RNN in NNabla's weight layout, MaxPooling without
// including_pad, ConfusionMatrix's default axis and RandomCrop's default
// shape.
TEST(NNablaInterop, NNablasArgumentListsComputeTheSameHere) {
  SKIP_WITHOUT_NNABLA();
  const std::string io = temp("lists.h5");
  const int rc = run_python(R"(
import nnabla.function_bases as FB
io = sys.argv[1]
rng = np.random.RandomState(0)
data = []
def var(name, shape, lo=-1.0, hi=1.0):
    v = nn.Variable.from_numpy_array(rng.uniform(lo, hi, shape).astype(np.float32))
    data.append((name, v.d.copy()))
    return v
def keep(name, *ys):
    for i, y in enumerate(ys):
        y.forward()
        data.append(("%s/%d" % (name, i), np.asarray(y.d, np.float32)))
x = var("x", (2, 3, 4))
keep("shift", FB.shift(x, shifts=(1, -2), border_mode="reflect"))
keep("max", *FB.max(x, axes=(1,), keep_dims=False, with_index=True,
                    only_index=False, n_outputs=2))
keep("min", FB.min(x, axes=(0, 2), keep_dims=True, with_index=False,
                   only_index=True))
mean, variance = var("mean", (1, 3, 1)), var("variance", (1, 3, 1), 0.5, 2.0)
keep("bn", FB.batch_normalization(x, None, None, mean, variance, axes=(1,),
                                  decay_rate=0.9, eps=1e-5, batch_stat=False,
                                  no_scale=True, no_bias=True))
keep("split", *FB.split(x, axis=1, n_outputs=3))
rx, rh = var("rnn_x", (3, 2, 3)), var("rnn_h", (2, 2, 2, 2))
w0, w, b = var("w0", (2, 2, 5)), var("w", (1, 2, 2, 6)), var("b", (2, 2, 2))
keep("rnn", *FB.rnn(rx, rh, w0, w, b, num_layers=2, nonlinearity="tanh",
                    dropout=0.0, bidirectional=True, training=True))
p = var("p", (1, 2, 3, 5))
keep("pool", FB.max_pooling(p, kernel=(2, 2), stride=(1, 2),
                            ignore_border=False, pad=(1, 0),
                            channel_last=False))
t = nn.Variable.from_numpy_array(rng.randint(0, 4, (2, 3, 1)).astype(np.float32))
data.append(("t", t.d.copy()))
keep("confusion", FB.confusion_matrix(x, t))
keep("crop", FB.random_crop(x))
write(io, data)
)",
                            io);
  ASSERT_EQ(rc, 0) << "the NNabla script failed (its output is above)";
  mg::ParameterScope data;
  mg::load_parameters(io, data);
  auto d = [&](const std::string& name) { return data.get(name); };
  auto expect_same = [&](const std::vector<mg::VariablePtr>& ours,
                         const std::string& name) {
    SCOPED_TRACE(name);
    for (size_t k = 0; k < ours.size(); ++k) {
      const auto want = d(name + "/" + std::to_string(k));
      ASSERT_TRUE(want) << "NNabla wrote no " << name << "/" << k;
      ASSERT_EQ(ours[k]->shape(), want->shape()) << k;
      const auto a = values(ours[k]), b = values(want);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_NEAR(a[i], b[i], 1e-5f) << k << " at " << i;
      }
    }
  };
  using I = std::vector<int64_t>;
  auto x = d("x");
  expect_same(
      mg::test::apply_from_args(
          "Shift",
          {{"shifts", I{1, -2}}, {"border_mode", std::string("reflect")}}, {x}),
      "shift");
  expect_same(mg::test::apply_from_args("Max",
                                        {{"axes", I{1}},
                                         {"keep_dims", false},
                                         {"with_index", true},
                                         {"only_index", false}},
                                        {x}),
              "max");
  expect_same(mg::test::apply_from_args("Min",
                                        {{"axes", I{0, 2}},
                                         {"keep_dims", true},
                                         {"with_index", false},
                                         {"only_index", true}},
                                        {x}),
              "min");
  expect_same(mg::test::apply_from_args("BatchNormalization",
                                        {{"axes", I{1}},
                                         {"decay_rate", 0.9},
                                         {"eps", 1e-5},
                                         {"batch_stat", false},
                                         {"no_scale", true},
                                         {"no_bias", true}},
                                        {x, d("mean"), d("variance")}),
              "bn");
  expect_same(mg::test::apply_from_args("Split", {{"axis", int64_t{1}}}, {x}),
              "split");
  expect_same(mg::test::apply_from_args(
                  "RNN",
                  {{"num_layers", int64_t{2}},
                   {"nonlinearity", std::string("tanh")},
                   {"dropout", 0.0},
                   {"bidirectional", true},
                   {"training", true}},
                  {d("rnn_x"), d("rnn_h"), d("w0"), d("w"), d("b")}),
              "rnn");
  expect_same(mg::test::apply_from_args("MaxPooling",
                                        {{"kernel", I{2, 2}},
                                         {"stride", I{1, 2}},
                                         {"ignore_border", false},
                                         {"pad", I{1, 0}},
                                         {"channel_last", false}},
                                        {d("p")}),
              "pool");
  expect_same(mg::test::apply_from_args("ConfusionMatrix", {}, {x, d("t")}),
              "confusion");
  expect_same(mg::test::apply_from_args("RandomCrop",
                                        {{"shape", I{2, 3, 4}},
                                         {"base_axis", int64_t{1}},
                                         {"seed", int64_t{-1}}},
                                        {x}),
              "crop");
  std::remove(io.c_str());
}
