// Networks written to YAML and rebuilt into graphs that compute the same.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/yaml/network.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

// A small convolutional network touching functions with list, float, int and
// bool arguments.
VariablePtr build(const VariablePtr& x, ParameterScope& params) {
  PF::ConvolutionParams conv;
  conv.pad = {1, 1};
  auto h = F::relu(PF::convolution(x, 4, {3, 3}, params["conv1"], conv));
  h = F::max_pooling(h, {2, 2});
  h = F::leaky_relu(h, 0.2f);
  h = PF::batch_normalization(h, params["bn1"], /*batch_stat=*/false);
  h = F::add_scalar(F::mul_scalar(h, 0.5f), 0.25f);
  auto y = PF::affine(h, 3, params["fc"]);
  return F::softmax(y, 1);
}

TEST(Network, RoundTripThroughYamlGivesTheSameOutputs) {
  seed(2);
  ParameterScope params;
  auto x = make_variable({2, 1, 6, 6});
  x->set_name("image");
  auto y = build(x, params);
  uniform_initializer()(*x->data());
  y->forward();
  const std::string yaml = network_to_yaml("tiny", {{"prob", y}}, params);
  EXPECT_NE(yaml.find("type: Convolution"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("conv1/conv/W"), std::string::npos) << yaml;

  Network net = network_from_yaml(yaml, params);
  EXPECT_EQ(net.name, "tiny");
  ASSERT_EQ(net.inputs.size(), 1u);
  EXPECT_EQ(net.inputs[0].first, "image");
  net.input("image")->set_data(x->data());
  auto y2 = net.output("prob");
  y2->forward();
  EXPECT_EQ(to_doubles(y2), to_doubles(y));
}

TEST(Network, SavesToAFileAndLoadsInANewScopeWithParameters) {
  seed(3);
  ParameterScope params;
  auto x = make_variable({2, 1, 6, 6});
  auto y = build(x, params);
  uniform_initializer()(*x->data());
  y->forward();
  const std::string path = ::testing::TempDir() + "net.yaml";
  const std::string h5 = ::testing::TempDir() + "net.h5";
  save_network(path, "tiny", {{"prob", y}}, params);
  save_parameters(h5, params);
  ParameterScope fresh;
  load_parameters(h5, fresh);
  Network net = load_network(path, fresh);
  net.input("x0")->set_data(x->data());
  net.output("prob")->forward();
  EXPECT_EQ(to_doubles(net.output("prob")), to_doubles(y));
}

// Causal attention composed of NNabla's functions makes its mask a
// constant of the graph: the file keeps its values (-inf included), and the
// network loads with one input, not two, and computes the same, in the
// file's YAML and through a file.
TEST(Network, AConstantTravelsWithItsValues) {
  seed(4);
  ParameterScope params;
  auto x = make_variable({2, 3, 8});
  x->set_name("tokens");
  PF::AffineParams per_token;
  per_token.base_axis = 2;
  auto q = PF::affine(x, 8, params["q"], per_token);
  auto y = F::scaled_dot_product_attention_composed(q, x, x, /*causal=*/true);
  uniform_initializer()(*x->data());
  y->forward();
  const std::string yaml = network_to_yaml("attn", {{"y", y}}, params);
  EXPECT_NE(yaml.find("constants:"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("-.inf"), std::string::npos) << yaml;
  const std::string path = ::testing::TempDir() + "attn.yaml";
  save_network(path, "attn", {{"y", y}}, params);
  for (const Network& net :
       {network_from_yaml(yaml, params), load_network(path, params)}) {
    ASSERT_EQ(net.inputs.size(), 1u) << yaml;
    EXPECT_EQ(net.inputs[0].first, "tokens");
    net.input("tokens")->set_data(x->data());
    net.output("y")->forward();
    EXPECT_EQ(to_doubles(net.output("y")), to_doubles(y));
    // Written again, the constant is still one.
    EXPECT_EQ(network_to_yaml("attn", {{"y", net.output("y")}}, params), yaml);
  }
}

// A constant named like a parameter would be read back as the parameter
// (and .nnp stores constants among the parameters): refused when saving.
TEST(Network, AConstantNamedLikeAParameterIsRefused) {
  ParameterScope params;
  auto x = make_variable({2});
  auto w = params.get_or_create("w", {2}, constant_initializer(1));
  auto c = make_variable({2});
  c->set_constant(true);
  c->set_name("w");
  auto y = F::add2(F::add2(x, c), w);
  expect_error(
      [&] {
        network_to_yaml("net", {{"y", y}}, params);
      },
      {"constant 'w' has the name of a parameter"}, "[save_network]");
}

TEST(Network, ABadConstantIsReportedWithItsLine) {
  const std::string head = R"(network:
  name: bad
  inputs:
    - {name: x, shape: [2]}
  parameters: []
)";
  const std::string tail = R"(  outputs: [y]
  functions:
    - {type: Add2, inputs: [x, c], outputs: [y], args: {}}
)";
  ParameterScope params;
  auto expect = [&](const std::string& constants, const std::string& part) {
    try {
      network_from_yaml(head + constants + tail, params, "net.yaml");
      ADD_FAILURE() << "loaded " << constants;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << e.what();
    }
  };
  expect("  constants:\n    - {name: c, shape: [2], data: [1]}\n",
         "net.yaml:7: constant 'c' of shape (2,) needs 2 values");
  expect("  constants:\n    - {name: c, shape: [2], data: [1, x]}\n",
         "constant 'c': 'x' is not a number");
  expect("  constants:\n    - {name: c, shape: [2]}\n",
         "constant c lacks 'data'");
  // And a good one computes.
  Network net = network_from_yaml(
      head + "  constants:\n    - {name: c, shape: [2], data: [1, .inf]}\n" +
          tail,
      params, "net.yaml");
  float* x = net.input("x")->data()->cast<float>(true);
  x[0] = 2;
  x[1] = 3;
  net.output("y")->forward();
  EXPECT_EQ(to_doubles(net.output("y")),
            (std::vector<double>{3, std::numeric_limits<double>::infinity()}));
}

void expect_load_error(const std::string& yaml, const std::string& part) {
  ParameterScope params;
  try {
    network_from_yaml(yaml, params, "net.yaml");
    FAIL() << "expected an error mentioning " << part;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

const char* kHead = R"(network:
  name: bad
  inputs:
    - {name: x, shape: [2, 3]}
  parameters: []
  outputs: [y]
  functions:
)";

TEST(Network, BadYamlIsReportedWithFileAndLine) {
  expect_load_error("network: {name: [unclosed\n", "[load_network] net.yaml:");
  expect_load_error(
      std::string(kHead) +
          "    - {type: Relu, inputs: [x], outputs: [y], args: {}}\n",
      "net.yaml:8: unknown function 'Relu'; did you mean 'ReLU'");
  expect_load_error(
      std::string(kHead) +
          "    - {type: LeakyReLU, inputs: [x], outputs: [y], "
          "args: {alpha: fast}}\n",
      "net.yaml:8: [LeakyReLU] argument 'alpha' must be a number, "
      "got string");
  expect_load_error(std::string(kHead) +
                        "    - {type: ReLU, inputs: [x], outputs: [y], "
                        "args: {alpha: 1}}\n",
                    "net.yaml:8: [ReLU] unknown argument 'alpha'; it takes "
                    "'inplace'");
  // A typo names the argument it stands for, and what the function takes.
  expect_load_error(std::string(kHead) +
                        "    - {type: LeakyReLU, inputs: [x], outputs: [y], "
                        "args: {alpah: 0.2}}\n",
                    "net.yaml:8: [LeakyReLU] unknown argument 'alpah' (did you "
                    "mean 'alpha'?); it takes 'alpha', 'inplace'");
  expect_load_error(std::string(kHead) +
                        "    - {type: Sum, inputs: [x], outputs: [y], "
                        "args: {axis: [1], keep_dims: false, colour: 1}}\n",
                    "net.yaml:8: [Sum] unknown arguments 'axis' (did you mean "
                    "'axes'?), 'colour'; it takes 'axes', 'keep_dims'");
  expect_load_error(std::string(kHead) +
                        "    - {type: LeakyReLU, inputs: [x], outputs: [y], "
                        "args: {alpha: 0.1, inplace: 1.5}}\n",
                    "net.yaml:8: [LeakyReLU] argument 'inplace' must be a "
                    "bool, got float");
  expect_load_error(
      std::string(kHead) + "    - {type: ReLU, inputs: [z], outputs: [y]}\n",
      "net.yaml:8: ReLU reads 'z', which no input");
  expect_load_error(std::string(kHead) +
                        "    - {type: Affine, inputs: [x, x], outputs: [y], "
                        "args: {base_axis: 1}}\n",
                    "net.yaml:8: [affine] x with shape (2, 3)");
  expect_load_error(
      std::string(kHead) + "    - {type: ReLU, inputs: [x], outputs: [w]}\n",
      "output 'y' is never computed");
}

// A network written with NNabla's own argument lists (functions.yaml's
// names and defaults, the optional ones given or left out) loads and
// computes what NNabla computes: Convolution and MaxPooling with
// channel_last, ReLU with inplace, MaxPooling without including_pad,
// BatchNormalization with no_scale and no_bias on (x, mean, variance),
// Split without num_outputs, LeakyReLU with no arguments at all.
TEST(Network, NNablasArgumentListsLoadAndMeanWhatNNablaMeans) {
  const std::string yaml = R"(network:
  name: nnabla_lists
  inputs:
    - {name: x, shape: [1, 1, 2, 4]}
    - {name: w, shape: [1, 1, 1, 1]}
    - {name: mean, shape: [1, 1, 1, 1]}
    - {name: var, shape: [1, 1, 1, 1]}
  parameters: []
  outputs: [y0, y1]
  functions:
    - {type: Convolution, inputs: [x, w], outputs: [c], args: {base_axis: 1,
       pad: [0, 0], stride: [1, 1], dilation: [1, 1], group: 1,
       channel_last: false}}
    - {type: ReLU, inputs: [c], outputs: [r], args: {inplace: true}}
    - {type: MaxPooling, inputs: [r], outputs: [p], args: {kernel: [2, 2],
       stride: [2, 2], ignore_border: true, pad: [0, 0], channel_last: false}}
    - {type: BatchNormalization, inputs: [p, mean, var], outputs: [b],
       args: {axes: [1], decay_rate: 0.9, eps: 0.0, batch_stat: false,
       no_scale: true, no_bias: true}}
    - {type: LeakyReLU, inputs: [b], outputs: [l]}
    - {type: Split, inputs: [l], outputs: [y0, y1], args: {axis: 3}}
)";
  ParameterScope params;
  Network net = network_from_yaml(yaml, params, "nnabla.yaml");
  net.input("x")->set_data(
      variable_from({1, 1, 2, 4}, {1, -5, 2, 0, 3, 4, -8, -1})->data());
  net.input("w")->set_data(variable_from({1, 1, 1, 1}, {2})->data());
  net.input("mean")->set_data(variable_from({1, 1, 1, 1}, {5})->data());
  net.input("var")->set_data(variable_from({1, 1, 1, 1}, {4})->data());
  // conv: 2x; relu: (2, 0, 4, 0; 6, 8, 0, 0); max pool 2x2: (8, 4);
  // normalised with mean 5, variance 4: (1.5, -0.5); leaky (alpha 0.1):
  // (1.5, -0.05); split along axis 3: y0 = (1.5), y1 = (-0.05).
  auto y0 = net.output("y0"), y1 = net.output("y1");
  y0->forward();
  y1->forward();
  EXPECT_EQ(y0->shape(), (Shape{1, 1, 1}));
  expect_near(to_doubles(y0), {1.5}, 1e-6, 0, "y0");
  expect_near(to_doubles(y1), {-0.05}, 1e-6, 0, "y1");
}

// ---- inference: a free batch dimension, parameters loaded with the network
// ----

TEST(Network, AFreeBatchDimensionIsSetAtLoadTime) {
  seed(4);
  ParameterScope params;
  auto x = make_variable({2, 1, 6, 6});
  auto y = build(x, params);
  uniform_initializer()(*x->data());
  y->forward();
  const std::string dir = ::testing::TempDir();
  save_network(dir + "free.yaml", "tiny", {{"prob", y}}, params,
               {/*free_batch=*/true});
  save_parameters(dir + "free.h5", params);
  std::ifstream in(dir + "free.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(yaml.find("shape: [~, 1, 6, 6]"), std::string::npos) << yaml;

  // Five images, the first two those of the training graph: the same answers.
  ParameterScope loaded;
  Network net = load_trained_network(dir + "free.yaml", dir + "free.h5", loaded,
                                     {/*batch_size=*/5});
  ASSERT_EQ(net.input("x0")->shape(), (Shape{5, 1, 6, 6}));
  float* in5 = net.input("x0")->data()->cast<float>(true);
  const float* in2 = x->data()->get<const float>();
  for (int i = 0; i < 5 * 36; ++i) in5[i] = in2[i % (2 * 36)];
  net.output("prob")->forward();
  const Doubles want = to_doubles(y), got = to_doubles(net.output("prob"));
  ASSERT_EQ(got.size(), 5u * 3u);
  // Equal up to the rounding of sums blocked by batch size.
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i % 6], 1e-6) << i;
  }

  // -1 works as null does; no batch size is an error that says what to set.
  std::string minus = yaml;
  minus.replace(minus.find("[~,"), 3, "[-1,");
  ParameterScope p2;
  load_parameters(dir + "free.h5", p2);
  EXPECT_EQ(network_from_yaml(minus, p2, "m.yaml", {3}).input("x0")->shape(),
            (Shape{3, 1, 6, 6}));
  try {
    network_from_yaml(minus, p2, "m.yaml");
    ADD_FAILURE() << "a free batch dimension needs a batch size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "input 'x0' has a free batch dimension (null or -1): set "
                  "NetworkOptions::batch_size"),
              std::string::npos)
        << e.what();
  }
}

TEST(Network, AParameterWithoutAValueIsAnErrorNotZeros) {
  seed(5);
  ParameterScope params;
  auto y = build(make_variable({2, 1, 6, 6}), params);
  const std::string yaml = network_to_yaml("tiny", {{"prob", y}}, params);
  ParameterScope partial;
  partial["conv1/conv"].get_or_create("W", {4, 1, 3, 3},
                                      constant_initializer(1));
  partial["conv1/conv"].get_or_create("b", {4}, constant_initializer(1));
  try {
    network_from_yaml(yaml, partial, "tiny.yaml");
    ADD_FAILURE() << "missing parameters must be an error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[load_network] tiny.yaml: these parameters have no value "
                     "in the scope (load them first with load_parameters, or "
                     "use load_trained_network):"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("'bn1/bn/beta'"), std::string::npos) << m;
    EXPECT_NE(m.find("'fc/affine/W'"), std::string::npos) << m;
    EXPECT_EQ(m.find("'conv1/conv/W'"), std::string::npos) << m;
  }
  EXPECT_EQ(partial.parameters().size(), 2u) << "nothing was created";
}

}  // namespace
}  // namespace mg::test
