// The one harness: it walks mg::function_list() and runs every registered
// case of every function in float, half and bfloat16 (values against a
// double reference, grads against numerical grads, accumulation,
// clear_buffer, integer inputs, long sums in fp32, a new batch size between
// two forwards); a registered function without a case fails. The cases live
// beside each function's own tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "../support/harness.hpp"

namespace mg::test {
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

// Checks the README's block between the lines `begin` and `end` against
// `want`; with MIXGRAPH_UPDATE_README=1 rewrites it instead.
void check_readme_block(const std::string& begin, const std::string& end,
                        const std::string& want, const std::string& what) {
  std::ifstream in(MIXGRAPH_README);
  ASSERT_TRUE(in) << "cannot read " << MIXGRAPH_README;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string readme = ss.str();
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks the line " << begin;
  ASSERT_NE(e, std::string::npos) << "README.md lacks the line " << end;
  const std::string have =
      readme.substr(b + begin.size(), e - b - begin.size());
  if (have != want && std::getenv("MIXGRAPH_UPDATE_README")) {
    readme.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(MIXGRAPH_README) << readme;
    return;
  }
  EXPECT_EQ(have, want) << "README.md's " << what << " is stale: run this "
                        << "test with MIXGRAPH_UPDATE_README=1 to rewrite it";
}

// The README's function table is generated from the declarations; when a
// function is added or changed, MIXGRAPH_UPDATE_README=1 rewrites it.
TEST(FunctionTable, TheReadmeListsEveryFunctionAsDeclared) {
  check_readme_block(
      "<!-- function table: generated from the declarations by "
      "mg::function_table_markdown() -->\n",
      "<!-- end of the function table -->", function_table_markdown(),
      "function table");
}

// The README's count of NNabla's functions by NNabla's categories
// (tests/data/nnabla_functions.txt), from the registered functions.
TEST(FunctionTable, TheReadmeCountsNNablasFunctionsByCategory) {
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
  check_readme_block(
      "<!-- NNabla coverage: generated from the registered functions and "
      "tests/data/nnabla_functions.txt -->\n",
      "<!-- end of the NNabla coverage -->", md.str(), "NNabla coverage");
}

}  // namespace
}  // namespace mg::test
