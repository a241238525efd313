// The one harness: it walks mg::function_list() and runs every registered
// case of every function in float, half and bfloat16 (values against a
// double reference, grads against numerical grads, accumulation,
// clear_buffer, integer inputs, long sums in fp32); a registered function
// without a case fails. The cases live beside each function's own tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
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
    if (is_layout(d) && c.int32_layout) harness::run_integer_layout(c.make(), p.type_config);
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
  for (const auto& info : function_list()) {
    ++functions;
    const auto& list = harness::cases(info.decl->name);
    if (list.empty()) missing.push_back(info.decl->name);
    cases += list.size();
    for (const auto& c : list) long_sums += c.long_sum;
    layouts += is_layout(*info.decl);
    integers += info.decl->has(Port::integer);
  }
  EXPECT_TRUE(missing.empty()) << missing.size() << " functions have no "
                               << "harness case, the first: " << missing[0];
  std::cout << functions << " functions x 3 dtypes: values, grads, "
            << "accumulation, clear_buffer, integer inputs (" << cases
            << " cases; " << long_sums << " long sums checked against double "
            << "in half and bfloat16; " << layouts << " layout functions "
            << "moving int32 data near 2^31; " << integers
            << " functions with integer inputs)\n";
}

// The README's function table is generated from the declarations; when a
// function is added or changed, MIXGRAPH_UPDATE_README=1 rewrites it.
TEST(FunctionTable, TheReadmeListsEveryFunctionAsDeclared) {
  const std::string begin = "<!-- function table: generated from the "
                            "declarations by mg::function_table_markdown() "
                            "-->\n";
  const std::string end = "<!-- end of the function table -->";
  std::ifstream in(MIXGRAPH_README);
  ASSERT_TRUE(in) << "cannot read " << MIXGRAPH_README;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string readme = ss.str();
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks the line " << begin;
  ASSERT_NE(e, std::string::npos) << "README.md lacks the line " << end;
  const std::string want = function_table_markdown();
  const std::string have = readme.substr(b + begin.size(), e - b - begin.size());
  if (have != want && std::getenv("MIXGRAPH_UPDATE_README")) {
    readme.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(MIXGRAPH_README) << readme;
    return;
  }
  EXPECT_EQ(have, want) << "README.md's function table is stale: run this "
                           "test with MIXGRAPH_UPDATE_README=1 to rewrite it";
}

}  // namespace
}  // namespace mg::test
