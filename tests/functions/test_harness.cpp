// The one harness: it walks mg::function_list() and runs every registered
// case of every function in float, half and bfloat16 (values against a
// double reference, grads against numerical grads, accumulation,
// clear_buffer, integer inputs, long sums in fp32, a new batch size between
// two forwards); a registered function without a case fails. The cases live
// beside each function's own tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "../support/harness.hpp"

namespace mg::test::harness_tests {
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

// Layout functions move int32 data exactly: Port::any in and out.
bool is_layout(const FunctionDecl& d) {
  return d.inputs.size > 0 && d.inputs[0].kind == Port::any &&
         d.outputs[0].kind == Port::any;
}

class Harness : public ::testing::TestWithParam<Param> {};

TEST_P(Harness, ValuesGradsAccumulationIntegers) {
  const Param& p = GetParam();
  const auto& cases = harness::cases(p.function);
  ASSERT_FALSE(cases.empty())
      << p.function << " has no harness case: register one beside its tests "
      << "with harness::add(decl::" << p.function << ", {...})";
  const FunctionDecl& d =
      FunctionRegistry::instance().decl(p.function, "harness");
  for (const auto& c : cases) {
    harness::run(d, c, p.type_config);
    if (is_layout(d) && c.int32_layout)
      harness::run_integer_layout(c.make(), p.type_config);
  }
}

// The batch size changes between two forwards of one graph (issue 20): the
// graph sets itself up again and matches a fresh graph bit for bit, or
// refuses with an error naming the function and both shapes.
TEST_P(Harness, NewBatchSizeBetweenTwoForwards) {
  const Param& p = GetParam();
  const FunctionDecl& d =
      FunctionRegistry::instance().decl(p.function, "harness");
  for (const auto& c : harness::cases(p.function)) {
    const harness::BatchChange r =
        harness::run_batch_change(d, c, p.type_config);
    std::string batches;
    for (int64_t b : r.batches)
      batches += (batches.empty() ? "" : " -> ") + std::to_string(b);
    RecordProperty("case " + c.label,
                   r.outcome == harness::BatchChange::set_up_again
                       ? "set up again: batch " + batches
                   : r.outcome == harness::BatchChange::refused
                       ? "refused: " + r.detail
                       : "opted out: " + r.detail);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFunction, Harness,
                         ::testing::ValuesIn(every_function_and_type()),
                         [](const auto& info) {
                           return info.param.function + "_" +
                                  info.param.type_config;
                         });

// The functions the precision policy keeps in float run their fp32 kernel
// in the harness under every type_config, so their half and bfloat16
// kernels would go untested: with the policy overridden to `reduced`, every
// such kernel that is registered runs the harness's checks in its own type.
std::vector<Param> float_policy_kernels() {
  std::vector<Param> out;
  for (const auto& info : function_list()) {
    if (info.decl->precision != Precision::float32) continue;
    for (const auto& b : info.backends) {
      if (b.name == "cpu" && b.type != Dtype::f32) {
        out.push_back(
            {info.decl->name, b.type == Dtype::f16 ? "half" : "bfloat16"});
      }
    }
  }
  return out;
}

// Sets one function's precision for the scope of a test, then puts back the
// precision it had.
class PrecisionOverride {
 public:
  PrecisionOverride(const std::string& function, Precision p)
      : function_(function),
        before_(PrecisionPolicy::instance().get(function)) {
    PrecisionPolicy::instance().set(function, p);
  }
  ~PrecisionOverride() { PrecisionPolicy::instance().set(function_, before_); }
  PrecisionOverride(const PrecisionOverride&) = delete;
  PrecisionOverride& operator=(const PrecisionOverride&) = delete;

 private:
  std::string function_;
  Precision before_;
};

class ReducedKernel : public ::testing::TestWithParam<Param> {};

TEST_P(ReducedKernel, RunsTheHarnessInItsOwnType) {
  const Param& p = GetParam();
  const FunctionDecl& d =
      FunctionRegistry::instance().decl(p.function, "harness");
  const PrecisionOverride reduced(p.function, Precision::reduced);
  for (const auto& c : harness::cases(p.function)) {
    harness::run(d, c, p.type_config);
  }
}

INSTANTIATE_TEST_SUITE_P(FloatPolicyFunctions, ReducedKernel,
                         ::testing::ValuesIn(float_policy_kernels()),
                         [](const auto& info) {
                           return info.param.function + "_" +
                                  info.param.type_config;
                         });

// The list above is not empty by accident: the losses' reduced kernels are
// in it.
TEST(HarnessCoverage, FloatPolicyFunctionsHaveTheirReducedKernelsTested) {
  const auto kernels = float_policy_kernels();
  size_t functions = 0;
  for (const auto& info : function_list()) {
    functions += info.decl->precision == Precision::float32;
  }
  std::set<std::string> tested;
  for (const auto& k : kernels) tested.insert(k.function);
  EXPECT_TRUE(tested.count("SoftmaxCrossEntropy"));
  EXPECT_GE(tested.size(), 10u);
  std::cout << kernels.size() << " half and bfloat16 kernels of "
            << tested.size() << " of the " << functions
            << " functions the policy keeps in float run the harness in "
            << "their own type\n";
}

// Other values of one argument to try, nearest first: an argument the
// codec drops comes back at its default, which these are not.
std::vector<ArgValue> other_values(const ArgValue& v,
                                   const std::set<std::string>& strings) {
  std::vector<ArgValue> out;
  if (auto b = std::get_if<bool>(&v)) {
    out.push_back(!*b);
  } else if (auto i = std::get_if<int64_t>(&v)) {
    for (int64_t d : {1, -1, 2, -2, 3}) out.push_back(*i + d);
    for (int64_t k : {0, 1, 2, -1}) {
      if (k != *i) out.push_back(k);
    }
  } else if (auto x = std::get_if<double>(&v)) {
    // Values that need all 17 digits: a writer that rounds them fails.
    for (double d : {0.1234567891234567, -0.0987654321, 0.75, -0.5}) {
      out.push_back(*x + d * std::max(1.0, std::abs(*x)));
    }
    out.push_back(0.3333333333333333);
  } else if (auto s = std::get_if<std::string>(&v)) {
    for (const auto& o : strings) {
      if (o != *s) out.push_back(o);
    }
  } else if (auto l = std::get_if<std::vector<int64_t>>(&v)) {
    for (int64_t d : {1, -1, 2}) {
      for (size_t k = 0; k < l->size(); ++k) {
        auto m = *l;
        m[k] += d;
        out.push_back(m);
      }
    }
    auto longer = *l;
    longer.push_back(1);
    out.push_back(longer);
    if (!l->empty())
      out.push_back(std::vector<int64_t>(l->begin() + 1, l->end()));
  } else if (auto f = std::get_if<std::vector<double>>(&v)) {
    for (size_t k = 0; k < f->size(); ++k) {
      auto m = *f;
      m[k] += 0.1234567891234567;
      out.push_back(m);
    }
    for (const auto& l : {std::vector<int64_t>{1}, std::vector<int64_t>{1, 1},
                          std::vector<int64_t>{2, 2}, std::vector<int64_t>{0},
                          std::vector<int64_t>{1, 2, 3}}) {
      out.push_back(l);
    }
    out.push_back(std::vector<double>{0.25, 0.75});
  }
  return out;
}

std::string arg_str(const ArgValue& v) {
  std::ostringstream os;
  os.precision(17);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                      std::is_same_v<T, std::vector<double>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << "]";
        } else {
          os << x;
        }
      },
      v);
  return os.str() + " (" + arg_type_name(v) + ")";
}

// The arguments of the function that computes y, after a YAML round trip of
// y's graph.
FunctionArgs args_after_yaml(const VariablePtr& y) {
  const ParameterScope none;
  const std::string yaml = network_to_yaml("args", {{"y", y}}, none);
  ParameterScope params;
  const Network net = network_from_yaml(yaml, params, "<argument check>");
  return net.outputs.at(0).second->parent()->function().args();
}

// Every argument of every function, set to a value other than its default
// on a harness case's graph, comes back from the graph's YAML field by
// field: the codec from arguments to options and back keeps it (it is not
// the default), and the YAML writer and reader keep its type and every
// digit. The harness's round trip compares outputs, which a dropped
// argument passes wherever a case uses its default.
TEST(HarnessCoverage, EveryArgumentSurvivesTheYamlAtAValueOtherThanItsDefault) {
  auto& registry = FunctionRegistry::instance();
  const Context ctx = context("cpu", "float");
  const ContextGuard guard(ctx);
  // Every string any function takes by default: the candidates for the
  // string arguments (modes, directions, ...).
  std::set<std::string> strings;
  for (const auto& name : registry.names()) {
    const FunctionArgs defaults =
        registry.create_from_args(name, ctx, {})->args();
    for (const auto& kv : defaults) {
      if (auto s = std::get_if<std::string>(&kv.second)) strings.insert(*s);
    }
  }
  int args = 0, changed = 0;
  std::vector<std::string> codec_only, unchanged, problems;
  for (const auto& name : registry.names()) {
    const FunctionArgs defaults =
        registry.create_from_args(name, ctx, {})->args();
    for (size_t a = 0; a < defaults.size(); ++a) {
      ++args;
      bool done = false;
      for (const auto& k : harness::cases(name)) {
        if (done) break;
        const FunctionCheck c = k.make();
        std::vector<VariablePtr> vars;
        const auto values = input_values(c);
        for (size_t i = 0; i < c.inputs.size(); ++i) {
          vars.push_back(variable_from(c.inputs[i].shape, values[i]));
        }
        VariablePtr built;
        try {
          built = c.build(vars);
        } catch (const std::exception&) {
          continue;
        }
        if (!built->parent() || built->parent()->function().name() != name) {
          continue;
        }
        FunctionNode& node = *built->parent();
        const FunctionArgs base = node.function().args();
        for (const ArgValue& v : other_values(base[a].second, strings)) {
          FunctionArgs given = base;
          given[a].second = v;
          std::vector<VariablePtr> outs;
          std::shared_ptr<Function> fn;
          try {
            fn = registry.create_from_args(name, ctx, given);
            Variables raw;
            for (const auto& in : node.inputs()) raw.push_back(in.get());
            const int n = fn->num_outputs_for(raw);
            outs =
                connect(std::make_shared<FunctionNode>(fn, node.inputs()), n);
          } catch (const std::exception&) {
            continue;  // not a value this case's inputs take
          }
          const FunctionArgs sent = fn->args();
          done = true;
          ++changed;
          const std::string what =
              name + "." + defaults[a].first + " = " + arg_str(v) + ": ";
          if (sent.size() != defaults.size() ||
              sent[a].first != defaults[a].first) {
            problems.push_back(what + "the arguments' names changed");
            break;
          }
          if (sent[a].second == base[a].second) {
            problems.push_back(what + "the options kept " +
                               arg_str(base[a].second));
            break;
          }
          const FunctionArgs back = args_after_yaml(outs[0]);
          for (size_t b = 0; b < sent.size(); ++b) {
            if (b >= back.size() || back[b] != sent[b]) {
              problems.push_back(
                  what + "after the YAML, " + sent[b].first + " is " +
                  (b < back.size() ? arg_str(back[b].second) : "missing") +
                  ", not " + arg_str(sent[b].second));
            }
          }
          break;
        }
      }
      if (done) continue;
      // No case's inputs take another value (sizes fixed by the shapes, a
      // layout, ...): the codec alone, arguments to options and back.
      const std::string arg = name + "." + defaults[a].first;
      for (const ArgValue& v : other_values(defaults[a].second, strings)) {
        FunctionArgs given = defaults;
        given[a].second = v;
        FunctionArgs sent;
        try {
          sent = registry.create_from_args(name, ctx, given)->args();
        } catch (const std::exception&) {
          continue;
        }
        done = true;
        if (sent.size() != defaults.size() || sent[a] == defaults[a]) {
          problems.push_back(arg + " = " + arg_str(v) + ": the options kept " +
                             arg_str(defaults[a].second));
        }
        break;
      }
      (done ? codec_only : unchanged).push_back(arg);
    }
  }
  std::string problem_list, codec_list, unchanged_list;
  for (const auto& p : problems) problem_list += "\n  " + p;
  for (const auto& u : codec_only) codec_list += " " + u;
  for (const auto& u : unchanged) unchanged_list += " " + u;
  EXPECT_TRUE(problems.empty()) << problem_list;
  EXPECT_TRUE(unchanged.empty()) << "never set:" << unchanged_list;
  // Most go through a graph's YAML; the rest are listed.
  EXPECT_GE(changed, args * 4 / 5) << "codec only:" << codec_list;
  std::cout << changed << " of " << args
            << " arguments set to a value other than their default came back "
            << "from a graph's YAML field by field; through the codec alone "
            << "(no case's inputs take another value):" << codec_list << "\n";
}

TEST(HarnessCoverage, EveryRegisteredFunctionHasACase) {
  std::vector<std::string> missing;
  size_t functions = 0, cases = 0, long_sums = 0, layouts = 0, integers = 0;
  std::vector<std::string> no_yaml;
  for (const auto& info : function_list()) {
    ++functions;
    const auto& list = harness::cases(info.decl->name);
    if (list.empty()) missing.push_back(info.decl->name);
    cases += list.size();
    for (const auto& c : list) {
      long_sums += c.long_sum;
      if (!c.no_yaml_round_trip.empty()) {
        no_yaml.push_back(std::string(info.decl->name) + " " + c.label + " (" +
                          c.no_yaml_round_trip + ")");
      }
    }
    layouts += is_layout(*info.decl);
    integers += info.decl->has(Port::integer);
  }
  EXPECT_TRUE(missing.empty()) << missing.size() << " functions have no "
                               << "harness case, the first: " << missing[0];
  std::cout << functions << " functions x 3 dtypes: values, grads, "
            << "YAML round trip, accumulation, clear_buffer, integer inputs ("
            << cases << " cases; " << long_sums
            << " long sums checked against double "
            << "in half and bfloat16; " << layouts << " layout functions "
            << "moving int32 data near 2^31; " << integers
            << " functions with integer inputs)\n";
  std::cout << cases - no_yaml.size() << " of " << cases
            << " cases rebuilt from their YAML bit for bit";
  for (const auto& n : no_yaml) std::cout << "; not " << n;
  std::cout << "\n";
}

// The batch-change check over every function in float, with the counts: how
// many functions were set up again at new batch sizes, which refused (with
// the error), which opted out (with the reason).
TEST(HarnessCoverage, EveryFunctionTakesANewBatchSizeOrSaysWhy) {
  std::vector<std::string> again, refused, refused_all, opted_out;
  size_t cases = 0, cases_again = 0;
  for (const auto& info : function_list()) {
    const FunctionDecl& d = *info.decl;
    bool any_again = false, any_refused = false;
    std::string reasons;
    for (const auto& c : harness::cases(d.name)) {
      ++cases;
      const auto r = harness::run_batch_change(d, c, "float");
      std::string sizes;
      for (int64_t b : r.batches)
        sizes += (sizes.empty() ? "" : " -> ") + std::to_string(b);
      if (r.outcome == harness::BatchChange::set_up_again) {
        any_again = true;
        ++cases_again;
      } else if (r.outcome == harness::BatchChange::refused) {
        // Refused at the last size, after the earlier ones set up again.
        any_again |= r.batches.size() > 1;
        any_refused = true;
        refused.push_back(std::string(d.name) + " \"" + c.label + "\" after " +
                          sizes + ": " + r.detail.substr(0, 160));
      } else if (reasons.find(r.detail) == std::string::npos) {
        reasons += (reasons.empty() ? "" : "; ") + r.detail;
      }
    }
    if (any_again) {
      again.push_back(d.name);
    } else if (any_refused) {
      refused_all.push_back(d.name);
    } else if (!reasons.empty()) {
      opted_out.push_back(std::string(d.name) + " (" + reasons + ")");
    }
  }
  // Most functions take any batch size; the few that cannot are listed.
  EXPECT_GE(again.size(), function_list().size() * 3 / 4);
  EXPECT_EQ(again.size() + refused_all.size() + opted_out.size(),
            function_list().size());
  std::cout << again.size() << " of " << function_list().size()
            << " functions set up again at new batch sizes (b -> b + 3 -> 1) "
            << "and matched fresh graphs bit for bit (" << cases_again << " of "
            << cases << " cases); " << refused.size()
            << " cases refused a size, with an error naming the function and "
            << "both shapes, where a fresh build fails too:";
  for (const auto& r : refused) std::cout << "\n  refused: " << r;
  std::cout << "\n"
            << refused_all.size()
            << " functions refused every new batch size (their arguments "
            << "fix the shapes):";
  for (const auto& r : refused_all) std::cout << " " << r;
  std::cout << "\n" << opted_out.size() << " functions opted out:";
  for (const auto& o : opted_out) std::cout << "\n  opted out: " << o;
  std::cout << "\n";
}

// Checks the block of docs/functions.md between the lines `begin` and `end`
// against `want`; with MIXGRAPH_UPDATE_DOCS=1 rewrites it instead.
void check_doc_block(const std::string& begin, const std::string& end,
                     const std::string& want, const std::string& what) {
  std::ifstream in(MIXGRAPH_FUNCTIONS_DOC);
  ASSERT_TRUE(in) << "cannot read " << MIXGRAPH_FUNCTIONS_DOC;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos)
      << MIXGRAPH_FUNCTIONS_DOC << " lacks the line " << begin;
  ASSERT_NE(e, std::string::npos)
      << MIXGRAPH_FUNCTIONS_DOC << " lacks the line " << end;
  const std::string have = doc.substr(b + begin.size(), e - b - begin.size());
  if (have != want && std::getenv("MIXGRAPH_UPDATE_DOCS")) {
    doc.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(MIXGRAPH_FUNCTIONS_DOC) << doc;
    return;
  }
  EXPECT_EQ(have, want) << MIXGRAPH_FUNCTIONS_DOC << "'s " << what
                        << " is stale: run this test with "
                        << "MIXGRAPH_UPDATE_DOCS=1 to rewrite it";
}

// The function table of docs/functions.md is generated from the
// declarations; when a function is added or changed, MIXGRAPH_UPDATE_DOCS=1
// rewrites it.
TEST(FunctionTable, TheDocsListEveryFunctionAsDeclared) {
  check_doc_block(
      "<!-- function table: generated from the declarations by "
      "mg::function_table_markdown() -->\n",
      "<!-- end of the function table -->", function_table_markdown(),
      "function table");
}

// The count of NNabla's functions by NNabla's categories in
// docs/functions.md (tests/data/nnabla_functions.txt), from the registered
// functions.
TEST(FunctionTable, TheDocsCountNNablasFunctionsByCategory) {
  std::ifstream in(MIXGRAPH_NNABLA_LIST);
  ASSERT_TRUE(in) << "cannot read " << MIXGRAPH_NNABLA_LIST;
  std::set<std::string> ours, listed;
  for (const auto& info : function_list()) ours.insert(info.decl->name);
  std::ostringstream md;
  md << "| NNabla category | present | missing |\n| --- | --- | --- |\n";
  int have_all = 0, all = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    ASSERT_NE(colon, std::string::npos) << line;
    std::istringstream names(line.substr(colon + 2));
    std::string name, missing;
    int have = 0, n = 0;
    while (names >> name) {
      listed.insert(name);
      ++n;
      if (ours.count(name)) {
        ++have;
      } else {
        missing += (missing.empty() ? "" : ", ") + name;
      }
    }
    md << "| " << line.substr(0, colon) << " | " << have << "/" << n << " | "
       << missing << " |\n";
    have_all += have;
    all += n;
  }
  EXPECT_EQ(all, 228);
  md << "| all | " << have_all << "/" << all << " | |\n\n";
  std::string extra;
  for (const auto& name : ours) {
    if (!listed.count(name)) extra += (extra.empty() ? "" : ", ") + name;
  }
  md << "Beyond NNabla's list: " << extra << ".\n";
  check_doc_block(
      "<!-- NNabla coverage: generated from the registered functions and "
      "tests/data/nnabla_functions.txt -->\n",
      "<!-- end of the NNabla coverage -->", md.str(), "NNabla coverage");
}

// One of NNabla's literal defaults ("True", "1", "1e-05", "'tanh'",
// "(1,)", "list()") as an argument value; false for an expression NNabla
// evaluates against the inputs ("len(x.shape) - 1", "kernel", "None"),
// which our options spell their own way (an empty list, -1).
bool nnabla_literal(const std::string& type, std::string text, ArgValue* out) {
  if (text == "True" || text == "False") {
    *out = text == "True";
    return true;
  }
  if (type == "string") {
    if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') {
      text = text.substr(1, text.size() - 2);
    }
    *out = text;
    return text.find('(') == std::string::npos;
  }
  const bool list = type == "Shape" || type.rfind("repeated", 0) == 0;
  if (list) {
    if (text == "list()" || text == "()" || text == "[]") {
      *out = std::vector<double>{};
      return true;
    }
    if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
      return false;
    }
    std::vector<double> values;
    std::stringstream items(text.substr(1, text.size() - 2));
    std::string item;
    while (std::getline(items, item, ',')) {
      if (item.find_first_not_of(' ') == std::string::npos) continue;
      size_t used = 0;
      try {
        values.push_back(std::stod(item, &used));
      } catch (const std::exception&) {
        return false;
      }
      if (item.find_first_not_of(' ', used) != std::string::npos) return false;
    }
    *out = values;
    return true;
  }
  size_t used = 0;
  try {
    *out = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

// Numbers compared as numbers (an int64 NNabla argument may be a float
// field here and the other way round), lists element by element.
bool same_value(const ArgValue& ours, const ArgValue& nnabla) {
  auto numbers = [](const ArgValue& v, std::vector<double>* out) {
    if (auto p = std::get_if<int64_t>(&v)) {
      out->assign(1, static_cast<double>(*p));
    } else if (auto p = std::get_if<double>(&v)) {
      out->assign(1, *p);
    } else if (auto p = std::get_if<std::vector<int64_t>>(&v)) {
      out->assign(p->begin(), p->end());
    } else if (auto p = std::get_if<std::vector<double>>(&v)) {
      *out = *p;
    } else {
      return false;
    }
    return true;
  };
  std::vector<double> a, b;
  if (numbers(ours, &a) && numbers(nnabla, &b)) {
    const bool list_a = std::holds_alternative<std::vector<int64_t>>(ours) ||
                        std::holds_alternative<std::vector<double>>(ours);
    const bool list_b = std::holds_alternative<std::vector<double>>(nnabla);
    if (list_a != list_b || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::abs(a[i] - b[i]) > 1e-6 * std::max(1.0, std::abs(b[i]))) {
        return false;
      }
    }
    return true;
  }
  return ours == nnabla;
}

// Every function takes NNabla's arguments (tests/data/nnabla_arguments.txt,
// read from NNabla 1.39's functions.yaml) by NNabla's names, and where
// NNabla's default is a literal, ours is the same value. Our own extra
// arguments are allowed: every argument may be left out.
TEST(NNablaArguments, EveryFunctionTakesNNablasArgumentsWithItsDefaults) {
  // Not an argument value: the builder takes the communicator.
  const std::set<std::string> not_values = {"SyncBatchNormalization.comm"};
  std::ifstream in(MIXGRAPH_NNABLA_ARGS);
  ASSERT_TRUE(in) << "cannot read " << MIXGRAPH_NNABLA_ARGS;
  auto& registry = FunctionRegistry::instance();
  std::string line, problems;
  int checked = 0, literals = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string s; std::getline(fields, s, '\t');) f.push_back(s);
    ASSERT_EQ(f.size(), 4u) << line;
    const std::string& name = f[0];
    if (not_values.count(name + "." + f[1])) continue;
    ++checked;
    FunctionArgs ours;
    try {
      ours =
          registry.create_from_args(name, context("cpu", "float"), {})->args();
    } catch (const std::exception& e) {
      problems += "\n" + name + ": " + e.what();
      continue;
    }
    auto it = std::find_if(ours.begin(), ours.end(),
                           [&](const auto& kv) { return kv.first == f[1]; });
    if (it == ours.end()) {
      problems += "\n" + name + ": no argument '" + f[1] + "'";
      continue;
    }
    ArgValue want;
    if (f[3] == "-" || !nnabla_literal(f[2], f[3], &want)) continue;
    ++literals;
    if (!same_value(it->second, want)) {
      problems += "\n" + name + "." + f[1] + ": default " + f[3] +
                  " in NNabla, not ours";
    }
  }
  EXPECT_GT(checked, 400);
  EXPECT_GT(literals, 250);
  EXPECT_EQ(problems, "");
}

}  // namespace
}  // namespace mg::test::harness_tests
