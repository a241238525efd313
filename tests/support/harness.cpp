#include "harness.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

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

void run_integer_layout(const FunctionCheck& c, const std::string& type_config) {
  SCOPED_TRACE("int32 data through a layout function in " + type_config);
  check_integer_layout(c, type_config);
}

}  // namespace mg::test::harness
