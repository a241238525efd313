// Mixed precision inference conversion: which parameters are cast, which
// stay fp32, the file's size, and the converted model's outputs against
// the float model's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <mixgraph/mixgraph.hpp>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("mg_convert_" + name))
      .string();
}

mg::VariablePtr net(const mg::VariablePtr& x, const mg::ParameterScope& p) {
  auto h = PF::convolution(x, 8, {3, 3}, p["conv1"]);
  h = F::relu(PF::batch_normalization(h, p["bn1"], /*batch_stat=*/false));
  h = F::max_pooling(h, {2, 2});
  return F::softmax(PF::affine(h, 5, p["fc"]));
}

std::vector<float> values(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

}  // namespace

TEST(InferenceConversion, CastsWhatTheReducedFunctionsReadAndKeepsTheRest) {
  for (const char* type_config : {"half", "bfloat16"}) {
    SCOPED_TRACE(type_config);
    mg::seed(5);
    const std::string yaml = temp("net.yaml"), h5 = temp("float.h5"),
                      out = temp("converted.h5");
    auto x = mg::make_variable({4, 2, 10, 10});
    x->set_name("x");
    mg::uniform_initializer(-1, 1)(*x->data());
    std::vector<float> want;
    {
      mg::ContextGuard f(mg::context("cpu", "float"));
      mg::ParameterScope params;
      auto y = net(x, params);
      // Running statistics away from 0 and 1, as after training.
      mg::uniform_initializer(0.5f, 2.0f)(*params.get("bn1/bn/var")->data());
      mg::uniform_initializer(-0.5f, 0.5f)(*params.get("bn1/bn/mean")->data());
      y->forward();
      want = values(y);
      mg::save_network(yaml, "net", {{"y", y}}, params, {true});
      mg::save_parameters(h5, params);
    }
    const mg::InferenceConversion c = mg::convert_network_for_inference(
        yaml, h5, yaml, out, mg::context("cpu", type_config));
    EXPECT_EQ(c.type_config, type_config);
    // The running statistics are fp32 ports: they stay fp32.
    EXPECT_EQ(c.kept_float,
              (std::vector<std::string>{"bn1/bn/mean", "bn1/bn/var"}));
    EXPECT_EQ(c.reduced.size(), 6u);  // conv W, b; bn beta, gamma; fc W, b
    EXPECT_LT(c.bytes_after, c.bytes_before * 0.51);
    const double ratio = static_cast<double>(std::filesystem::file_size(out)) /
                         std::filesystem::file_size(h5);
    EXPECT_LT(ratio, 0.7) << "the file shrinks (HDF5's own metadata stays)";

    // Loaded in its type_config, the converted model gives float's output
    // to the reduced type's precision.
    mg::ContextGuard ctx(mg::context("cpu", type_config));
    mg::ParameterScope params;
    mg::Network loaded = mg::load_trained_network(yaml, out, params, {4});
    EXPECT_EQ(
        params.get("conv1/conv/W")->data()->array().dtype(),
        std::string(type_config) == "half" ? mg::Dtype::f16 : mg::Dtype::bf16);
    EXPECT_EQ(params.get("bn1/bn/var")->data()->array().dtype(),
              mg::Dtype::f32);
    const float* xs = x->data()->get<const float>();
    std::copy(xs, xs + x->size(), loaded.input("x")->data()->cast<float>());
    loaded.output("y")->forward();
    const auto got = values(loaded.output("y"));
    float err = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      err = std::max(err, std::fabs(got[i] - want[i]));
    }
    EXPECT_LT(err, std::string(type_config) == "half" ? 1e-3f
                                                      : 1e-2f);  // 1.5e-4, 1e-3
    std::printf("%s: max |p - p_float| = %.3g, file %.2fx\n", type_config, err,
                ratio);
    for (const auto& f : {yaml, h5, out}) std::remove(f.c_str());
  }
}

TEST(InferenceConversion, ParametersAFloatFunctionReadsStayFp32) {
  // A layer the user's policy keeps in fp32 (here Mul2): the parameter it
  // reads stays fp32 under half, the affine layer's are cast.
  mg::PrecisionPolicy::instance().set("Mul2", mg::Precision::float32);
  mg::ContextGuard ctx(mg::context("cpu", "half"));
  mg::ParameterScope params;
  auto x = mg::make_variable({2, 3});
  auto h = PF::affine(x, 4, params["a"]);
  auto w = params["b"].get_or_create("w", {1, 4}, mg::constant_initializer(2));
  auto y = F::mul2(h, w);
  const auto c = mg::convert_parameters_for_inference({y}, params);
  mg::PrecisionPolicy::instance().reset();
  EXPECT_EQ(c.reduced, (std::vector<std::string>{"a/affine/W", "a/affine/b"}));
  EXPECT_EQ(c.kept_float, (std::vector<std::string>{"b/w"}));
  EXPECT_EQ(w->data()->array().dtype(), mg::Dtype::f32);
}

TEST(InferenceConversion, FusedConvolutionKeepsItsRunningStatisticsFp32) {
  // FusedConvolution places its optional inputs by their count: with batch
  // normalization (6 inputs) the running mean is its 5th, on the `mean`
  // port (fp32), not the 5th declared port (`gamma`, which follows the
  // type_config).
  mg::ContextGuard ctx(mg::context("cpu", "half"));
  mg::ParameterScope params;
  auto x = mg::make_variable({2, 2, 4, 4});
  auto p = [&](const char* name, mg::Shape shape) {
    return params["fc"].get_or_create(name, shape, mg::constant_initializer(1));
  };
  // One at a time: the order they are made is the order they are listed.
  auto w = p("W", {3, 2, 3, 3});
  auto beta = p("beta", {1, 3, 1, 1}), gamma = p("gamma", {1, 3, 1, 1});
  auto mean = p("mean", {1, 3, 1, 1}), var = p("var", {1, 3, 1, 1});
  auto y = F::fused_convolution(x, w, nullptr, beta, gamma, mean, var, nullptr);
  const auto c = mg::convert_parameters_for_inference({y}, params);
  EXPECT_EQ(c.reduced,
            (std::vector<std::string>{"fc/W", "fc/beta", "fc/gamma"}));
  EXPECT_EQ(c.kept_float, (std::vector<std::string>{"fc/mean", "fc/var"}));
}
