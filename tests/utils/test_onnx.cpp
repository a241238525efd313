// ONNX export and import: every mapped function written by save_onnx, read
// back by load_onnx and (where onnxruntime is installed: scripts/
// install_onnxruntime.sh makes .venv-onnx) run by onnxruntime, against
// our own forward; a representative set of them evaluated offline by NumPy
// references of the operators (run_numpy_reference.py); a model written by the
// ONNX project's Python helper (Debian's python3-onnx) as PyTorch's exporter
// writes it; fp16 models from the inference conversion; and the errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <system_error>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/inference.hpp>
#include <mixgraph/utils/onnx.hpp>
#ifdef MIXGRAPH_WITH_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

namespace fs = std::filesystem;

// This process's scratch folder, removed when the process ends (CTest runs
// a process per test, or per suite: each would leave one behind).
const fs::path& temp_dir() {
  struct Dir {
    fs::path path =
        fs::temp_directory_path() / ("mg_onnx_" + std::to_string(::getpid()));
    Dir() { fs::create_directories(path); }
    ~Dir() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

std::string ort_python() {
  if (const char* p = std::getenv("MIXGRAPH_ONNXRUNTIME_PYTHON")) return p;
  return MIXGRAPH_SOURCE_DIR "/.venv-onnx/bin/python";
}

bool ort_available() {
  const std::string cmd =
      ort_python() + " -c 'import onnxruntime' >/dev/null 2>&1";
  return fs::exists(ort_python()) && std::system(cmd.c_str()) == 0;
}

std::vector<float> values(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

void fill(const mg::VariablePtr& v, const std::vector<float>& data) {
  std::copy(data.begin(), data.end(), v->data()->cast<float>());
}

// max |a - b| / (1 + |b|).
double max_error(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double e = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    e = std::max(e, std::abs(double(a[i]) - b[i]) / (1.0 + std::abs(b[i])));
  }
  return e;
}

// A graph of one input x: (x, params) -> y.
struct Case {
  std::string name;
  mg::Shape shape;
  std::function<mg::VariablePtr(const mg::VariablePtr&, mg::ParameterScope&)>
      build;
  bool integer_input = false;  // ids 0..9 (Embed)
};

mg::VariablePtr pos(const mg::VariablePtr& x) {  // > 0: for log, sqrt, pow
  return F::add_scalar(F::abs(x), 0.5f);
}

mg::VariablePtr param(mg::ParameterScope& p, const std::string& name,
                      const mg::Shape& shape, float lo = -1, float hi = 1) {
  return p.get_or_create(name, shape, mg::uniform_initializer(lo, hi));
}

std::vector<Case> cases() {
  using V = mg::VariablePtr;
  using P = mg::ParameterScope;
  const mg::Shape img{2, 3, 6, 6}, mat{2, 3, 4};
  std::vector<Case> c;
  auto add = [&](std::string name, mg::Shape s,
                 std::function<V(const V&, P&)> b) {
    c.push_back({std::move(name), std::move(s), std::move(b)});
  };
  // A LeNet with batch normalization, as trained in the tutorials.
  add("lenet_bn", {2, 1, 12, 12}, [](const V& x, P& p) {
    PF::ConvolutionParams padded;
    padded.pad = {1, 1};
    auto h = PF::convolution(x, 4, {3, 3}, p["conv1"], padded);
    h = PF::batch_normalization(h, p["bn1"], /*batch_stat=*/false);
    h = F::max_pooling(F::relu(h), {2, 2});
    h = PF::convolution(h, 6, {3, 3}, p["conv2"]);
    h = F::average_pooling(F::relu(h), {2, 2});
    return F::softmax(PF::affine(h, 5, p["fc3"]), 1);
  });
  const std::pair<const char*, V (*)(const V&)> unary[] = {
      {"relu", F::relu},
      {"sigmoid", F::sigmoid},
      {"tanh", F::tanh},
      {"gelu", F::gelu},
      {"swish", F::swish},
      {"mish", F::mish},
      {"log_sigmoid", F::log_sigmoid},
      {"softsign", F::softsign},
      {"relu6", F::relu6},
      {"hard_sigmoid", F::hard_sigmoid},
      {"hard_tanh", F::hard_tanh},
      {"tanh_shrink", F::tanh_shrink},
      {"exp", F::exp},
      {"abs", F::abs},
      {"sin", F::sin},
      {"cos", F::cos},
      {"atan", F::atan},
      {"erf", F::erf},
      {"asinh", F::asinh},
      {"sinh", F::sinh},
      {"floor", F::floor},
      {"ceil", F::ceil},
      {"identity", F::identity},
      {"unlink", F::unlink},
      {"logical_not", F::logical_not}};
  for (const auto& [name, fn] : unary) {
    add(name, mat, [fn = fn](const V& x, P&) { return fn(x); });
  }
  add("log", mat, [](const V& x, P&) { return F::log(pos(x)); });
  add("sqrt", mat, [](const V& x, P&) { return F::sqrt(pos(x)); });
  add("rsqrt", mat, [](const V& x, P&) { return F::rsqrt(pos(x)); });
  add("softplus_beta2", mat, [](const V& x, P&) { return F::softplus(x, 2); });
  add("elu", mat, [](const V& x, P&) { return F::elu(x, 0.7f); });
  add("selu", mat, [](const V& x, P&) { return F::selu(x); });
  add("leaky_relu", mat, [](const V& x, P&) { return F::leaky_relu(x, .2f); });
  add("clip_by_value", mat,
      [](const V& x, P&) { return F::clip_by_value(x, -0.3f, 0.6f); });
  add("scalars", mat, [](const V& x, P&) {
    auto h = F::mul_scalar(F::add_scalar(x, 0.5f), 1.5f);
    h = F::maximum_scalar(F::minimum_scalar(h, 1.2f), -0.8f);
    h = F::add2(F::r_sub_scalar(h, 2.0f), F::r_div_scalar(pos(x), 1.5f));
    return F::add2(F::pow_scalar(pos(h), 1.7f), F::r_pow_scalar(x, 1.3f));
  });
  add("binary", mat, [](const V& x, P& p) {
    auto w = param(p, "w", {1, 3, 4});
    auto h = F::sub2(F::mul2(x, w), F::div2(F::sin(x), pos(w)));
    h = F::maximum2(h, F::minimum2(F::cos(x), w));
    return F::add2(F::pow2(pos(h), F::sigmoid(x)), F::bc_add2(x, w));
  });
  add("compare", mat, [](const V& x, P&) {
    auto c = F::cos(x);
    auto h = F::add2(F::greater(x, c), F::less_equal(x, c));
    h = F::add2(h, F::mul_scalar(F::greater_scalar(x, 0.1f), 2));
    h = F::add2(
        h, F::mul_scalar(
               F::logical_and(F::greater(x, c), F::less_scalar(x, 0.5f)), 4));
    return F::add2(h, F::mul_scalar(F::not_equal_scalar(F::floor(x), 0), 8));
  });
  add("where", mat, [](const V& x, P&) {
    return F::where(F::greater_scalar(x, 0), x, F::sin(x));
  });
  add("add_n", mat, [](const V& x, P&) {
    return F::add_n({x, F::sin(x), F::cos(x)});
  });
  add("reshape_transpose", mat, [](const V& x, P&) {
    return F::transpose(F::reshape(x, {2, 4, 3}), {2, 0, 1});
  });
  add("concat_stack_split", mat, [](const V& x, P&) {
    auto h = F::concatenate({x, F::sin(x)}, 1);  // (2, 6, 4)
    auto parts = F::split(F::stack({h, F::cos(h)}, 0), 0);
    return F::add2(parts[0], F::mul_scalar(parts[1], 2));
  });
  add("slice_flip", mat, [](const V& x, P&) {
    return F::flip(F::slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}), {0, 2});
  });
  add("pad_tile_broadcast", mat, [](const V& x, P&) {
    auto h = F::add2(F::pad(x, {1, 2}, "constant", 0.5f),
                     F::pad(x, {2, 1}, "reflect"));
    h = F::add2(h, F::pad(x, {0, 3}, "repeat"));
    auto t = F::tile(F::slice(x, {0, 0, 0}, {1, 1, 7}), {2, 3, 1});
    return F::add2(
        F::slice(h, {0, 0, 0}, {2, 3, 4}),
        F::add2(t, F::broadcast(F::slice(x, {0, 0, 0}, {2, 1, 4}), {2, 3, 4})));
  });
  add("reductions", mat, [](const V& x, P&) {
    auto a = F::sum(x, {1}, true);      // (2, 1, 4)
    auto b = F::mean(x, {2}, false);    // (2, 3)
    auto m = F::max(x, {1, 2}, false);  // (2,)
    auto n = F::min(x, {0}, true);      // (1, 3, 4)
    auto q = F::prod(F::add_scalar(F::mul_scalar(x, 0.1f), 1), {2}, true);
    auto h = F::add2(F::add2(x, a), F::add2(n, q));
    h = F::add2(h, F::reshape(b, {2, 3, 1}));
    h = F::add2(h, F::reshape(m, {2, 1, 1}));
    return F::add2(F::reshape(F::reduce_sum(x), {1, 1, 1}),
                   F::add2(h, F::reshape(F::reduce_mean(x), {1, 1, 1})));
  });
  add("softmax", mat, [](const V& x, P&) {
    return F::add2(F::softmax(x, 1), F::log_softmax(x, 2));
  });
  add("batch_matmul", mat, [](const V& x, P&) {
    return F::batch_matmul(x, F::sin(x), false, true);
  });
  add("affine_base_axis_2", mat, [](const V& x, P& p) {
    PF::AffineParams base2;
    base2.base_axis = 2;
    return PF::affine(x, 5, p["fc"], base2);
  });
  add("depthwise_convolution", img, [](const V& x, P& p) {
    PF::DepthwiseConvolutionParams padded;
    padded.pad = {1, 1};
    return PF::depthwise_convolution(x, {3, 3}, p["dw"], padded);
  });
  add("convolution_groups_strides", img, [](const V& x, P& p) {
    mg::ConvolutionOptions o;
    o.pad = {1, 2};
    o.stride = {2, 1};
    o.dilation = {1, 2};
    o.group = 3;
    return F::convolution(x, param(p, "W", {6, 1, 3, 3}), param(p, "b", {6}),
                          o);
  });
  add("deconvolution", img, [](const V& x, P& p) {
    mg::DeconvolutionOptions o;
    o.pad = {1, 1};
    o.stride = {2, 2};
    o.output_padding = {1, 1};
    return F::deconvolution(x, param(p, "W", {3, 2, 3, 3}), param(p, "b", {2}),
                            o);
  });
  add("pooling", img, [](const V& x, P&) {
    mg::PoolingOptions avg;
    avg.pad = {1, 1};
    avg.stride = {2, 2};
    avg.including_pad = false;
    mg::PoolingOptions open;
    open.ignore_border = false;
    auto a = F::average_pooling(x, {3, 3}, avg);  // (2, 3, 3, 3)
    auto s = F::sum_pooling(x, {2, 2});           // (2, 3, 3, 3)
    auto m = F::max_pooling(F::slice(x, {0, 0, 0, 0}, {2, 3, 5, 5}), {2, 2},
                            open);  // (2, 3, 3, 3)
    return F::add2(F::add2(a, s), F::add2(m, F::global_average_pooling(x)));
  });
  add("interpolate", {2, 3, 4, 5}, [](const V& x, P&) {
    auto a = F::interpolate(x, {7, 9}, "linear", true);
    auto b = F::interpolate(x, {7, 9}, "linear", false, true);
    auto c = F::interpolate(x, {7, 9}, "linear", false, false);
    auto d = F::interpolate(x, {7, 9}, "nearest", false);
    auto e = F::interpolate(x, {7, 9}, "nearest", false, false, true);
    return F::add_n({a, b, c, d, e});
  });
  add("normalizations", img, [](const V& x, P& p) {
    auto h = PF::layer_normalization(x, p["ln"]);
    h = F::add2(h, PF::instance_normalization(x, p["in"]));
    return PF::prelu(h, p["prelu"], 1, /*shared=*/false);
  });
  add("batch_normalization_1d", {4, 3}, [](const V& x, P& p) {
    return PF::batch_normalization(x, p["bn"], /*batch_stat=*/false);
  });
  // NNabla's no_bias and no_scale: ONNX's B and scale written as constants.
  add("batch_normalization_no_bias_no_scale", img, [](const V& x, P& p) {
    mg::BatchNormalizationOptions o;
    o.batch_stat = false;
    o.no_bias = true;
    auto g = F::batch_normalization(x, nullptr, param(p, "gamma", {1, 3, 1, 1}),
                                    param(p, "mean", {1, 3, 1, 1}),
                                    param(p, "var", {1, 3, 1, 1}), o);
    o.no_bias = false;
    o.no_scale = true;
    auto b = F::batch_normalization(x, param(p, "beta2", {1, 3, 1, 1}), nullptr,
                                    param(p, "mean2", {1, 3, 1, 1}),
                                    param(p, "var2", {1, 3, 1, 1}), o);
    o.no_bias = true;
    auto n = F::batch_normalization(x, nullptr, nullptr,
                                    param(p, "mean3", {1, 3, 1, 1}),
                                    param(p, "var3", {1, 3, 1, 1}), o);
    return F::add2(F::add2(g, b), n);
  });
  // Recurrent layers: the exporter converts our gate order and weight
  // layout to ONNX's (the importer reads them back).
  add("lstm", {5, 2, 3}, [](const V& x, P& p) {
    auto [y, h, c] = F::lstm(x, param(p, "lstm/h0", {1, 1, 2, 4}),
                             param(p, "lstm/c0", {1, 1, 2, 4}),
                             param(p, "lstm/weight_l0", {1, 4, 4, 3 + 4}),
                             nullptr, param(p, "lstm/bias", {1, 1, 4, 4}));
    // y, and the last states beside it.
    return F::concatenate(
        {F::reshape(y, {40}), F::reshape(h, {8}), F::reshape(c, {8})}, 0);
  });
  add("gru_bidirectional_2_layers", {4, 2, 3}, [](const V& x, P& p) {
    mg::GRUOptions o;
    o.num_layers = 2;
    o.bidirectional = true;
    auto [y, h] = F::gru(x, param(p, "gru/h0", {2, 2, 2, 3}),
                         param(p, "gru/weight_l0", {2, 3, 3, 3 + 3}),
                         param(p, "gru/weight", {1, 2, 3, 3, 2 * 3 + 3}),
                         param(p, "gru/bias", {2, 2, 4, 3}), o);
    return F::concatenate({F::reshape(y, {48}), F::reshape(h, {24})}, 0);
  });
  add("rnn_relu_no_bias", {4, 2, 3}, [](const V& x, P& p) {
    mg::RNNOptions o;
    o.nonlinearity = "relu";
    auto [y, h] =
        F::rnn(x, param(p, "rnn/h0", {1, 1, 2, 4}),
               param(p, "rnn/weight_l0", {1, 4, 3 + 4}), nullptr, nullptr, o);
    return y;
  });
  // A transformer encoder block as our functions build it: multi-head
  // attention (Affine, BatchMatmul, Softmax, Reshape, Transpose), layer
  // normalization over the last axis of (L, B, E), a GELU feed-forward.
  add("transformer_block", {5, 2, 8}, [](const V& x, P& p) {
    auto h = F::add2(x, PF::multi_head_attention(x, x, x, 8, 2, p["mha"]));
    h = PF::layer_normalization(h, p["ln1"], {0, 1});
    PF::AffineParams seq;
    seq.base_axis = 2;
    auto f =
        PF::affine(F::gelu(PF::affine(h, 16, p["ff1"], seq)), 8, p["ff2"], seq);
    return PF::layer_normalization(F::add2(h, f), p["ln2"], {0, 1});
  });
  // Causal self-attention (a decoder's): the mask is part of the model (an
  // initializer), not a second input the reader would have to feed.
  add("causal_attention", {5, 2, 8}, [](const V& x, P& p) {
    return PF::multi_head_attention(x, x, x, 8, 2, p["mha"], /*causal=*/true);
  });
  // The fused attention as the model's output: its composition's last
  // MatMul writes the output the graph names.
  add("fused_attention_output", {2, 5, 8}, [](const V& x, P&) {
    return F::scaled_dot_product_attention(x, x, x, /*causal=*/true);
  });
  c.push_back({"embed",
               {2, 5},
               [](const V& x, P& p) { return PF::embed(x, 10, 3, p["embed"]); },
               /*integer_input=*/true});
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct Built {
  mg::VariablePtr x, y;
  std::vector<float> input, output;
};

// Builds a case in the default context with random parameters (BN's
// running statistics too) and runs it.
Built build(const Case& c, mg::ParameterScope& params) {
  mg::seed(11);
  Built b;
  b.x = mg::make_variable(c.shape);
  b.x->set_name("x");
  b.y = c.build(b.x, params);
  for (const auto& [name, v] : params.parameters(/*grad_only=*/false)) {
    if (name.find("/var") != std::string::npos) {
      mg::uniform_initializer(0.5f, 1.5f)(*v->data());
    } else {
      mg::uniform_initializer(-1, 1)(*v->data());
    }
  }
  b.input.resize(static_cast<size_t>(b.x->size()));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (auto& v : b.input) v = c.integer_input ? float(rng() % 10) : u(rng);
  fill(b.x, b.input);
  b.y->forward();
  b.output = values(b.y);
  return b;
}

class OnnxCase : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

// Written by save_onnx, read by load_onnx into a new scope: the same
// outputs, parameters under the same names.
TEST_P(OnnxCase, RoundTripGivesTheSameOutputs) {
  const Case& c = GetParam();
  mg::ParameterScope params;
  Built b = build(c, params);
  const std::string path = (temp_dir() / (c.name + ".onnx")).string();
  mg::save_onnx(path, c.name, {{"y", b.y}}, params);

  mg::ParameterScope loaded;
  mg::Network net = mg::load_onnx(path, loaded);
  ASSERT_EQ(net.inputs.size(), 1u);
  EXPECT_EQ(net.inputs[0].first, "x");
  fill(net.input("x"), b.input);
  auto y = net.output("y");
  y->forward();
  EXPECT_EQ(y->shape(), b.y->shape());
  EXPECT_LE(max_error(values(y), b.output), 1e-6) << c.name;
  for (const auto& [name, v] : params.parameters(/*grad_only=*/false)) {
    // A recurrent layer's deeper layers are ONNX nodes of their own: they
    // come back as such ("gru/l1/weight_l0" for layer 1 of "gru/weight").
    if (name == "gru/weight") {
      EXPECT_TRUE(loaded.get("gru/l1/weight_l0"));
      continue;
    }
    EXPECT_TRUE(loaded.get(name)) << "parameter " << name << " not loaded";
  }
}

INSTANTIATE_TEST_SUITE_P(Functions, OnnxCase, ::testing::ValuesIn(cases()),
                         case_name);

// Runs `script` (run_onnxruntime.py's manifest) with `python` on the cases
// named in `which` (every case when empty), exported by save_onnx, and
// checks its outputs against our forward within `tolerance` (max_error).
void run_exported_cases(const std::string& python, const std::string& script,
                        const std::set<std::string>& which,
                        const std::string& runner, double tolerance) {
  const fs::path dir = temp_dir();
  std::map<std::string, std::vector<float>> expected;
  const std::string prefix = runner + "_";
  std::ofstream manifest(dir / (prefix + "manifest.txt"));
  for (const Case& c : cases()) {
    if (!which.empty() && !which.count(c.name)) continue;
    mg::ParameterScope params;
    Built b = build(c, params);
    const std::string base = (dir / (prefix + c.name)).string();
    mg::save_onnx(base + ".onnx", c.name, {{"y", b.y}}, params);
    std::ofstream(base + ".in", std::ios::binary)
        .write(reinterpret_cast<const char*>(b.input.data()),
               static_cast<std::streamsize>(b.input.size() * 4));
    std::string shape;
    for (int64_t d : c.shape)
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    manifest << base << ".onnx " << base << ".in " << shape << " " << base
             << ".out\n";
    expected[c.name] = b.output;
  }
  manifest.close();
  EXPECT_EQ(expected.size(), which.empty() ? cases().size() : which.size())
      << "a case named in the list does not exist";
  const std::string cmd = python + " " MIXGRAPH_SOURCE_DIR "/tests/utils/" +
                          script + " " +
                          (dir / (prefix + "manifest.txt")).string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const auto& [name, want] : expected) {
    const std::string out = (dir / (prefix + name + ".out")).string();
    if (fs::exists(out + ".err")) {
      std::ifstream e(out + ".err");
      ADD_FAILURE() << name << ": " << runner << ": " << e.rdbuf();
      continue;
    }
    std::ifstream in(out, std::ios::binary);
    std::vector<float> got(want.size());
    in.read(reinterpret_cast<char*>(got.data()),
            static_cast<std::streamsize>(got.size() * 4));
    ASSERT_TRUE(in) << name << ": short output";
    const double err = max_error(got, want);
    EXPECT_LE(err, tolerance) << name;
    std::printf("%-28s %s vs mixgraph: max error %.2g\n", name.c_str(),
                runner.c_str(), err);
  }
}

// Every case above run by onnxruntime from the file we wrote: ONNX's own
// semantics of each operator against our forward, within 1e-5 (float).
TEST(Onnx, OnnxRuntimeRunsEveryExportedFunction) {
  if (!ort_available()) {
    GTEST_SKIP() << "onnxruntime is not installed (bash "
                    "scripts/install_onnxruntime.sh makes .venv-onnx; or set "
                    "MIXGRAPH_ONNXRUNTIME_PYTHON)";
  }
  run_exported_cases(ort_python(), "run_onnxruntime.py", {}, "onnxruntime",
                     1e-5);
}

// Offline, with Debian's packages only: a representative set of the cases
// above evaluated operator by operator by run_numpy_reference.py (ONNX's
// definitions of the operators written in NumPy, apart from our exporter
// and importer), within 1e-5 (our float32 against its float64).
TEST(Onnx, NumpyReferenceRunsRepresentativeCases) {
  if (std::system("/usr/bin/python3 -c 'import onnx, numpy' >/dev/null 2>&1")) {
    GTEST_SKIP() << "Debian's python3-onnx is not installed (apt-get install "
                    "python3-onnx)";
  }
  run_exported_cases("/usr/bin/python3", "run_numpy_reference.py",
                     {"lenet_bn",
                      "relu",
                      "sigmoid",
                      "tanh",
                      "exp",
                      "erf",
                      "leaky_relu",
                      "binary",
                      "reshape_transpose",
                      "concat_stack_split",
                      "slice_flip",
                      "reductions",
                      "softmax",
                      "batch_matmul",
                      "affine_base_axis_2",
                      "convolution_groups_strides",
                      "pooling",
                      "batch_normalization_1d",
                      "pad_tile_broadcast",
                      "embed"},
                     "numpy", 1e-5);
}

// A model as PyTorch's exporter writes it (Gemm with transB, a flatten
// through Shape/Gather/Unsqueeze/Concat/Reshape, BatchNormalization, a free
// batch), made by the ONNX project's Python helper: our outputs equal
// NumPy's forward of it.
TEST(Onnx, ReadsAModelWrittenByOnnxsPythonHelper) {
  if (std::system("/usr/bin/python3 -c 'import onnx, numpy' >/dev/null 2>&1")) {
    GTEST_SKIP() << "Debian's python3-onnx is not installed (apt-get install "
                    "python3-onnx)";
  }
  const fs::path dir = temp_dir();
  const std::string model = (dir / "helper.onnx").string(),
                    in = (dir / "helper.in").string(),
                    out = (dir / "helper.out").string();
  const std::string cmd = "/usr/bin/python3 " MIXGRAPH_SOURCE_DIR
                          "/tests/utils/make_onnx_model.py " +
                          model + " " + in + " " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  mg::ParameterScope params;
  mg::Network net = mg::load_onnx(model, params, {/*batch_size=*/3});
  EXPECT_EQ(net.name, "torch_like_cnn");
  auto x = net.input("input");
  ASSERT_EQ(x->shape(), (mg::Shape{3, 2, 6, 6}));
  std::vector<float> xin(static_cast<size_t>(x->size())), want(15);
  std::ifstream(in, std::ios::binary)
      .read(reinterpret_cast<char*>(xin.data()), xin.size() * 4);
  std::ifstream(out, std::ios::binary)
      .read(reinterpret_cast<char*>(want.data()), want.size() * 4);
  fill(x, xin);
  auto y = net.output("output");
  y->forward();
  EXPECT_LE(max_error(values(y), want), 1e-5);
  // Gemm's transposed weight is held transposed once, as affine's (in, out).
  ASSERT_TRUE(params.get("fc1.weight"));
  EXPECT_EQ(params.get("fc1.weight")->shape(), (mg::Shape{36, 8}));
  EXPECT_EQ(params.get("bn.running_mean")->shape(), (mg::Shape{1, 4, 1, 1}));
  EXPECT_FALSE(params.get("bn.running_mean")->need_grad());
  EXPECT_TRUE(params.get("conv.weight")->need_grad());
}

// A free batch: written as "N", read at any batch size.
TEST(Onnx, FreeBatchRunsAtAnotherBatchSize) {
  const Case c = cases()[0];  // the LeNet
  mg::ParameterScope params;
  Built b = build(c, params);
  const std::string path = (temp_dir() / "free.onnx").string();
  mg::save_onnx(path, "lenet", {{"y", b.y}}, params, {/*free_batch=*/true});
  mg::ParameterScope loaded;
  EXPECT_THROW(
      {
        try {
          mg::load_onnx(path, loaded);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("input 'x' has a free batch"),
                    std::string::npos)
              << e.what();
          EXPECT_NE(std::string(e.what()).find("batch_size"),
                    std::string::npos);
          throw;
        }
      },
      std::invalid_argument);
  mg::Network net = mg::load_onnx(path, loaded, {/*batch_size=*/1});
  auto x1 = net.input("x");
  ASSERT_EQ(x1->shape(), (mg::Shape{1, 1, 12, 12}));
  // The second sample alone gives the second row.
  const size_t per = static_cast<size_t>(x1->size());
  fill(x1, std::vector<float>(b.input.begin() + per, b.input.end()));
  auto y = net.output("y");
  y->forward();
  const std::vector<float> row(b.output.begin() + 5, b.output.end());
  EXPECT_LE(max_error(values(y), row), 1e-6);
}

// The inference conversion's fp16 model: fp16 initializers (half the file),
// float inputs and outputs; loaded in a half context it computes what the
// converted graph computes, and onnxruntime runs it where it can.
TEST(Onnx, HalfModelHasFp16InitializersAndRuns) {
  const Case c = cases()[0];
  mg::ParameterScope params;
  Built b = build(c, params);
  const std::string float_path = (temp_dir() / "lenet_float.onnx").string();
  mg::save_onnx(float_path, "lenet", {{"y", b.y}}, params);

  mg::ContextGuard half(mg::context("cpu", "half"));
  auto x = mg::make_variable(c.shape);
  x->set_name("x");
  auto y = c.build(x, params);  // the same parameters, functions in half
  const mg::InferenceConversion conv =
      mg::convert_parameters_for_inference({y}, params);
  EXPECT_FALSE(conv.reduced.empty());
  fill(x, b.input);
  y->forward();
  const std::vector<float> ours = values(y);
  EXPECT_LE(max_error(ours, b.output), 1e-2);  // half vs float

  const std::string half_path = (temp_dir() / "lenet_half.onnx").string();
  mg::save_onnx(half_path, "lenet", {{"y", y}}, params);
  const double ratio = static_cast<double>(fs::file_size(half_path)) /
                       static_cast<double>(fs::file_size(float_path));
  // A tiny LeNet: the graph itself and the fp32 statistics are a fifth of
  // the file (tutorial 06 measures the real LeNet: about half).
  EXPECT_LT(ratio, 0.85);
  std::printf("fp16 ONNX file: %.2fx the float one\n", ratio);

  mg::ParameterScope loaded;
  mg::Network net = mg::load_onnx(half_path, loaded);
  fill(net.input("x"), b.input);
  net.output("y")->forward();
  EXPECT_LE(max_error(values(net.output("y")), ours), 1e-3);
  // The fp16 initializers stay fp16 in the scope.
  EXPECT_EQ(loaded.get("conv1/conv/W")->data()->array().dtype(),
            mg::Dtype::f16);

  if (ort_available()) {
    const std::string base = (temp_dir() / "ort_half").string();
    std::ofstream(base + ".in", std::ios::binary)
        .write(reinterpret_cast<const char*>(b.input.data()),
               static_cast<std::streamsize>(b.input.size() * 4));
    std::ofstream(base + ".txt")
        << half_path << " " << base << ".in 2,1,12,12 " << base << ".out\n";
    ASSERT_EQ(std::system((ort_python() +
                           " " MIXGRAPH_SOURCE_DIR
                           "/tests/utils/run_onnxruntime.py " +
                           base + ".txt")
                              .c_str()),
              0);
    if (fs::exists(base + ".out.err")) {
      std::ifstream e(base + ".out.err");
      ADD_FAILURE() << "onnxruntime cannot run the fp16 model: " << e.rdbuf();
    } else {
      std::vector<float> got(ours.size());
      std::ifstream(base + ".out", std::ios::binary)
          .read(reinterpret_cast<char*>(got.data()), got.size() * 4);
      const double err = max_error(got, ours);
      EXPECT_LE(err, 1e-2);
      std::printf("fp16 model: onnxruntime vs mixgraph half: max error %.2g\n",
                  err);
    }
  }
}

// What cannot be written or read says what and why.
#ifdef MIXGRAPH_WITH_ONNX
// ScaledDotProductAttention, which ONNX lacks, is written as its
// composition (Function::composition) in the type it computes in: under
// half, the model casts to fp16 (the input, the scale, the mask), and it
// computes what our fused function does.
TEST(Onnx, FusedAttentionIsWrittenAsItsCompositionInItsType) {
  mg::ContextGuard half(mg::context("cpu", "half"));
  auto x = mg::make_variable({2, 5, 8});
  x->set_name("x");
  auto y = F::scaled_dot_product_attention(x, x, x, /*causal=*/true);
  ASSERT_EQ(y->parent()->function().name(), "ScaledDotProductAttention");
  std::vector<float> input(x->size());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : input) v = normal(rng);
  fill(x, input);
  y->forward();
  const std::vector<float> ours = values(y);

  mg::ParameterScope params;
  const std::string path = (temp_dir() / "attention_half.onnx").string();
  mg::save_onnx(path, "attention", {{"y", y}}, params);
  onnx::ModelProto model;
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(model.ParseFromIstream(&file)) << path;
  std::multiset<std::string> ops;
  bool casts_to_half = false;
  for (const auto& node : model.graph().node()) {
    ops.insert(node.op_type());
    for (const auto& a : node.attribute()) {
      casts_to_half |= node.op_type() == "Cast" && a.name() == "to" &&
                       a.i() == onnx::TensorProto::FLOAT16;
    }
  }
  EXPECT_EQ(ops.count("Softmax"), 1u);
  EXPECT_EQ(ops.count("MatMul"), 2u);
  EXPECT_TRUE(casts_to_half) << "the composition was not written in half";

  mg::ParameterScope loaded;
  mg::Network net = mg::load_onnx(path, loaded);
  fill(net.input("x"), input);
  net.output("y")->forward();
  // The composed form rounds the scores and weights to half; the fused one
  // keeps them in fp32.
  EXPECT_LE(max_error(values(net.output("y")), ours), 1e-2);
}
#endif

TEST(Onnx, ErrorsNameTheFunctionOrTheFile) {
  mg::ParameterScope params;
  auto x = mg::make_variable({4, 3});
  auto t = mg::make_variable({4, 1});
  auto loss =
      F::mean(F::softmax_cross_entropy(PF::affine(x, 5, params["fc"]), t));
  const std::string path = (temp_dir() / "bad.onnx").string();
  try {
    mg::save_onnx(path, "loss", {{"loss", loss}}, params);
    ADD_FAILURE() << "a loss was written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'SoftmaxCrossEntropy'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path));

  auto bn = PF::batch_normalization(x, params["bn"], /*batch_stat=*/true);
  try {
    mg::save_onnx(path, "bn", {{"y", bn}}, params);
    ADD_FAILURE() << "batch statistics were written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("batch_stat"), std::string::npos)
        << e.what();
  }

  std::ofstream(path) << "not a model";
  mg::ParameterScope loaded;
  try {
    mg::load_onnx(path, loaded);
    ADD_FAILURE() << "garbage was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(mg::load_onnx((temp_dir() / "missing.onnx").string(), loaded),
               std::invalid_argument);

  // A parameter of another shape in the scope is an error naming it.
  const Case c = cases()[0];
  mg::ParameterScope p1;
  Built b = build(c, p1);
  const std::string lenet = (temp_dir() / "lenet_err.onnx").string();
  mg::save_onnx(lenet, "lenet", {{"y", b.y}}, p1);
  mg::ParameterScope other;
  other.get_or_create("conv1/conv/W", {2, 2}, mg::constant_initializer(0));
  try {
    mg::load_onnx(lenet, other);
    ADD_FAILURE() << "a mismatched parameter was overwritten";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv1/conv/W"), std::string::npos)
        << e.what();
  }
}

TEST(Onnx, ListsWhatIsMapped) {
  const auto out = mg::onnx_exportable_functions();
  const auto in = mg::onnx_importable_operators();
  EXPECT_TRUE(std::count(out.begin(), out.end(), "Convolution"));
  EXPECT_TRUE(std::count(in.begin(), in.end(), "Gemm"));
  EXPECT_GT(out.size(), 80u);
  // The converters are keyed by the registered names: a renamed function
  // would otherwise drop out of the exporter silently.
  for (const auto& name : out) {
    EXPECT_TRUE(mg::FunctionRegistry::instance().has(name))
        << "save_onnx maps '" << name
        << "', which is not a registered function";
  }
  std::printf("save_onnx writes %zu functions; load_onnx reads %zu operators\n",
              out.size(), in.size());
}

// docs/onnx.md lists the operators load_onnx reads in a table, and gives
// the counts of both lists in its text: each against what is mapped.
TEST(Onnx, TheDocsListEveryImportedOperator) {
  const auto in = mg::onnx_importable_operators();
  const auto out = mg::onnx_exportable_functions();
  if (in.empty()) GTEST_SKIP() << "built without ONNX";
  const std::string path = MIXGRAPH_SOURCE_DIR "/docs/onnx.md";
  std::ifstream file(path);
  ASSERT_TRUE(file) << "cannot read " << path;
  std::stringstream ss;
  ss << file.rdbuf();
  const std::string doc = ss.str();
  const std::string begin = "<!-- ONNX operators:",
                    end = "<!-- end of the ONNX operators -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos) << path << " lacks the line " << begin;
  ASSERT_NE(e, std::string::npos) << path << " lacks the line " << end;
  // Rows "| group | Name, Name (a note), ... |" after the header and rule.
  std::set<std::string> listed;
  std::istringstream rows(doc.substr(b, e - b));
  std::string row;
  int line = 0;
  while (std::getline(rows, row)) {
    if (++line <= 3 || row.empty()) continue;  // comment, header, rule
    const size_t cell = row.find(" | ");
    ASSERT_NE(cell, std::string::npos) << path << ": " << row;
    std::istringstream names(row.substr(cell + 3, row.rfind(" |") - cell - 3));
    std::string name;
    while (std::getline(names, name, ',')) {
      name = name.substr(name.find_first_not_of(' '));
      name = name.substr(0, name.find(' '));  // drop "(`ceil_mode` too)"
      EXPECT_TRUE(listed.insert(name).second) << name << " is listed twice";
    }
  }
  const std::set<std::string> read(in.begin(), in.end());
  for (const auto& name : read) {
    EXPECT_TRUE(listed.count(name)) << path << "'s table lacks " << name;
  }
  for (const auto& name : listed) {
    EXPECT_TRUE(read.count(name))
        << path << " lists " << name << ", which load_onnx does not read";
  }
  const std::string ops =
      "the " + std::to_string(in.size()) + " ONNX operators";
  EXPECT_NE(doc.find(ops), std::string::npos)
      << path << " lacks '" << ops << "'";
  const std::string fns = "the " + std::to_string(out.size()) + " functions";
  EXPECT_NE(doc.find(fns), std::string::npos)
      << path << " lacks '" << fns << "'";
}

}  // namespace
