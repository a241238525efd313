// The plan backward() runs: decided from the graph before any grad is
// computed, so that what backward does (which functions run, which grads
// are written or added to, which buffers are shared and when each is freed)
// can be read and tested apart from running it.
//
// Internal to the engine (namespace detail): Variable::backward() makes a
// plan and runs it; tests/graph/test_backward_plan.cpp checks plans alone.
#pragma once

#include <vector>

#include <mixgraph/graph/variable.hpp>

namespace mg {

class FunctionNode;
using Variables = std::vector<Variable*>;

namespace detail {

/// One function's part of a backward pass, in the order backward runs them
/// (the reverse of forward's).
struct PlannedStep {
  FunctionNode* node = nullptr;
  std::vector<VariablePtr> outputs;  // held for the pass
  Variables in, out;
  /// Whether its backward runs: some output is reached from the root and
  /// some input needs a grad.
  bool run = false;
  /// Outputs no path from the root reaches: their grads are zeroed first.
  std::vector<int> zero_outputs;
  /// Per input: whether its grad is computed, and whether it is added to
  /// (a variable read by several functions, a leaf keeping earlier grads).
  std::vector<bool> propagate_down, accum;
  /// The input whose grad takes over the buffer of the one output's grad
  /// (an in-place grad under clear_buffer), or -1.
  int share_input = -1;
  /// After the step, under clear_buffer: data no later step reads, and this
  /// step's outputs' grads (only this step reads them).
  Variables free_data, free_grads;
  /// Leaves (parameters) that get a grad in the pass and that no later step
  /// reads: their grads are final and their data free to change (a solver
  /// updating in backward). After the step, backward's grad-ready callback
  /// is called for each.
  Variables final_leaves;
};

/// The backward pass of `root` (whose grad is already seeded).
std::vector<PlannedStep> plan_backward(Variable* root, bool clear_buffer);

/// Runs a plan; `seed` describes the root's grad for CheckFiniteGuard's
/// messages ("" when not a scalar).
/// `on_grad_ready` (when set) is called with each leaf as soon as the last
/// step reading it (writing its grad or not) has run.
void run_backward(std::vector<PlannedStep>& plan, const std::string& seed,
                  const GradReadyCallback& on_grad_ready = {});

}  // namespace detail

}  // namespace mg
