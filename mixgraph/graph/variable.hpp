// Variable: data and grad arrays, and a node of the computation graph.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mixgraph/graph/ndarray.hpp>

namespace mg {

class Variable;
/// Called by backward with a leaf whose grad is final for the pass and
/// whose data no later function of the pass reads.
using GradReadyCallback = std::function<void(Variable& leaf)>;

class FunctionNode;

/// A value in the graph. It holds its data and its grad, knows the function
/// that produced it (its parent) and runs the graph: `loss->forward()`,
/// `loss->backward(scale)`.
class Variable : public std::enable_shared_from_this<Variable> {
 public:
  explicit Variable(const Shape& shape = {}, bool need_grad = false);
  /// Frees the graph behind it without recursion (deep graphs are fine).
  ~Variable();
  Variable(const Variable&) = delete;
  Variable& operator=(const Variable&) = delete;

  const Shape& shape() const { return data_->shape(); }
  int ndim() const { return data_->ndim(); }
  int64_t size() const { return data_->size(); }
  /// Changes the shape of data and grad (see NdArray::reshape).
  void reshape(const Shape& shape);

  const NdArrayPtr& data() const { return data_; }
  const NdArrayPtr& grad() const { return grad_; }
  /// Replaces the data array; its shape must equal this variable's shape.
  void set_data(NdArrayPtr data);
  void set_grad(NdArrayPtr grad);

  /// Whether backward computes a gradient for this variable. For a leaf it is
  /// what was set; for a function's output, whether any input needs one.
  bool need_grad() const { return need_grad_; }
  void set_need_grad(bool need_grad) { need_grad_ = need_grad; }
  /// A persistent variable keeps its data and grad under clear_buffer.
  bool persistent() const { return persistent_; }
  void set_persistent(bool persistent) { persistent_ = persistent; }
  /// A constant is a leaf whose data belongs to the graph, not to its user
  /// (attention's causal mask): exporters write it inside the model (an
  /// ONNX initializer) rather than as one of the model's inputs.
  bool constant() const { return constant_; }
  void set_constant(bool constant) { constant_ = constant; }
  const std::string& name() const { return name_; }
  void set_name(const std::string& name) { name_ = name; }

  /// The function that computed this variable; null for a leaf.
  const std::shared_ptr<FunctionNode>& parent() const { return parent_; }
  /// Cuts this variable off the graph: it becomes a leaf with need_grad
  /// false, so backward from the functions that read it stops here and no
  /// grad flows to (or is kept for) what computed it (NNabla's
  /// get_unlinked_variable). Its data stays. set_need_grad(true) after it
  /// makes it a leaf that collects its grad.
  void unlink() {
    parent_.reset();
    need_grad_ = false;
  }

  /// Runs every function this variable depends on, in topological order.
  /// clear_buffer frees each intermediate as soon as no later function reads
  /// it; clear_no_need_grad frees those that backward will not read either.
  void forward(bool clear_buffer = false, bool clear_no_need_grad = false);
  /// Seeds this variable's grad with `grad` (the loss scale) and runs
  /// backward. Leaf grads accumulate: zero them first (Solver::zero_grad).
  /// clear_buffer frees each intermediate's data and grad once used.
  /// on_grad_ready, when set, is called with each leaf that gets a grad
  /// (each parameter) as soon as the last function reading that leaf (and
  /// so the last writing its grad) has run, while backward goes on: its
  /// grad is final and nothing later reads its data. Data-parallel
  /// training starts reducing grads there (NNabla's communicator
  /// callbacks, DDP's bucket hooks); Solver::backward_and_update updates
  /// each parameter there.
  void backward(float grad = 1.0f, bool clear_buffer = false,
                const GradReadyCallback& on_grad_ready = {});
  /// As above, seeding with an array of this variable's shape.
  void backward(const NdArrayPtr& grad, bool clear_buffer = false,
                const GradReadyCallback& on_grad_ready = {});

 private:
  friend class FunctionNode;
  friend std::vector<std::shared_ptr<Variable>> connect(
      std::shared_ptr<FunctionNode> node, int num_outputs);
  NdArrayPtr data_;
  NdArrayPtr grad_;
  std::shared_ptr<FunctionNode> parent_;
  bool need_grad_;
  bool persistent_ = false;
  bool constant_ = false;
  std::string name_;
};

using VariablePtr = std::shared_ptr<Variable>;

/// A new leaf variable of zeros.
VariablePtr make_variable(const Shape& shape, bool need_grad = false);

}  // namespace mg
