// FunctionNode: a function with its inputs and outputs in the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

/// Owns its function and its inputs; holds its outputs weakly (an output owns
/// its parent node, so the graph is kept alive from the outputs down).
class FunctionNode {
 public:
  FunctionNode(std::shared_ptr<Function> function,
               std::vector<VariablePtr> inputs);

  Function& function() { return *function_; }
  const std::shared_ptr<Function>& function_ptr() const { return function_; }
  const std::vector<VariablePtr>& inputs() const { return inputs_; }
  /// The outputs; one the user let go of is replaced by a fresh variable of
  /// its shape, so the function can still run.
  std::vector<VariablePtr> outputs();
  /// False when built under NoGradGuard: backward stops here.
  bool grad_enabled() const { return grad_enabled_; }

  /// Whether an input or an output (`outputs`, as outputs() gives them) has
  /// another shape than when setup last ran: an input reshaped to a new
  /// batch size after the graph was built.
  bool shapes_changed(const Variables& outputs) const;
  /// Runs setup again on the inputs' present shapes (the outputs take their
  /// new shapes) and records them. Where the function cannot take them, throws
  /// std::invalid_argument naming the function, the shapes it was set up for
  /// and the new ones, with setup's reason.
  void setup_again(const Variables& inputs, const Variables& outputs);
  /// Runs the function's forward; where its output shapes depend on the
  /// data, records the shapes forward gave them, which then stand as set
  /// up (the functions below see their inputs reshaped and set up again).
  void forward(const Variables& inputs, const Variables& outputs);
  /// The input shapes setup last ran on.
  const std::vector<Shape>& setup_input_shapes() const { return input_shapes_; }

  /// The engine's scratch: the traversal that last visited this node and
  /// the node's place in that traversal's order (no hash sets per run).
  uint64_t visit_mark = 0;
  size_t visit_index = 0;

 private:
  friend std::vector<VariablePtr> connect(std::shared_ptr<FunctionNode> node,
                                          int num_outputs);
  friend class Variable;
  std::shared_ptr<Function> function_;
  std::vector<VariablePtr> inputs_;
  std::vector<std::weak_ptr<Variable>> outputs_;
  std::vector<Shape> input_shapes_;   // as setup last saw them
  std::vector<Shape> output_shapes_;  // as setup last set them
  bool grad_enabled_ = true;
};

/// Creates the node's outputs, links them to it and runs setup. In auto-
/// forward mode it also runs forward. Used by the function builders.
std::vector<VariablePtr> connect(std::shared_ptr<FunctionNode> node,
                                 int num_outputs);

/// The functions below `outputs` (null ones are skipped), each after the
/// functions it reads from: the order in which a graph is written out (YAML,
/// ONNX). Iterative, so deep graphs are fine.
std::vector<FunctionNode*> functions_in_order(
    const std::vector<VariablePtr>& outputs);

/// Eager mode: every function runs forward as it is created.
bool auto_forward();
void set_auto_forward(bool enabled);

/// Functions created while a NoGradGuard lives are cut from backward.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// True while no NoGradGuard is alive on this thread.
bool grad_mode_enabled();

/// Sets auto_forward for the lifetime of the guard.
class AutoForwardGuard {
 public:
  explicit AutoForwardGuard(bool enabled = true);
  ~AutoForwardGuard();
  AutoForwardGuard(const AutoForwardGuard&) = delete;
  AutoForwardGuard& operator=(const AutoForwardGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace mg
