// The harness on the device: every case that tests/functions/ registers
// with harness::add (the cases test_harness.cpp runs on the CPU against
// double references and numerical grads) runs here in cudnn:<type> and in
// cpu:<type> from the same inputs and output grads, in float, half and
// bfloat16, and the device must agree with the host: the output, the
// inputs' grads, grads added to existing ones, grads under clear_buffer,
// and integer inputs fed as int32. The CPU backend is the one checked
// against references; this checks the device against it.
//
// Built into test_functions (where the cases are registered); CTest lists
// these tests as cuda.* (tests/CMakeLists.txt). Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

#include "../support/harness.hpp"
#include "cuda_test.hpp"

namespace mg::test::cuda_harness_tests {
namespace {

struct Param {
  std::string function;
  std::string type_config;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.function << " in " << p.type_config;
}

std::vector<Param> every_function_and_type() {
  std::vector<Param> out;
  for (const auto& info : function_list()) {
    for (const char* t : {"float", "half", "bfloat16"}) {
      out.push_back({info.decl->name, t});
    }
  }
  return out;
}

bool on_device(const std::string& backend) {
  return backend.rfind("cuda", 0) == 0 || backend.rfind("cudnn", 0) == 0;
}

// Whether the function has a CUDA or cuDNN implementation in this build.
bool has_device_backend(const std::string& function) {
  for (const auto& info : function_list()) {
    if (function != info.decl->name) continue;
    for (const auto& b : info.backends) {
      if (on_device(b.name)) return true;
    }
  }
  return false;
}

// The output grad: fixed weights from the case's seed (the same on both
// sides; the harness's own are internal to it), rounded to the type. Both
// sides are fed values the type holds (rounded_to), so that they start from
// the same numbers even where one computes in float and the other in the
// reduced type (bf16 BatchNormalization falls back to cudnn:float): a sum of
// 2600 unrounded output grads differs from the sum of their bf16 roundings
// by more than bf16's tolerance, though each side is right.
NdArrayPtr output_grad(const Shape& shape, uint32_t seed,
                       const std::string& type_config) {
  std::mt19937 rng(seed + 2000);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(shape_size(shape));
  for (float& e : g) e = dist(rng);
  g = rounded_to(g, type_config);
  auto a = make_ndarray(shape);
  std::copy(g.begin(), g.end(), a->cast<float>(true));
  return a;
}

// The grads an accumulation run finds before backward.
std::vector<float> preset_grad(int64_t n) {
  std::vector<float> g(n);
  for (int64_t j = 0; j < n; ++j)
    g[j] = 0.5f + 0.25f * static_cast<float>(j % 3);
  return g;
}

enum class Mode { fresh, accumulate, clear_buffer };

struct Out {
  std::string backend;  // of the function that made the output
  std::string function;
  Doubles y;
  std::vector<Doubles> grads;  // of the inputs that need one, in order
};

// One forward (and backward, when the case has grads) of `c` on `values`
// in `ctx`: fresh grads, grads added to preset ones, or through
// identity -> f -> mul_scalar(2) with clear_buffer (the harness's check).
Out run(const FunctionDecl& d, const FunctionCheck& c,
        const std::vector<std::vector<float>>& values, const Context& ctx,
        const std::string& type_config, Mode mode) {
  ContextGuard guard(ctx);
  seed(c.seed);  // a random function (Dropout) draws the same on both sides
  std::vector<VariablePtr> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& s = c.inputs[i];
    if (s.integer) {
      auto x = make_variable(s.shape, s.need_grad);
      int32_t* p = x->data()->cast<int32_t>(true);
      for (size_t j = 0; j < values[i].size(); ++j) {
        p[j] = static_cast<int32_t>(values[i][j]);
      }
      inputs.push_back(x);
    } else {
      // Labels and layout data (integer and any ports) are never rounded.
      const bool floating = d.input(static_cast<int>(i)).kind == Port::floating;
      inputs.push_back(variable_from(
          s.shape, floating ? rounded_to(values[i], type_config) : values[i],
          s.need_grad));
    }
    if (mode == Mode::accumulate && s.need_grad) {
      const auto g = preset_grad(inputs.back()->size());
      std::copy(g.begin(), g.end(), inputs.back()->grad()->cast<float>(true));
    }
  }
  std::vector<VariablePtr> args = inputs;
  if (mode == Mode::clear_buffer) {
    for (auto& a : args) {
      if (a->need_grad()) a = F::identity(a);
    }
  }
  VariablePtr y = c.build(args);
  Out o;
  if (y->parent()) {
    o.backend = y->parent()->function().backend().str();
    o.function = y->parent()->function().decl().name;
  }
  const bool backward = c.check_grad;
  if (mode == Mode::clear_buffer) {
    auto z = F::mul_scalar(y, 2.0f);
    z->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    auto g = output_grad(y->shape(), c.seed, type_config);
    float* p = g->cast<float>();
    for (int64_t j = 0; j < g->size(); ++j) p[j] *= 0.5f;
    z->backward(g, /*clear_buffer=*/true);
  } else {
    y->forward();
    o.y = to_doubles(y);
    if (backward) y->backward(output_grad(y->shape(), c.seed, type_config));
  }
  if (backward) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (c.inputs[i].need_grad) o.grads.push_back(grad_doubles(inputs[i]));
    }
  }
  return o;
}

// Feeds every fixed whole-valued input of an integer or any port as int32
// (labels, ids, indices), as the harness does; false when there is none.
bool integerize(const FunctionDecl& d, FunctionCheck& c) {
  bool any = false;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto& in = c.inputs[i];
    const Port::Kind kind = d.input(static_cast<int>(i)).kind;
    if (kind != Port::integer && kind != Port::any) continue;
    if (in.values.empty() || in.need_grad) continue;
    bool whole = true;
    for (float v : in.values) whole = whole && v == static_cast<int32_t>(v);
    if (!whole) continue;
    in.integer = true;
    any = true;
  }
  return any;
}

struct Tolerance {
  double atol, rtol;
};

// Device against host in one type: float within twice the case's forward
// tolerance (the two sum in other orders; each is within it of double),
// half and bfloat16 within the case's tolerance against float.
Tolerance tolerance(const FunctionCheck& c, const std::string& type_config) {
  if (type_config == "float") {
    return {2 * c.forward_atol, 2 * c.forward_rtol};
  }
  if (type_config == "half") return {c.half_atol, c.half_rtol};
  return {c.bf16_atol, c.bf16_rtol};
}

void expect_grads_near(const std::vector<Doubles>& dev,
                       const std::vector<Doubles>& want, Tolerance t,
                       const std::string& what) {
  ASSERT_EQ(dev.size(), want.size()) << what;
  for (size_t i = 0; i < dev.size(); ++i) {
    expect_near(dev[i], want[i], t.atol, t.rtol,
                what + " of input " + std::to_string(i));
  }
}

// Every device check of one case in one type_config.
void compare(const FunctionDecl& d, const harness::Case& k,
             const std::string& type_config, bool expect_device) {
  SCOPED_TRACE("case " + k.label + " in " + type_config);
  const FunctionCheck c = k.make();
  const auto values = input_values(c);
  const Context host = context("cpu", type_config);
  const Context dev = context("cudnn", type_config);
  const Tolerance t = tolerance(c, type_config);
  const Out want = run(d, c, values, host, type_config, Mode::fresh);
  const Out got = run(d, c, values, dev, type_config, Mode::fresh);
  if (expect_device && got.function == d.name) {
    EXPECT_TRUE(on_device(got.backend))
        << d.name << " has a device implementation but ran on " << got.backend;
  }
  expect_near(got.y, want.y, t.atol, t.rtol, "output against the host");
  expect_grads_near(got.grads, want.grads, t, "grad against the host");
  if (c.check_grad) {
    SCOPED_TRACE("accumulation");
    const Out acc = run(d, c, values, dev, type_config, Mode::accumulate);
    std::vector<Doubles> sum = want.grads;
    for (auto& g : sum) {
      const auto g0 = preset_grad(static_cast<int64_t>(g.size()));
      for (size_t j = 0; j < g.size(); ++j) g[j] += g0[j];
    }
    // The preset grads (about 1) add one rounding in half and bfloat16.
    const Tolerance ta{std::max(t.atol, type_config == "bfloat16" ? 1.6e-2
                                        : type_config == "half"   ? 2e-3
                                                                  : 0.0),
                       t.rtol};
    expect_grads_near(acc.grads, sum, ta, "accumulated grad");
  }
  if (c.check_grad) {
    SCOPED_TRACE("clear_buffer");
    const Out cb = run(d, c, values, dev, type_config, Mode::clear_buffer);
    expect_grads_near(cb.grads, want.grads, t, "grad under clear_buffer");
  }
  FunctionCheck ints = c;
  if (integerize(d, ints)) {
    SCOPED_TRACE("integer inputs fed as int32");
    const Out got_int = run(d, ints, values, dev, type_config, Mode::fresh);
    expect_near(got_int.y, want.y, t.atol, t.rtol,
                "int32 inputs on the device against the host");
  }
}

class CudaHarness : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { MG_REQUIRE_CUDA_DEVICE(); }
};

TEST_P(CudaHarness, DeviceMatchesTheHost) {
  const Param& p = GetParam();
  const auto& cases = harness::cases(p.function);
  if (cases.empty()) {
    // test_harness.cpp's coverage test fails for it already.
    GTEST_SKIP() << p.function << " has no harness case";
  }
  const FunctionDecl& d =
      FunctionRegistry::instance().decl(p.function, "cuda harness");
  const bool expect_device = has_device_backend(p.function);
  for (const auto& c : cases) {
    try {
      compare(d, c, p.type_config, expect_device);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "case " << c.label << " in " << p.type_config
                    << " threw: " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFunction, CudaHarness,
                         ::testing::ValuesIn(every_function_and_type()),
                         [](const auto& info) {
                           return info.param.function + "_" +
                                  info.param.type_config;
                         });

// What ran where: the functions with a device implementation must have a
// harness case (they are the ones this file exists for).
TEST(CudaHarnessCoverage, EveryDeviceFunctionHasACase) {
  MG_REQUIRE_CUDA_DEVICE();
  std::vector<std::string> device, missing;
  size_t functions = 0;
  for (const auto& info : function_list()) {
    ++functions;
    if (!has_device_backend(info.decl->name)) continue;
    device.push_back(info.decl->name);
    if (harness::cases(info.decl->name).empty()) {
      missing.push_back(info.decl->name);
    }
  }
  EXPECT_FALSE(device.empty()) << "no function has a CUDA implementation";
  EXPECT_TRUE(missing.empty())
      << missing.size() << " device functions have no harness case, the "
      << "first: " << (missing.empty() ? "" : missing[0]);
  std::cout << functions << " functions x 3 dtypes on the device against "
            << "the host; " << device.size()
            << " of them have a CUDA or cuDNN implementation, the rest run "
               "through the context's CPU fallback\n";
}

}  // namespace
}  // namespace mg::test::cuda_harness_tests
