// NNabla's .nnp model files: our own round trip (network.nntxt with
// parameter.h5, and one binary network.protobuf), the sections kept for
// the round trip, the errors of bad files, and the files exchanged with
// NNabla 1.39 itself both ways (skipped without .venv-nnabla).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/nnp/zip_archive.hpp>

#include "../support/nnabla_venv.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mg_nnp_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<float> values(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

void fill(const mg::VariablePtr& v, const std::vector<float>& data) {
  ASSERT_EQ(static_cast<size_t>(v->size()), data.size());
  std::copy(data.begin(), data.end(), v->data()->cast<float>());
}

// conv 3x3 (pad 1) -> batch norm (running statistics) -> relu -> a
// reshape whose shape holds the batch -> affine -> plus its mean broadcast
// to a shape holding the batch, on (2, 3, 6, 6).
struct SmallCnn {
  mg::ParameterScope params;
  mg::VariablePtr x = mg::make_variable({2, 3, 6, 6});
  mg::VariablePtr y;
  SmallCnn() {
    mg::seed(5);
    PF::ConvolutionParams conv;
    conv.pad = {1, 1};
    auto h = PF::convolution(x, 4, {3, 3}, params["conv1"], conv);
    h = F::relu(PF::batch_normalization(h, params["bn1"], false));
    h = F::reshape(h, {2, 4 * 6 * 6});
    y = PF::affine(h, 5, params["fc"]);
    y = F::add2(y, F::broadcast(F::mean(y, {1}, true), {2, 5}));
    for (const auto& [name, p] : params.parameters(false)) {
      mg::uniform_initializer(0.5f, 1.5f)(*p->data());  // var > 0 too
    }
    mg::uniform_initializer(-1, 1)(*x->data());
    y->forward();
  }
};

// A .nnp holding `nntxt` as its network.
std::string write_nnp(const std::string& name, const std::string& nntxt) {
  const std::string path = temp(name);
  mg::nnp::write_zip(
      path, {{"nnp_version.txt", "0.1\n"}, {"network.nntxt", nntxt}}, "test");
  return path;
}

// x (batch, 3) -> ReLU -> y; `edit` changes it into a bad file.
const std::string kRelu = R"(
network {
  name: "net"
  batch_size: 2
  variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }
  variable { name: "y" type: "Buffer" shape { dim: -1 dim: 3 } }
  function { name: "f" type: "ReLU" input: "x" output: "y" }
}
executor {
  name: "runtime"
  network_name: "net"
  data_variable { variable_name: "x" data_name: "x" }
  output_variable { variable_name: "y" data_name: "y" }
}
)";

std::string edited(std::string text, const std::string& from,
                   const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

// load_nnp's error for `path`: it names the file and says each of `what`.
void expect_refused(const std::string& path,
                    const std::vector<std::string>& what,
                    const mg::NnpOptions& options = {}) {
  mg::ParameterScope params;
  try {
    mg::load_nnp(path, params, options);
    ADD_FAILURE() << "loaded " << path;
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("[load_nnp] ", 0), 0u) << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const auto& w : what) {
      EXPECT_NE(message.find(w), std::string::npos)
          << "'" << w << "' not in: " << message;
    }
  }
}

}  // namespace

// Saved and loaded here, as network.nntxt + parameter.h5 and as one binary
// network.protobuf: the same outputs bit for bit, and at another batch
// size (the batch written as -1, in the Reshape's shape too) the same rows.
TEST(Nnp, RoundTripTextAndBinary) {
  SmallCnn net;
  const auto want = values(net.y);
  for (bool binary : {false, true}) {
    SCOPED_TRACE(binary ? "binary" : "text");
    const std::string path = temp(binary ? "bin.nnp" : "text.nnp");
    mg::SaveNnpOptions options;
    options.binary = binary;
    mg::save_nnp(path, "net", {{"y", net.y}}, net.params, options);
    std::vector<std::string> names;
    for (const auto& [n, bytes] : mg::nnp::read_zip(path, "test")) {
      names.push_back(n);
    }
    const std::vector<std::string> want_names =
        binary ? std::vector<std::string>{"nnp_version.txt", "network.protobuf"}
               : std::vector<std::string>{"nnp_version.txt", "network.nntxt",
                                          "parameter.h5"};
    EXPECT_EQ(names, want_names);
    mg::ParameterScope params;
    const mg::Nnp nnp = mg::load_nnp(path, params);
    EXPECT_EQ(params.size(), net.params.size());
    ASSERT_EQ(nnp.executors.size(), 1u);
    EXPECT_EQ(nnp.executors[0].data, std::vector<std::string>{"x0"});
    EXPECT_EQ(nnp.executors[0].outputs, std::vector<std::string>{"y"});
    const mg::Network run = nnp.executor("runtime");
    fill(run.input("x0"), values(net.x));
    run.output("y")->forward();
    EXPECT_EQ(values(run.output("y")), want);

    mg::ParameterScope params3;
    const mg::Nnp three = mg::load_nnp(path, params3, {3});
    const mg::Network run3 = three.executor("runtime");
    ASSERT_EQ(run3.input("x0")->shape(), (mg::Shape{3, 3, 6, 6}));
    auto x3 = values(net.x);
    x3.resize(x3.size() / 2 * 3, 0.25f);
    fill(run3.input("x0"), x3);
    run3.output("y")->forward();
    ASSERT_EQ(run3.output("y")->shape(), (mg::Shape{3, 5}));
    const auto got3 = values(run3.output("y"));
    EXPECT_EQ(std::vector<float>(got3.begin(), got3.begin() + 10), want);
    std::remove(path.c_str());
  }
}

// Causal attention (ScaledDotProductAttention, which NNabla lacks) is
// written as NNabla's functions, BatchMatmul, Add2 of the mask, Softmax;
// the mask, a constant of that graph, is kept as a parameter without grad
// (NNabla has no constants): the network loads with one input and computes
// what the fused function did (to fp32 rounding: the composed form sums in
// another order); two networks with equal masks share one.
TEST(Nnp, AConstantIsKeptAsAParameterWithoutGrad) {
  mg::seed(6);
  mg::ParameterScope params;
  auto build = [&](int64_t batch) {
    auto x = mg::make_variable({4, batch, 8});
    x->set_name("tokens");
    return std::make_pair(
        x, PF::multi_head_attention(x, x, x, 8, 2, params["mha"], true));
  };
  auto [x, y] = build(2);
  auto [x1, y1] = build(1);
  mg::uniform_initializer()(*x->data());
  y->forward();
  for (bool binary : {false, true}) {
    SCOPED_TRACE(binary ? "binary" : "text");
    const std::string path = temp(binary ? "c.bin.nnp" : "c.nnp");
    mg::SaveNnpOptions options;
    options.binary = binary;
    mg::save_nnp(path, "net", {{"y", y}}, params, options);
    if (!binary) {
      for (const auto& [n, bytes] : mg::nnp::read_zip(path, "test")) {
        if (n != "network.nntxt") continue;
        EXPECT_EQ(bytes.find("ScaledDotProductAttention"), std::string::npos);
        EXPECT_NE(bytes.find("type: \"Softmax\""), std::string::npos);
        EXPECT_NE(bytes.find("type: \"BatchMatmul\""), std::string::npos);
      }
    }
    mg::ParameterScope loaded;
    const mg::Nnp nnp = mg::load_nnp(path, loaded);
    EXPECT_EQ(loaded.size(), params.size() + 1);
    ASSERT_TRUE(loaded.get("constant0"));
    EXPECT_FALSE(loaded.get("constant0")->need_grad());
    const mg::Network run = nnp.executor("runtime");
    ASSERT_EQ(run.inputs.size(), 1u);
    fill(run.input("tokens"), values(x));
    run.output("y")->forward();
    const auto got = values(run.output("y")), want = values(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i])));
    }
    std::remove(path.c_str());
  }
  // Two networks, each with its own mask, equal: written once.
  mg::Nnp two;
  two.networks = {{"train", {}, {{"y", y}}}, {"infer", {}, {{"y", y1}}}};
  const std::string path = temp("two.nnp");
  mg::save_nnp(path, two, params);
  mg::ParameterScope loaded;
  mg::load_nnp(path, loaded);
  EXPECT_EQ(loaded.size(), params.size() + 1);
  std::remove(path.c_str());
  // Masks of other lengths under one name: refused, saying what to do.
  auto x3 = mg::make_variable({3, 1, 8});
  two.networks[1].outputs = {
      {"y", PF::multi_head_attention(x3, x3, x3, 8, 2, params["mha"], true)}};
  try {
    mg::save_nnp(path, two, params);
    ADD_FAILURE() << "saved two masks as one";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "two networks have different constants named 'constant0'"),
              std::string::npos)
        << e.what();
  }
}

// The sections not run here (training_config, dataset, optimizer, monitor)
// are read, kept and written back; a loaded .nnp saves as it was.
TEST(Nnp, KeepsTheOtherSectionsThroughARoundTrip) {
  const std::string extra = R"(
training_config { max_epoch: 3 iter_per_epoch: 10 save_best: true }
dataset { name: "train" uri: "TRAIN" batch_size: 2 variable: "x" }
optimizer {
  name: "opt"
  network_name: "net"
  dataset_name: "train"
  solver { type: "Adam" adam_param { alpha: 0.001 beta1: 0.9 } }
}
monitor { name: "m" network_name: "net" dataset_name: "train" }
)";
  const std::string path = write_nnp("sections.nnp", kRelu + extra);
  mg::ParameterScope params;
  const mg::Nnp nnp = mg::load_nnp(path, params);
  for (const char* kept :
       {"max_epoch: 3", "uri: \"TRAIN\"", "alpha: 0.001", "name: \"m\""}) {
    EXPECT_NE(nnp.other_sections.find(kept), std::string::npos)
        << kept << " not in:\n"
        << nnp.other_sections;
  }
  const std::string again = temp("sections_again.nnp");
  mg::save_nnp(again, nnp, params);
  mg::ParameterScope params2;
  const mg::Nnp back = mg::load_nnp(again, params2);
  EXPECT_EQ(back.other_sections, nnp.other_sections);
  ASSERT_EQ(back.executors.size(), 1u);
  EXPECT_EQ(back.executors[0].data, std::vector<std::string>{"x"});
  EXPECT_EQ(back.executors[0].outputs, std::vector<std::string>{"y"});
  const mg::Network run = back.executor("runtime");
  fill(run.input("x"), {-1, 2, -3, 4, -5, 6});
  run.output("y")->forward();
  EXPECT_EQ(values(run.output("y")), (std::vector<float>{0, 2, 0, 4, 0, 6}));
  for (const auto& p : {path, again}) std::remove(p.c_str());
}

// Each bad file is refused with its name and what is wrong.
TEST(Nnp, BadFilesAreRefusedNamingTheFileAndTheProblem) {
  expect_refused(temp("missing.nnp"), {"no such file"});
  const std::string text = temp("text.nnp");
  std::ofstream(text) << "not a zip";
  expect_refused(text, {"not a zip archive"});
  const std::string empty = temp("empty.nnp");
  mg::nnp::write_zip(empty, {{"nnp_version.txt", "0.1\n"}}, "test");
  expect_refused(empty, {"holds no network"});

  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {edited(kRelu, "\"ReLU\"", "\"ReLu\""),
       {"function 'f' (ReLu)", "unknown function 'ReLu'", "'ReLU'"}},
      {edited(kRelu, "output: \"y\" }",
              "output: \"y\" leaky_relu_param { alpha: 0.5 } }"),
       {"function 'f' (ReLU)", "unknown argument 'alpha'"}},
      {edited(kRelu, "input: \"x\"", "input: \"z\""),
       {"reads 'z', which no input"}},
      {edited(kRelu, "name: \"y\" type: \"Buffer\" shape { dim: -1 dim: 3 }",
              "name: \"y\" type: \"Buffer\" shape { dim: -1 dim: 4 }"),
       {"output 'y' has shape (2, 3), but the file declares (2, 4)"}},
      {edited(kRelu, "dim: -1 dim: 3 } }\n  variable { name: \"y\"",
              "dim: -3 dim: 3 } }\n  variable { name: \"y\""),
       {"variable 'x' has a bad shape (-3"}},
      {edited(kRelu, "name: \"net\"",
              "name: \"net\" repeat_info { id: \"r\" times: 2 }"),
       {"repeat_info 'r' (loop control) is not supported"}},
      {edited(kRelu, "function {",
              "variable { name: \"w\" type: \"Parameter\" shape { dim: 3 } }\n"
              "  function {"),
       {"these parameters have no value", "'w' (3,)"}},
      {edited(kRelu, "batch_size: 2", ""),
       {"variable 'x' has a free batch dimension", "NnpOptions::batch_size"}},
      {edited(kRelu, "type: \"ReLU\"", "type: ReLU\""), {"network.nntxt:7:"}}};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].second[0]);
    const std::string path =
        write_nnp("bad" + std::to_string(i) + ".nnp", cases[i].first);
    expect_refused(path, cases[i].second);
    std::remove(path.c_str());
  }
  // The network's batch_size given at load time instead.
  const std::string free =
      write_nnp("free.nnp", edited(kRelu, "batch_size: 2", ""));
  mg::ParameterScope params;
  EXPECT_EQ(mg::load_nnp(free, params, {4}).network("net").input("x")->shape(),
            (mg::Shape{4, 3}));
  EXPECT_THROW(mg::load_nnp(free, params, {4, {"nett"}}),
               std::invalid_argument);
  for (const auto& p : {text, empty, free}) std::remove(p.c_str());
}

// A function whose output shape depends on its input's values (NonZero
// here) gets the shape of the data NNabla saved it with in the file; the
// network is built before that data is there, so that shape is not
// checked at load time, and forward gives the data's.
TEST(Nnp, LoadsAnOutputShapeThatDependsOnTheData) {
  const std::string path =
      write_nnp("nonzero.nnp",
                edited(edited(kRelu, "\"ReLU\"", "\"NonZero\""),
                       "name: \"y\" type: \"Buffer\" shape { dim: -1 dim: 3 }",
                       "name: \"y\" type: \"Buffer\" shape { dim: 2 dim: 4 }"));
  mg::ParameterScope params;
  const mg::Network net = mg::load_nnp(path, params).executor("runtime");
  fill(net.input("x"), {0, 2, 3, 0, 5, 6});
  net.output("y")->forward();
  ASSERT_EQ(net.output("y")->shape(), (mg::Shape{2, 4}));
  EXPECT_EQ(values(net.output("y")),
            (std::vector<float>{0, 0, 1, 1, 1, 2, 1, 2}));
  std::remove(path.c_str());
}

// What NNabla's schema cannot hold is refused by name: our own argument
// away from its default (left out at it, MaxPooling's including_pad is
// written as NNabla's), and a null output.
TEST(Nnp, SaveRefusesWhatNNablaCannotHold) {
  mg::ParameterScope params;
  auto x = mg::make_variable({1, 1, 4, 4});
  const std::string path = temp("refused.nnp");
  mg::save_nnp(path, "net", {{"y", F::max_pooling(x, {2, 2})}}, params);
  mg::PoolingOptions opts;
  opts.including_pad = false;
  auto y = F::max_pooling(x, {2, 2}, opts);
  try {
    mg::save_nnp(path, "net", {{"y", y}}, params);
    ADD_FAILURE() << "saved";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[save_nnp] function MaxPooling: NNabla's MaxPooling has no "
                  "argument 'including_pad'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(mg::save_nnp(path, "net", {{"y", nullptr}}, params),
               std::invalid_argument);
  std::remove(path.c_str());
}

// NNabla 1.39 writes four models with nnabla.utils.save.save (parameters in
// parameter.h5, one in parameter.protobuf); we load each and give NNabla's
// outputs. We write each back (two as binary network.protobuf) and NNabla's
// NnpLoader runs them to the same outputs.
TEST(Nnp, ExchangedWithNNablaBothWays) {
  SKIP_WITHOUT_NNABLA();
  const std::string dir = temp("nnabla");
  std::filesystem::create_directories(dir);
  const std::string script = MIXGRAPH_SOURCE_DIR "/tests/utils/nnp_nnabla.py";
  auto python = [&](const std::string& mode) {
    return std::system(
        (mg::test::nnabla_python() + " " + script + " " + mode + " " + dir)
            .c_str());
  };
  ASSERT_EQ(python("write"), 0) << "NNabla's script failed (output above)";
  for (const char* model :
       {"cnn_bn", "resnet_block", "mlp_layer_norm", "lstm"}) {
    SCOPED_TRACE(model);
    mg::ParameterScope io, params;
    mg::load_parameters(dir + "/" + model + "_io.h5", io);
    const mg::Nnp nnp = mg::load_nnp(dir + "/" + model + ".nnp", params);
    const mg::Network net = nnp.executor("runtime");
    for (const auto& [name, v] : net.inputs) fill(v, values(io.get(name)));
    net.output("y")->forward();
    const auto ours = values(net.output("y")), theirs = values(io.get("y"));
    ASSERT_EQ(ours.size(), theirs.size());
    float err = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      err = std::max(err, std::fabs(ours[i] - theirs[i]));
    }
    std::printf("mixgraph runs NNabla's %s.nnp: max |dy| = %.3g\n", model, err);
    EXPECT_LE(err, 1e-5f);
    mg::SaveNnpOptions options;
    options.binary =
        std::string(model) == "cnn_bn" || std::string(model) == "lstm";
    mg::save_nnp(dir + "/" + model + "_ours.nnp", nnp, params, options);
  }
  EXPECT_EQ(python("check"), 0) << "NNabla's outputs differ (printed above)";
  std::filesystem::remove_all(dir);
}

// utils/nnp/nnabla.proto has NNabla 1.39's messages, field names, numbers,
// types and labels (binary .protobuf files store the numbers): compared
// with the descriptor of NNabla's own nnabla_pb2.
TEST(Nnp, SchemaIsNNablas) {
  SKIP_WITHOUT_NNABLA();
  const std::string set = temp("schema.pb");
  const std::string protoc = std::string(MIXGRAPH_PROTOC) +
                             " --descriptor_set_out=" + set +
                             " -I" MIXGRAPH_SOURCE_DIR
                             "/mixgraph/utils/nnp "
                             "nnabla.proto";
  ASSERT_EQ(std::system(protoc.c_str()), 0) << protoc;
  const std::string check =
      mg::test::nnabla_python() +
      " " MIXGRAPH_SOURCE_DIR "/tests/utils/nnp_nnabla.py schema " + set;
  EXPECT_EQ(std::system(check.c_str()), 0)
      << "the schema differs from NNabla's (printed above)";
  std::remove(set.c_str());
}
