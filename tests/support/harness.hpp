// The one harness every function goes through (in the style of ggml's
// test-backend-ops): each function registers its cases against its
// declaration; tests/functions/test_harness.cpp walks mg::function_list()
// and runs every case in float, half and bfloat16, fails for a registered
// function without a case, and prints the count.
//
// Each case also runs with a new batch size between two forwards of one
// graph (run_batch_change; Case::batch_inputs, no_batch_change, at_batch).
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
  /// The batch-change check (see run_batch_change): the inputs whose
  /// leading dimension is the batch. Empty: every input whose dim 0 equals
  /// input 0's dim 0 (the case's batch).
  std::vector<int> batch_inputs = {};
  /// Non-empty: why the function cannot take a new batch size (its inputs
  /// have none, e.g. parameters alone); the check is skipped and the reason
  /// printed with the harness's counts.
  std::string no_batch_change = {};
  /// Optional: the case at batch size `batch`, for a builder whose
  /// arguments depend on the batch (a target shape): its inputs give the
  /// new values and its build the fresh graph compared with. Unset: the
  /// same build, explicit values repeated row by row, random ones drawn
  /// anew from the same range.
  std::function<FunctionCheck(int64_t batch)> at_batch = {};
  /// Non-empty: why the case's graph cannot be checked by a YAML round
  /// trip (a random function, whose rebuilt graph draws anew).
  std::string no_yaml_round_trip = {};
};

/// What the batch-change check found for one case.
struct BatchChange {
  enum Outcome {
    set_up_again,  ///< the reshaped graph matched a fresh one at each size
    refused,       ///< forward threw, naming the function and both shapes
    opted_out,     ///< no_batch_change, or no input with a batch dimension
  } outcome;
  /// The reason for opted_out; the error for refused.
  std::string detail;
  /// The batch sizes run, the first the built one.
  std::vector<int64_t> batches;
};

/// Registers cases of the function `decl` declares; returns true (for a
/// namespace-scope `const bool`). Called twice for one function, the cases
/// add up.
bool add(const FunctionDecl& decl, std::vector<Case> cases);

/// The cases of function `name` (empty when none).
const std::vector<Case>& cases(const std::string& name);

/// Every check of `c` in `type_config`: in float the forward against the
/// double reference, the numerical gradient, the graph rebuilt from its
/// YAML (same output bit for bit), accumulation and clear_buffer;
/// in half and bfloat16 forward and grads against float (against double for
/// a long sum), that it ran in the reduced type, accumulation and
/// clear_buffer in that type; integer inputs fed as int32 in every type.
void run(const FunctionDecl& decl, const Case& c,
         const std::string& type_config);

/// Builds c at its batch size b, runs forward (and backward with grads),
/// then reshapes the batch inputs to b + 3 and to 1, refills them, and runs
/// forward and backward again on the same graph: the outputs and input
/// grads must equal those of a graph built fresh at that size, bit for bit,
/// in `type_config`; or forward must throw std::invalid_argument naming the
/// function and the old and new shapes (then the fresh build at the new
/// size must fail as well: a function that could be built there but cannot
/// be set up again is a failure).
BatchChange run_batch_change(const FunctionDecl& decl, const Case& c,
                             const std::string& type_config);

/// For a layout function (first input Port::any): int32 data near 2^31 - 1
/// passes through exactly in `type_config` and stays int32.
void run_integer_layout(const FunctionCheck& c, const std::string& type_config);

}  // namespace mg::test::harness
