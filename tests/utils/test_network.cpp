// Networks written to YAML and rebuilt into graphs that compute the same.
#include <gtest/gtest.h>

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
  EXPECT_NE(yaml.find("conv1/W"), std::string::npos) << yaml;

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
  expect_load_error(std::string(kHead) +
                        "    - {type: Relu, inputs: [x], outputs: [y], args: {}}\n",
                    "net.yaml:8: unknown function 'Relu'");
  expect_load_error(std::string(kHead) +
                        "    - {type: LeakyReLU, inputs: [x], outputs: [y], args: {}}\n",
                    "net.yaml:8: [LeakyReLU] missing argument 'alpha'");
  expect_load_error(std::string(kHead) +
                        "    - {type: LeakyReLU, inputs: [x], outputs: [y], "
                        "args: {alpha: fast}}\n",
                    "net.yaml:8: [LeakyReLU] argument 'alpha' must be a number, "
                    "got string");
  expect_load_error(std::string(kHead) +
                        "    - {type: ReLU, inputs: [x], outputs: [y], "
                        "args: {alpha: 1}}\n",
                    "net.yaml:8: [ReLU] unknown argument 'alpha'");
  expect_load_error(std::string(kHead) +
                        "    - {type: ReLU, inputs: [z], outputs: [y]}\n",
                    "net.yaml:8: ReLU reads 'z', which no input");
  expect_load_error(std::string(kHead) +
                        "    - {type: Affine, inputs: [x, x], outputs: [y], "
                        "args: {base_axis: 1}}\n",
                    "net.yaml:8: [affine] x with shape (2, 3)");
  expect_load_error(std::string(kHead) +
                        "    - {type: ReLU, inputs: [x], outputs: [w]}\n",
                    "output 'y' is never computed");
}

}  // namespace
}  // namespace mg::test
