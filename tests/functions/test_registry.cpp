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
inline constexpr FunctionDeclOf<FloatOnlyOptions> kFloatOnly{
    {"FloatOnlyForTest", "float_only_for_test", {Port{"x"}}, {Port{"y"}}}};
class FloatOnly : public Function {
 public:
  explicit FloatOnly(const FloatOnlyOptions&) {}

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
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
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
  register_one<FloatOnly>(FunctionRegistry::instance(), kFloatOnly,
                          {"cpu", Dtype::f32});
  ContextGuard g(context("cpu", "half"));
  auto x = variable_from({2}, {1, 2});
  auto y = apply_function1(kFloatOnly, FloatOnlyOptions{}, {x});
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

TEST(Registry, UnknownFunctionIsNamedWithTheNearestNames) {
  auto& r = FunctionRegistry::instance();
  expect_message(
      [&] {
        r.create_from_args("NoSuchFunction", context("cpu", "float"), {});
      },
      "[create_function] unknown function 'NoSuchFunction'");
  expect_message(
      [&] { r.create_from_args("Tahn", context("cpu", "float"), {}); },
      "unknown function 'Tahn'; did you mean 'Tanh' or 'Tan'?");
  expect_message(
      [&] { r.decl("tanh", "load_network"); },
      "[load_network] unknown function 'tanh'; did you mean 'Tanh'?");
}

TEST(Registry, ADeclarationIsTheOnlyPlaceANameIsWritten) {
  // The builder's tag, the registry's key and the function's name all come
  // from decl::MaxPooling.
  auto x = make_variable({1, 1, 4, 4});
  auto y = F::max_pooling(x, {2, 2});
  const Function& f = y->parent()->function();
  EXPECT_EQ(&f.decl(), &static_cast<const FunctionDecl&>(decl::MaxPooling));
  EXPECT_EQ(f.name(), "MaxPooling");
  EXPECT_EQ(f.tag(), "[max_pooling] ");
  EXPECT_EQ(FunctionRegistry::instance().find_decl("MaxPooling"),
            &static_cast<const FunctionDecl&>(decl::MaxPooling));
  // A second declaration under a taken name is refused.
  static constexpr FunctionDeclOf<FloatOnlyOptions> impostor{
      {"MaxPooling", "max_pooling", {Port{"x"}}, {Port{"y"}}}};
  EXPECT_THROW(register_one<FloatOnly>(FunctionRegistry::instance(), impostor,
                                       {"cpu", Dtype::f32}),
               std::logic_error);
}

TEST(Registry, FunctionListDescribesEveryFunction) {
  const auto list = function_list();
  EXPECT_EQ(list.size(), FunctionRegistry::instance().names().size());
  auto find = [&](const std::string& name) -> const FunctionInfo& {
    for (const auto& info : list) {
      if (name == info.decl->name) return info;
    }
    throw std::runtime_error("not listed: " + name);
  };
  const FunctionInfo& sce = find("SoftmaxCrossEntropy");
  EXPECT_STREQ(sce.decl->snake, "softmax_cross_entropy");
  ASSERT_EQ(sce.decl->inputs.size, 2);
  EXPECT_EQ(sce.decl->inputs[1].kind, Port::integer);
  EXPECT_FALSE(sce.decl->inputs[1].grad);
  EXPECT_EQ(find("Exp").precision, Precision::float32);
  EXPECT_EQ(find("Affine").decl->min_inputs(), 2);
  EXPECT_EQ(find("Affine").decl->max_inputs(), 3);
  EXPECT_EQ(find("Concatenate").decl->max_inputs(), INT32_MAX);
  for (const auto& info : list) {
    SCOPED_TRACE(info.decl->name);
    // This file's own test function is registered for float only.
    if (std::string(info.decl->name) == kFloatOnly.name) continue;
    EXPECT_EQ(std::count_if(info.backends.begin(), info.backends.end(),
                            [](const Backend& b) { return b.name == "cpu"; }),
              3)
        << "every function runs on the CPU in float, half and bfloat16";
  }
}

TEST(Registry, MissingBackendListsWhatWasTried) {
  // TopNError is a metric with CPU kernels only, in every build.
  expect_message(
      [] {
        create_function(decl::TopNError, TopNErrorOptions{},
                        parse_context("cuda:half,cuda:float"));
      },
      "TopNError has no implementation for context 'cuda:half,cuda:float' "
      "(tried cuda:half, cuda:float); it is implemented for cpu:float, "
      "cpu:half, cpu:bfloat16");
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
  EXPECT_EQ(policy.get("Log"), Precision::float32)
      << "a function the file does not mention keeps its default";
  EXPECT_EQ(policy.get("Sigmoid"), Precision::reduced);
  EXPECT_NE(policy.to_yaml().find("ReLU"), std::string::npos);
  policy.reset();
  EXPECT_EQ(policy.get("Exp"), Precision::float32);
  std::remove(path.c_str());
}

TEST(PrecisionPolicy, BadYamlNamesTheSourceAndLine) {
  PrecisionPolicy p;
  expect_message(
      [&] { p.load_string("reduced: [Affine\nfloat: [Exp]", "my.yaml"); },
      "[PrecisionPolicy] my.yaml:");
  expect_message(
      [&] { p.load_string("reduced: [Affine]\nfast: [Exp]\n", "my.yaml"); },
      "my.yaml:2: unknown key 'fast'");
  expect_message([&] { p.load_string("float: Exp\n", "my.yaml"); },
                 "my.yaml:1: 'float' must be a list of function names");
  expect_message(
      [&] { p.load_string("reduced: [Affine]\nfloat: [Tahn]\n", "my.yaml"); },
      "my.yaml:2: unknown function 'Tahn'; did you mean 'Tanh' or 'Tan'?");
  expect_message(
      [&] { p.load_string("reduced: [Exp]\nfloat: [Exp]\n", "my.yaml"); },
      "my.yaml:2: 'Exp' is listed under both reduced and float");
  expect_message([&] { p.load_string("accumulate_float: [Sum]\n", "my.yaml"); },
                 "my.yaml:1: 'accumulate_float' is no longer a category");
  expect_message([&] { p.set("NoSuch", Precision::float32); },
                 "[PrecisionPolicy] unknown function 'NoSuch'");
  expect_message([&] { p.get("NoSuch"); },
                 "[PrecisionPolicy] unknown function 'NoSuch'");
  expect_message([&] { p.load_file("/nonexistent/policy.yaml"); },
                 "cannot open '/nonexistent/policy.yaml'");
  EXPECT_EQ(p.get("Exp"), Precision::float32)
      << "a failed load keeps the old policy";
}

TEST(PrecisionPolicy, DefaultIsGeneratedFromTheDeclarations) {
  const std::string yaml = default_policy_yaml();
  PrecisionPolicy p;
  p.load_string(yaml, "<default>");
  for (const auto& info : function_list()) {
    SCOPED_TRACE(info.decl->name);
    EXPECT_NE(yaml.find(info.decl->name), std::string::npos);
    EXPECT_EQ(p.get(*info.decl), info.decl->precision);
  }
}

// NNabla's optional arguments are optional: an argument left out keeps its
// default (NNabla's), one given is read with its type, and a name the
// function does not take is still an error.
TEST(Registry, AnArgumentLeftOutTakesItsDefaultAndAnUnknownOneIsAnError) {
  auto& r = FunctionRegistry::instance();
  const Context ctx = context("cpu", "float");
  const FunctionArgs defaults =
      r.create_from_args("LeakyReLU", ctx, {})->args();
  ASSERT_EQ(defaults.size(), 2u);
  EXPECT_EQ(defaults[0].first, "alpha");
  EXPECT_DOUBLE_EQ(std::get<double>(defaults[0].second), 0.1f);
  EXPECT_EQ(defaults[1].first, "inplace");
  EXPECT_FALSE(std::get<bool>(defaults[1].second));
  auto y = apply_from_args("LeakyReLU", {}, {variable_from({2}, {-2, 3})});
  expect_near(to_doubles(y[0]), {-0.2, 3}, 1e-6, 0, "alpha 0.1");
  const FunctionArgs sum =
      r.create_from_args("Sum", ctx, {{"keep_dims", true}})->args();
  EXPECT_TRUE(std::get<std::vector<int64_t>>(sum[0].second).empty());
  EXPECT_TRUE(std::get<bool>(sum[1].second));
  expect_message(
      [&] {
        r.create_from_args("LeakyReLU", ctx, {{"alpah", 0.2}});
      },
      "[LeakyReLU] unknown argument 'alpah'");
  expect_message(
      [&] {
        r.create_from_args("ReLU", ctx, {{"inplace", false}, {"alpha", 0.2}});
      },
      "[ReLU] unknown argument 'alpha'");
  expect_message(
      [&] {
        r.create_from_args("LeakyReLU", ctx, {{"alpha", std::string("fast")}});
      },
      "[LeakyReLU] argument 'alpha' must be a number, got string");
  expect_message(
      [&] {
        r.create_from_args("ReLU", ctx, {{"inplace", int64_t{1}}});
      },
      "[ReLU] argument 'inplace' must be a bool, got int");
}

}  // namespace
}  // namespace mg::test
