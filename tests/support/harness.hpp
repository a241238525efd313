// The one harness every function goes through (in the style of ggml's
// test-backend-ops): each function registers its cases against its
// declaration; tests/functions/test_harness.cpp walks mg::function_list()
// and runs every case in float, half and bfloat16, fails for a registered
// function without a case, and prints the count.
//
// A test file registers at namespace scope:
//   const bool kHarness = harness::add(decl::MaxPooling, {
//       {"2x2", [] { return max_check({2, 3, 6, 6}, {2, 2}, {}); }},
//   });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/ops/op_list.hpp>

#include "function_tester.hpp"

namespace mg::test::harness {

/// One configuration of a function.
struct Case {
  std::string label;
  /// The check: inputs, builder, double reference, tolerances.
  std::function<FunctionCheck()> make;
  /// A sum long enough that fp16 accumulation would fail the half check
  /// against the double reference (at the case's half tolerance): the
  /// harness then compares half with double directly, not with float.
  bool long_sum = false;
  /// Whether the build is a layout function alone (no arithmetic around
  /// it), so that int32 data can pass through it: checked for Port::any
  /// functions.
  bool int32_layout = true;
};

/// Registers cases of the function `decl` declares; returns true (for a
/// namespace-scope `const bool`). Called twice for one function, the cases
/// add up.
bool add(const FunctionDecl& decl, std::vector<Case> cases);

/// The cases of function `name` (empty when none).
const std::vector<Case>& cases(const std::string& name);

/// Every check of `c` in `type_config`: in float the forward against the
/// double reference, the numerical gradient, accumulation and clear_buffer;
/// in half and bfloat16 forward and grads against float (against double for
/// a long sum), that it ran in the reduced type, accumulation and
/// clear_buffer in that type; integer inputs fed as int32 in every type.
void run(const FunctionDecl& decl, const Case& c,
         const std::string& type_config);

/// For a layout function (first input Port::any): int32 data near 2^31 - 1
/// passes through exactly in `type_config` and stays int32.
void run_integer_layout(const FunctionCheck& c, const std::string& type_config);

}  // namespace mg::test::harness
