// The registry's fallback walk, the precision policy, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

// A function registered only for cpu:float, to see the fallback.
struct FloatOnlyOptions {};
class FloatOnly : public Function {
 public:
  explicit FloatOnly(const FloatOnlyOptions&) {}
  std::string name() const override { return "FloatOnlyForTest"; }
  int min_inputs() const override { return 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    out[0]->reshape(in[0]->shape());
  }
  void forward_impl(const Variables& in, const Variables& out) override {
    const float* x = in[0]->data()->get<const float>();
    float* y = out[0]->data()->cast<float>(true);
    for (int64_t i = 0; i < in[0]->size(); ++i) y[i] = x[i] + 1;
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&, const std::vector<bool>&) override {}
};

void expect_message(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected an exception mentioning: " << part;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Registry, AFunctionWithoutAHalfKernelFallsBackToFloat) {
  register_one<FloatOnly, FloatOnlyOptions>(FunctionRegistry::instance(),
                                            "FloatOnlyForTest",
                                            {"cpu", Dtype::f32});
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2}, {1, 2});
  auto y = apply_function1("FloatOnlyForTest", FloatOnlyOptions{}, {x});
  EXPECT_EQ(y->parent()->function().backend().str(), "cpu:float");
  auto z = F::relu(y);  // the next half function reads the float output
  z->forward();
  EXPECT_EQ(z->parent()->function().dtype(), Dtype::f16);
  EXPECT_EQ(to_doubles(z), (Doubles{2, 3}));
}

TEST(Registry, ListsFunctionsAndTheirBackends) {
  auto& r = FunctionRegistry::instance();
  EXPECT_TRUE(r.has("Affine"));
  EXPECT_FALSE(r.has("NoSuchFunction"));
  auto b = r.backends("ReLU");
  // cpu:float, cpu:half, cpu:bfloat16 (and cuda:* in a CUDA build).
  EXPECT_EQ(std::count_if(b.begin(), b.end(),
                          [](const Backend& k) { return k.name == "cpu"; }),
            3);
  auto names = r.names();
  EXPECT_NE(std::find(names.begin(), names.end(), "Add2"), names.end());
}

TEST(Registry, UnknownFunctionIsNamed) {
  expect_message(
      [] { create_function("NoSuchFunction", ops::ReLU{}); },
      "[create_function] unknown function 'NoSuchFunction'");
}

TEST(Registry, MissingBackendListsWhatWasTried) {
  // TopNError is a metric with CPU kernels only, in every build.
  expect_message(
      [] {
        create_function("TopNError", TopNErrorOptions{},
                        parse_context("cuda:half,cuda:float"));
      },
      "TopNError has no implementation for context 'cuda:half,cuda:float' "
      "(tried cuda:half, cuda:float); it is implemented for cpu:float, "
      "cpu:half, cpu:bfloat16");
}

TEST(Registry, OptionsOfTheWrongTypeAreRejected) {
  expect_message([] { create_function("ReLU", ops::Tanh{}); },
                 "ReLU was given options of the wrong type");
}

TEST(PrecisionPolicy, DefaultKeepsExpAndLogInFloat) {
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2}, {1, 2});
  EXPECT_EQ(F::exp(x)->parent()->function().dtype(), Dtype::f32);
  EXPECT_EQ(F::relu(x)->parent()->function().dtype(), Dtype::f16);
}

TEST(PrecisionPolicy, RunTimeOverrideForOneFunction) {
  auto& policy = PrecisionPolicy::instance();
  ContextGuard g(context("cpu", "bfloat16"));
  auto x = variable_from({2}, {1, 2});
  policy.set("ReLU", Precision::float32);
  EXPECT_EQ(F::relu(x)->parent()->function().dtype(), Dtype::f32);
  policy.set("Exp", Precision::reduced);
  EXPECT_EQ(F::exp(x)->parent()->function().dtype(), Dtype::bf16);
  policy.reset();
  EXPECT_EQ(F::relu(x)->parent()->function().dtype(), Dtype::bf16);
}

TEST(PrecisionPolicy, LoadsAUserFile) {
  const std::string path = ::testing::TempDir() + "policy.yaml";
  {
    std::ofstream f(path);
    f << "reduced: [Exp]\nfloat: [ReLU, Tanh]\n";
  }
  auto& policy = PrecisionPolicy::instance();
  policy.load_file(path);
  EXPECT_EQ(policy.get("Exp"), Precision::reduced);
  EXPECT_EQ(policy.get("Tanh"), Precision::float32);
  EXPECT_EQ(policy.get("Unlisted"), Precision::reduced);
  EXPECT_NE(policy.to_yaml().find("ReLU"), std::string::npos);
  policy.reset();
  EXPECT_EQ(policy.get("Exp"), Precision::float32);
  std::remove(path.c_str());
}

TEST(PrecisionPolicy, BadYamlNamesTheSourceAndLine) {
  PrecisionPolicy p;
  expect_message([&] { p.load_string("reduced: [Affine\nfloat: [Exp]", "my.yaml"); },
                 "[PrecisionPolicy] my.yaml:");
  expect_message([&] { p.load_string("reduced: [Affine]\nfast: [Exp]\n", "my.yaml"); },
                 "my.yaml:2: unknown key 'fast'");
  expect_message([&] { p.load_string("float: Exp\n", "my.yaml"); },
                 "my.yaml:1: 'float' must be a list of function names");
  expect_message([&] { p.load_file("/nonexistent/policy.yaml"); },
                 "cannot open '/nonexistent/policy.yaml'");
  EXPECT_EQ(p.get("Exp"), Precision::float32) << "a failed load keeps the old policy";
}

}  // namespace
}  // namespace mg::test
