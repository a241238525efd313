// Networks written to YAML and rebuilt into graphs that compute the same.
#include <gtest/gtest.h>

#include <fstream>

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
