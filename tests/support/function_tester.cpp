#include "function_tester.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace mg::test {

namespace {

std::vector<std::vector<float>> make_values(const FunctionCheck& c) {
  std::mt19937 rng(c.seed);
  std::vector<std::vector<float>> values;
  for (const auto& in : c.inputs) {
    if (!in.values.empty()) {
      EXPECT_EQ(static_cast<int64_t>(in.values.size()), shape_size(in.shape));
      values.push_back(in.values);
      continue;
    }
    std::uniform_real_distribution<float> dist(in.low, in.high);
    std::vector<float> v(shape_size(in.shape));
    for (auto& e : v) e = dist(rng);
    values.push_back(std::move(v));
  }
  return values;
}

std::vector<VariablePtr> make_inputs(const FunctionCheck& c,
                                     const std::vector<std::vector<float>>& v) {
  std::vector<VariablePtr> vars;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].integer) {
      auto x = make_variable(c.inputs[i].shape, c.inputs[i].need_grad);
      int32_t* p = x->data()->cast<int32_t>(true);
      for (size_t j = 0; j < v[i].size(); ++j) {
        p[j] = static_cast<int32_t>(v[i][j]);
      }
      vars.push_back(x);
      continue;
    }
    vars.push_back(
        variable_from(c.inputs[i].shape, v[i], c.inputs[i].need_grad));
  }
  return vars;
}

// Random weights w for the scalar sum(w * y) whose gradient is checked.
std::vector<float> output_weights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed + 1000);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w(n);
  for (auto& e : w) e = dist(rng);
  return w;
}

NdArrayPtr array_from(const Shape& shape, const std::vector<float>& values) {
  auto a = make_ndarray(shape);
  std::copy(values.begin(), values.end(), a->cast<float>(true));
  return a;
}

// The function's output and the inputs' grads for output grad w.
struct Run {
  Doubles y;
  std::vector<Doubles> grads;
};

Run run(const FunctionCheck& c, const std::vector<std::vector<float>>& values,
        bool backward) {
  auto inputs = make_inputs(c, values);
  auto y = c.build(inputs);
  y->forward();
  Run r;
  r.y = to_doubles(y);
  if (backward) {
    y->backward(array_from(y->shape(), output_weights(y->size(), c.seed)));
    for (auto& x : inputs) r.grads.push_back(grad_doubles(x));
  }
  return r;
}

std::vector<Doubles> as_doubles(const std::vector<std::vector<float>>& v) {
  std::vector<Doubles> d;
  for (const auto& x : v) d.emplace_back(x.begin(), x.end());
  return d;
}

double weighted_sum(const Doubles& y, const std::vector<float>& w) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
  return s;
}

}  // namespace

VariablePtr variable_from(const Shape& shape, const std::vector<float>& values,
                          bool need_grad) {
  auto v = make_variable(shape, need_grad);
  EXPECT_EQ(static_cast<int64_t>(values.size()), v->size());
  std::copy(values.begin(), values.end(), v->data()->cast<float>(true));
  return v;
}

Doubles gather_ref(const Doubles& x, const Shape& xs, const Shape& ys,
                   const std::function<int64_t(int, int64_t)>& source) {
  const int nd = static_cast<int>(ys.size());
  Doubles y(shape_size(ys));
  for (int64_t e = 0; e < static_cast<int64_t>(y.size()); ++e) {
    int64_t rem = e, off = 0, stride = 1;
    for (int a = nd - 1; a >= 0; --a) {
      const int64_t j = rem % ys[a];
      rem /= ys[a];
      off += source(a, j) * stride;
      stride *= xs[a];
    }
    y[e] = x[off];
  }
  return y;
}

std::vector<VariablePtr> apply_from_args(
    const std::string& name, const FunctionArgs& args,
    const std::vector<VariablePtr>& inputs) {
  auto fn = FunctionRegistry::instance().create_from_args(
      name, default_context(), args);
  Variables raw;
  for (const auto& v : inputs) raw.push_back(v.get());
  const int n = fn->num_outputs_for(raw);
  auto outs = connect(std::make_shared<FunctionNode>(std::move(fn), inputs), n);
  for (const auto& y : outs) y->forward();
  return outs;
}

std::vector<float> cycling_labels(int64_t n, int64_t classes) {
  std::vector<float> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    t[i] = static_cast<float>((3 * i + 1) % classes);
  }
  return t;
}

Doubles to_doubles(const VariablePtr& v) {
  const double* p =
      static_cast<const double*>(v->data()->array().get(Dtype::f64));
  return Doubles(p, p + v->size());
}

Doubles grad_doubles(const VariablePtr& v) {
  const double* p =
      static_cast<const double*>(v->grad()->array().get(Dtype::f64));
  return Doubles(p, p + v->size());
}

void expect_near(const Doubles& actual, const Doubles& expected, double atol,
                 double rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t worst = 0, bad = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = atol + rtol * std::fabs(expected[i]);
    const double err = std::fabs(actual[i] - expected[i]);
    const bool ok =
        err <= tol || (std::isnan(actual[i]) && std::isnan(expected[i]));
    if (!ok) {
      ++bad;
      if (err - tol > worst_excess) worst_excess = err - tol, worst = i;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << actual.size()
                     << " elements out of tolerance; worst at " << worst
                     << ": got " << actual[worst] << ", expected "
                     << expected[worst] << " (atol " << atol << ", rtol "
                     << rtol << ")";
}

void check_forward(const FunctionCheck& c) {
  if (!c.reference) return;
  ContextGuard guard(context("cpu", "float"));
  auto values = make_values(c);
  Run r = run(c, values, false);
  expect_near(r.y, c.reference(as_doubles(values)), c.forward_atol,
              c.forward_rtol, "forward against the double reference");
}

void check_numerical_grad(const FunctionCheck& c) {
  if (!c.check_grad) return;
  ContextGuard guard(context("cpu", "float"));
  auto values = make_values(c);
  Run r = run(c, values, true);
  const auto w = output_weights(static_cast<int64_t>(r.y.size()), c.seed);
  auto dvalues = as_doubles(values);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].need_grad) continue;
    Doubles numeric(values[i].size());
    for (size_t j = 0; j < values[i].size(); ++j) {
      double plus, minus;
      if (c.reference) {
        // Central differences of the double reference: accurate to ~eps^2.
        const double x = dvalues[i][j];
        const double h = c.eps * std::max(1.0, std::fabs(x));
        dvalues[i][j] = x + h;
        plus = weighted_sum(c.reference(dvalues), w);
        dvalues[i][j] = x - h;
        minus = weighted_sum(c.reference(dvalues), w);
        dvalues[i][j] = x;
        numeric[j] = (plus - minus) / (2 * h);
      } else {
        const float x = values[i][j];
        const float h = static_cast<float>(c.eps);
        values[i][j] = x + h;
        plus = weighted_sum(run(c, values, false).y, w);
        values[i][j] = x - h;
        minus = weighted_sum(run(c, values, false).y, w);
        values[i][j] = x;
        numeric[j] = (plus - minus) / (2.0 * h);
      }
    }
    expect_near(
        r.grads[i], numeric, c.grad_atol, c.grad_rtol,
        "analytic against numerical gradient of input " + std::to_string(i));
  }
}

void check_accumulation(const FunctionCheck& c,
                        const std::string& type_config) {
  if (!c.check_grad) return;
  ContextGuard guard(context("cpu", type_config));
  const double tol = type_config == "float"  ? 1e-5
                     : type_config == "half" ? c.half_atol
                                             : c.bf16_atol;
  auto values = make_values(c);
  Run fresh = run(c, values, true);
  auto inputs = make_inputs(c, values);
  std::vector<Doubles> before;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<float> g0(inputs[i]->size());
    for (size_t j = 0; j < g0.size(); ++j) g0[j] = 0.5f + 0.25f * (j % 3);
    std::copy(g0.begin(), g0.end(), inputs[i]->grad()->cast<float>(true));
    before.emplace_back(g0.begin(), g0.end());
  }
  auto y = c.build(inputs);
  y->forward();
  y->backward(array_from(y->shape(), output_weights(y->size(), c.seed)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!c.inputs[i].need_grad) continue;
    Doubles expected = fresh.grads[i];
    for (size_t j = 0; j < expected.size(); ++j) expected[j] += before[i][j];
    expect_near(grad_doubles(inputs[i]), expected, tol, tol,
                "accumulated grad of input " + std::to_string(i));
  }
}

void check_clear_buffer(const FunctionCheck& c,
                        const std::string& type_config) {
  if (!c.check_grad) return;
  ContextGuard guard(context("cpu", type_config));
  const double tol = type_config == "float"  ? 1e-5
                     : type_config == "half" ? c.half_atol
                                             : c.bf16_atol;
  auto values = make_values(c);
  Run fresh = run(c, values, true);
  // identity -> f -> mul_scalar(2): the function's inputs and output are
  // intermediates, freed as soon as the graph allows.
  auto inputs = make_inputs(c, values);
  std::vector<VariablePtr> mids;
  for (auto& x : inputs) mids.push_back(x->need_grad() ? F::identity(x) : x);
  auto y = c.build(mids);
  auto z = F::mul_scalar(y, 2.0f);
  z->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
  const auto w = output_weights(y->size(), c.seed);
  std::vector<float> half_w(w.size());
  for (size_t j = 0; j < w.size(); ++j) half_w[j] = 0.5f * w[j];
  z->backward(array_from(z->shape(), half_w), /*clear_buffer=*/true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!c.inputs[i].need_grad) continue;
    expect_near(grad_doubles(inputs[i]), fresh.grads[i], tol, tol,
                "grad of input " + std::to_string(i) + " under clear_buffer");
  }
  EXPECT_EQ(y->grad()->array().num_copies(), 0u)
      << "clear_buffer left the output's grad allocated";
  EXPECT_EQ(y->data()->array().num_copies(), 0u)
      << "clear_buffer left the output's data allocated";
}

void check_reduced(const FunctionCheck& c, const std::string& type_config) {
  auto values = make_values(c);
  Run full;
  {
    ContextGuard guard(context("cpu", "float"));
    full = run(c, values, c.check_grad);
  }
  ContextGuard guard(context("cpu", type_config));
  auto inputs = make_inputs(c, values);
  auto y = c.build(inputs);
  Function& fn = y->parent()->function();
  const Dtype reduced = context("cpu", type_config).type_config();
  const bool keep_float =
      PrecisionPolicy::instance().get(fn.decl()) == Precision::float32;
  EXPECT_EQ(fn.dtype(), keep_float ? Dtype::f32 : reduced)
      << fn.name() << " did not run in " << type_config;
  y->forward();
  const bool is_half = type_config == "half";
  const double atol = is_half ? c.half_atol : c.bf16_atol;
  const double rtol = is_half ? c.half_rtol : c.bf16_rtol;
  expect_near(to_doubles(y), full.y, atol, rtol,
              type_config + " forward against float");
  if (!c.check_grad) return;
  y->backward(array_from(y->shape(), output_weights(y->size(), c.seed)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!c.inputs[i].need_grad) continue;
    expect_near(
        grad_doubles(inputs[i]), full.grads[i], atol, rtol,
        type_config + " grad of input " + std::to_string(i) + " against float");
  }
}

void check_all(const FunctionCheck& c) {
  {
    SCOPED_TRACE("forward");
    check_forward(c);
  }
  {
    SCOPED_TRACE("numerical gradient");
    check_numerical_grad(c);
  }
  {
    SCOPED_TRACE("accumulation");
    check_accumulation(c);
  }
  {
    SCOPED_TRACE("clear_buffer");
    check_clear_buffer(c);
  }
  {
    SCOPED_TRACE("half");
    check_reduced(c, "half");
  }
  {
    SCOPED_TRACE("bfloat16");
    check_reduced(c, "bfloat16");
  }
}

std::vector<float> rounded_to(const std::vector<float>& values,
                              const std::string& type_config) {
  const Dtype t = context("cpu", type_config).type_config();
  std::vector<uint8_t> narrow(values.size() * dtype_size(t));
  std::vector<float> out(values.size());
  convert(values.data(), Dtype::f32, narrow.data(), t, values.size());
  convert(narrow.data(), t, out.data(), Dtype::f32, values.size());
  return out;
}

void check_grads_against_reference(const FunctionCheck& c,
                                   const std::string& type_config, double rtol,
                                   int samples) {
  ASSERT_TRUE(c.reference) << "a grad check against double needs a reference";
  auto values = make_values(c);
  for (size_t i = 0; i < values.size(); ++i) {
    // Random values only: explicit ones are labels, indices or chosen values.
    if (c.inputs[i].values.empty()) {
      values[i] = rounded_to(values[i], type_config);
    }
  }
  ContextGuard guard(context("cpu", type_config));
  auto inputs = make_inputs(c, values);
  auto y = c.build(inputs);
  y->forward();
  std::mt19937 rng(c.seed + 2000);
  std::uniform_real_distribution<float> dist(0.5f, 1.0f);
  std::vector<float> w(y->size());
  for (auto& e : w) e = dist(rng);
  w = rounded_to(w, type_config);
  y->backward(array_from(y->shape(), w));
  auto dvalues = as_doubles(values);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].need_grad) continue;
    const Doubles got = grad_doubles(inputs[i]);
    const size_t n = got.size();
    const size_t step = std::max<size_t>(1, n / samples);
    Doubles g, numeric;
    double largest = 0;
    for (size_t j = step / 2; j < n; j += step) {
      const double x = dvalues[i][j];
      const double h = c.eps * std::max(1.0, std::fabs(x));
      dvalues[i][j] = x + h;
      const double plus = weighted_sum(c.reference(dvalues), w);
      dvalues[i][j] = x - h;
      const double minus = weighted_sum(c.reference(dvalues), w);
      dvalues[i][j] = x;
      numeric.push_back((plus - minus) / (2 * h));
      g.push_back(got[j]);
      largest = std::max(largest, std::fabs(numeric.back()));
    }
    expect_near(g, numeric, rtol * largest, 0,
                type_config + " grad of input " + std::to_string(i) +
                    " against differences of the double reference (every " +
                    std::to_string(step) + "th element)");
  }
}

Doubles run_forward(const FunctionCheck& c,
                    const std::vector<std::vector<float>>& values,
                    const std::string& type_config) {
  ContextGuard guard(context("cpu", type_config));
  return run(c, values, false).y;
}

std::vector<std::vector<float>> input_values(const FunctionCheck& c) {
  return make_values(c);
}

FunctionCheck unary_check(std::function<VariablePtr(const VariablePtr&)> f,
                          std::function<double(double)> ref, float low,
                          float high) {
  FunctionCheck c;
  c.inputs = {{{3, 4, 5}, low, high}};
  c.build = [f](const std::vector<VariablePtr>& in) { return f(in[0]); };
  c.reference = [ref](const std::vector<Doubles>& in) {
    Doubles y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = ref(in[0][i]);
    return y;
  };
  return c;
}

void expect_error(const std::function<void()>& f,
                  const std::vector<std::string>& parts,
                  const std::string& tag) {
  try {
    f();
    FAIL() << "expected an exception with: "
           << (parts.empty() ? tag : parts.front());
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const auto& p : parts) {
      EXPECT_NE(what.find(p), std::string::npos)
          << "missing \"" << p << "\" in: " << what;
    }
    if (!tag.empty()) {
      EXPECT_EQ(what.rfind(tag, 0), 0u)
          << "does not start with \"" << tag << "\": " << what;
    }
  }
}

}  // namespace mg::test
