#include "harness.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <stdexcept>

namespace mg::test::harness {

namespace {

std::map<std::string, std::vector<Case>>& table() {
  static std::map<std::string, std::vector<Case>> t;
  return t;
}

// Feeds every fixed input of an integer (or any) port (labels, ids,
// indices: explicit whole values, no grad) as int32 instead of float;
// false when there is none.
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

// A layout function (its first input is Port::any) moves int32 data exactly
// in every type_config: input k holds 2^31 - 1 - (k n + i + 1) at element
// i, and each output element must be the one a float run with the small
// values k n + i + 1 puts there (or the same constant, for padding).
void check_integer_layout(const FunctionCheck& base,
                          const std::string& type_config) {
  constexpr int64_t kTop = 2147483647;
  FunctionCheck c = base;
  std::vector<std::vector<float>> small;
  std::set<float> marks;
  float next = 1;
  for (auto& in : c.inputs) {
    std::vector<float> v(shape_size(in.shape));
    for (auto& e : v) marks.insert(e = next++);
    small.push_back(v);
    in.values = v;
    in.need_grad = false;
  }
  const Doubles y_small = run_forward(c, small, "float");
  for (auto& in : c.inputs) in.integer = true;
  std::vector<std::vector<float>> unused(small.size());
  ContextGuard guard(context("cpu", type_config));
  std::vector<VariablePtr> vars;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    auto x = make_variable(c.inputs[k].shape);
    int32_t* p = x->data()->cast<int32_t>(true);
    for (size_t i = 0; i < small[k].size(); ++i) {
      p[i] = static_cast<int32_t>(kTop - static_cast<int64_t>(small[k][i]));
    }
    vars.push_back(x);
  }
  auto y = c.build(vars);
  y->forward();
  ASSERT_FALSE(is_floating(y->data()->array().dtype()))
      << "integer data left as " << dtype_name(y->data()->array().dtype());
  const int32_t* got = y->data()->get<const int32_t>();
  ASSERT_EQ(static_cast<size_t>(y->size()), y_small.size());
  for (size_t j = 0; j < y_small.size(); ++j) {
    const float s = static_cast<float>(y_small[j]);
    const int64_t expected = marks.count(s) ? kTop - static_cast<int64_t>(s)
                                            : static_cast<int64_t>(s);
    ASSERT_EQ(got[j], expected) << "element " << j << " in " << type_config;
  }
}

// The inputs of c at batch size `batch`: explicit values repeated row by
// row (labels and indices stay valid), random ones drawn anew from the same
// range; other inputs as they are.
FunctionCheck at_batch(const FunctionCheck& base,
                       const std::vector<int>& batched, int64_t batch) {
  FunctionCheck c = base;
  std::mt19937 rng(base.seed + 7919u * static_cast<uint32_t>(batch));
  for (int k : batched) {
    InputSpec& in = c.inputs[static_cast<size_t>(k)];
    const int64_t old_batch = in.shape[0];
    const int64_t row = old_batch ? shape_size(in.shape) / old_batch : 0;
    in.shape[0] = batch;
    if (in.values.empty()) continue;
    std::vector<float> v(static_cast<size_t>(batch * row));
    for (int64_t r = 0; r < batch; ++r) {
      std::copy_n(in.values.begin() + (r % old_batch) * row, row,
                  v.begin() + r * row);
    }
    in.values = std::move(v);
  }
  // Random inputs get values of their own (input_values draws from the
  // seed in input order, so a new seed gives every row new values).
  c.seed = static_cast<uint32_t>(rng());
  return c;
}

// Writes `values` into x (resized to `shape`): int32 for integer inputs.
void fill(const VariablePtr& x, const InputSpec& in,
          const std::vector<float>& values) {
  if (in.integer) {
    int32_t* p = x->data()->cast<int32_t>(true);
    for (size_t j = 0; j < values.size(); ++j) {
      p[j] = static_cast<int32_t>(values[j]);
    }
    return;
  }
  float* p = x->data()->cast<float>(true);
  std::copy(values.begin(), values.end(), p);
}

std::vector<VariablePtr> make_vars(
    const FunctionCheck& c, const std::vector<std::vector<float>>& values) {
  std::vector<VariablePtr> vars;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    auto x = make_variable(c.inputs[k].shape, c.inputs[k].need_grad);
    fill(x, c.inputs[k], values[k]);
    vars.push_back(x);
  }
  return vars;
}

// The output and the grads of the inputs that take one, after a forward and
// (with grads) a backward seeded with fixed weights.
struct Pass {
  Doubles y;
  std::vector<Doubles> grads;
};

Pass forward_backward(const FunctionCheck& c, const VariablePtr& y,
                      const std::vector<VariablePtr>& inputs) {
  y->forward();
  Pass p;
  p.y = to_doubles(y);
  if (!c.check_grad) return p;
  for (auto& x : inputs) {
    if (x->need_grad()) x->grad()->zero();
  }
  std::mt19937 rng(c.seed + 1000);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto seed = make_ndarray(y->shape());
  float* w = seed->cast<float>(true);
  for (int64_t i = 0; i < y->size(); ++i) w[i] = dist(rng);
  y->backward(seed);
  for (auto& x : inputs) {
    if (x->need_grad()) p.grads.push_back(grad_doubles(x));
  }
  return p;
}

// The case's graph written as YAML and rebuilt from it (by name through
// the registry and the arguments' codec) gives the same output, bit for
// bit: every function's arguments survive the round trip.
void check_yaml_round_trip(const FunctionCheck& c) {
  const auto values = input_values(c);
  auto vars = make_vars(c, values);
  for (size_t k = 0; k < vars.size(); ++k) {
    vars[k]->set_name("in" + std::to_string(k));
  }
  auto y = c.build(vars);
  y->forward();
  const ParameterScope none;
  const std::string yaml = network_to_yaml("case", {{"y", y}}, none);
  ParameterScope params;
  const Network net = network_from_yaml(yaml, params, "<harness case>");
  for (size_t k = 0; k < vars.size(); ++k) {
    for (const auto& [name, in] : net.inputs) {
      if (name == vars[k]->name()) fill(in, c.inputs[k], values[k]);
    }
  }
  ASSERT_EQ(net.inputs.size(), vars.size()) << yaml;
  const VariablePtr& rebuilt = net.outputs.at(0).second;
  rebuilt->forward();
  expect_near(to_doubles(rebuilt), to_doubles(y), 0, 0,
              "the graph rebuilt from its YAML against the graph");
}

// The parameters' ports (NNabla's names): never batched.
bool is_parameter_port(const FunctionDecl& d, size_t i) {
  if (d.inputs.size == 0) return false;
  const int port = std::min(static_cast<int>(i), d.inputs.size - 1);
  const std::string name = d.inputs[port].name;
  if (name == "b") {  // a bias beside W, not BatchMatmul's b
    for (const Port& q : d.inputs) {
      if (std::string(q.name) == "W") return true;
    }
    return false;
  }
  return name == "W" || name == "beta" || name == "gamma" || name == "mean" ||
         name == "variance";
}

// The batch inputs when a case names none: the batch is dim 0 of the first
// data input (not a parameter's) of the highest rank; batched are the data
// inputs with that dim 0 and that rank (a lower rank aligns on the right
// when it broadcasts, so its dim 0 is another axis), and the integer ones
// (labels, ids) with that dim 0.
std::vector<int> default_batch_inputs(const FunctionDecl& d,
                                      const FunctionCheck& c) {
  int first = -1;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (is_parameter_port(d, i) || c.inputs[i].shape.empty()) continue;
    if (first < 0 || c.inputs[i].shape.size() >
                         c.inputs[static_cast<size_t>(first)].shape.size()) {
      first = static_cast<int>(i);
    }
  }
  if (first < 0) return {};
  const Shape& s0 = c.inputs[static_cast<size_t>(first)].shape;
  std::vector<int> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Shape& s = c.inputs[i].shape;
    if (is_parameter_port(d, i) || s.empty() || s[0] != s0[0]) continue;
    const int port = std::min(static_cast<int>(i), d.inputs.size - 1);
    if (s.size() == s0.size() || d.inputs[port].kind == Port::integer) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::string shapes_of(const FunctionCheck& c) {
  std::string s;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    s += (k ? ", " : "") + shape_str(c.inputs[k].shape);
  }
  return s;
}

}  // namespace

bool add(const FunctionDecl& decl, std::vector<Case> cases) {
  auto& list = table()[decl.name];
  for (auto& c : cases) list.push_back(std::move(c));
  return true;
}

const std::vector<Case>& cases(const std::string& name) {
  static const std::vector<Case> none;
  auto it = table().find(name);
  return it == table().end() ? none : it->second;
}

void run(const FunctionDecl& d, const Case& k, const std::string& type_config) {
  SCOPED_TRACE("case " + k.label + " in " + type_config);
  const FunctionCheck c = k.make();
  if (type_config == "float") {
    {
      SCOPED_TRACE("forward");
      check_forward(c);
    }
    {
      SCOPED_TRACE("numerical gradient");
      check_numerical_grad(c);
    }
    if (k.no_yaml_round_trip.empty()) {
      SCOPED_TRACE("YAML round trip");
      check_yaml_round_trip(c);
    }
  } else if (k.long_sum && c.reference) {
    // Against double, not float: a float kernel that summed in fp16 would
    // fail here even where float and half agree.
    SCOPED_TRACE("long sum against the double reference");
    const auto values = input_values(c);
    std::vector<Doubles> dv;
    for (const auto& v : values) dv.emplace_back(v.begin(), v.end());
    const bool half = type_config == "half";
    expect_near(run_forward(c, values, type_config), c.reference(dv),
                half ? c.half_atol : c.bf16_atol,
                half ? c.half_rtol : c.bf16_rtol,
                type_config + " long sum against double");
    // The backward's sums are as long: its grads against differences of the
    // double reference, whether or not the case checks grads in float (a
    // numerical gradient of thousands of inputs in float is noise); an
    // input whose grad is not the derivative (VATNoise's x) has need_grad
    // false in its long case. A grad
    // summed in fp16 misses by 10% and more; a right one by about 2 roundings
    // of the type (bf16's 2^-9, fp16's 2^-12 near the largest grad).
    FunctionCheck grads = c;
    bool any = false;
    for (size_t i = 0; i < grads.inputs.size(); ++i) {
      auto& in = grads.inputs[i];
      in.need_grad = in.need_grad && d.input(static_cast<int>(i)).grad;
      any = any || in.need_grad;
    }
    if (any) {
      SCOPED_TRACE("long sum's grads against the double reference");
      check_grads_against_reference(grads, type_config, half ? 4e-3 : 2e-2);
    }
  } else {
    SCOPED_TRACE("against float");
    check_reduced(c, type_config);
  }
  {
    SCOPED_TRACE("accumulation");
    check_accumulation(c, type_config);
  }
  {
    SCOPED_TRACE("clear_buffer");
    check_clear_buffer(c, type_config);
  }
  FunctionCheck ints = c;
  if (integerize(d, ints)) {
    SCOPED_TRACE("integer inputs fed as int32");
    const auto values = input_values(c);
    expect_near(run_forward(ints, values, type_config),
                run_forward(c, values, type_config), 0, 0,
                "int32 inputs against the same values in float");
  }
}

BatchChange run_batch_change(const FunctionDecl& d, const Case& k,
                             const std::string& type_config) {
  SCOPED_TRACE("batch change: case " + k.label + " in " + type_config);
  BatchChange result{BatchChange::opted_out, k.no_batch_change, {}};
  if (!k.no_batch_change.empty()) return result;
  const FunctionCheck c = k.make();
  std::vector<int> batched = k.batch_inputs;
  if (batched.empty()) batched = default_batch_inputs(d, c);
  if (batched.empty()) {
    result.detail = "no input other than parameters has a dimension";
    return result;
  }
  const int64_t batch = c.inputs[static_cast<size_t>(batched[0])].shape[0];
  for (int i : batched) {
    if (i < 0 || static_cast<size_t>(i) >= c.inputs.size() ||
        c.inputs[static_cast<size_t>(i)].shape.empty()) {
      ADD_FAILURE() << d.name << " case " << k.label << ": batch input " << i
                    << " is not an input with a dimension";
      return result;
    }
  }
  result.batches = {batch};

  ContextGuard guard(context("cpu", type_config));
  auto inputs = make_vars(c, input_values(c));
  auto y = c.build(inputs);
  forward_backward(c, y, inputs);

  for (int64_t next : {batch + 3, int64_t{1}}) {
    const std::string old_shapes = [&] {
      std::string s;
      for (size_t i = 0; i < inputs.size(); ++i) {
        s += (i ? ", " : "") + shape_str(inputs[i]->shape());
      }
      return s;
    }();
    const FunctionCheck now =
        k.at_batch ? k.at_batch(next) : at_batch(c, batched, next);
    SCOPED_TRACE("from inputs " + old_shapes + " to " + shapes_of(now));
    if (now.inputs.size() != c.inputs.size()) {
      ADD_FAILURE() << "at_batch(" << next << ") gives " << now.inputs.size()
                    << " inputs, the case " << c.inputs.size();
      return result;
    }
    const auto values = input_values(now);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->shape() != now.inputs[i].shape) {
        inputs[i]->reshape(now.inputs[i].shape);
      }
      fill(inputs[i], now.inputs[i], values[i]);
    }
    Pass again;
    try {
      // now's seed: the same output weights as the fresh graph's.
      again = forward_backward(now, y, inputs);
    } catch (const std::invalid_argument& e) {
      // Refused: the message names the function and both shapes, and the
      // new size is one a fresh build refuses too.
      const std::string m = e.what();
      EXPECT_NE(m.find("was set up for inputs of shapes"), std::string::npos)
          << m;
      EXPECT_NE(m.find(old_shapes), std::string::npos)
          << "the error does not name the old shapes " << old_shapes << ": "
          << m;
      EXPECT_NE(m.find(shapes_of(now)), std::string::npos)
          << "the error does not name the new shapes " << shapes_of(now) << ": "
          << m;
      EXPECT_NE(m.find(d.tag()), std::string::npos)
          << "the error does not name " << d.tag() << ": " << m;
      bool fresh_ok = true;
      try {
        auto fresh = make_vars(now, values);
        forward_backward(now, now.build(fresh), fresh);
      } catch (const std::exception&) {
        fresh_ok = false;
      }
      EXPECT_FALSE(fresh_ok)
          << d.name << " refused to be set up again for inputs "
          << shapes_of(now)
          << ", but a graph built fresh at that size runs: " << m;
      result.outcome = BatchChange::refused;
      result.detail = m;
      return result;
    }
    auto fresh = make_vars(now, values);
    const Pass want = forward_backward(now, now.build(fresh), fresh);
    expect_near(again.y, want.y, 0, 0,
                "output after the batch change against a fresh graph");
    EXPECT_EQ(again.grads.size(), want.grads.size());
    for (size_t i = 0; i < again.grads.size() && i < want.grads.size(); ++i) {
      expect_near(again.grads[i], want.grads[i], 0, 0,
                  "grad " + std::to_string(i) +
                      " after the batch change against a fresh graph");
    }
    result.batches.push_back(next);
  }
  result.outcome = BatchChange::set_up_again;
  return result;
}

void run_integer_layout(const FunctionCheck& c,
                        const std::string& type_config) {
  SCOPED_TRACE("int32 data through a layout function in " + type_config);
  check_integer_layout(c, type_config);
}

}  // namespace mg::test::harness
