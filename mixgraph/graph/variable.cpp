#include <mixgraph/graph/variable.hpp>

#include <stdexcept>
#include <unordered_set>

#include <mixgraph/contexts/strings.hpp>

#include <mixgraph/graph/function_node.hpp>

namespace mg {

Variable::Variable(const Shape& shape, bool need_grad)
    : data_(make_ndarray(shape)),
      grad_(make_ndarray(shape)),
      need_grad_(need_grad) {}

Variable::~Variable() {
  // Letting shared_ptr free a chain variable -> node -> input -> node ...
  // recurses once per function and overflows the stack on long sequences.
  // Detach the parents of nodes we hold the last reference to, iteratively.
  std::vector<std::shared_ptr<FunctionNode>> pending;
  if (parent_) pending.push_back(std::move(parent_));
  while (!pending.empty()) {
    std::shared_ptr<FunctionNode> node = std::move(pending.back());
    pending.pop_back();
    if (node.use_count() != 1) continue;  // someone else keeps it alive
    for (auto& in : node->inputs_) {
      if (in.use_count() == 1 && in->parent_) {
        pending.push_back(std::move(in->parent_));
      }
    }
  }  // each node dies here with inputs whose parents are already detached
}

void Variable::reshape(const Shape& shape) {
  data_->reshape(shape);
  grad_->reshape(shape);
}

void Variable::set_data(NdArrayPtr data) {
  if (data->shape() != shape()) {
    throw std::invalid_argument(msg("[Variable::set_data] variable '", name_,
                                    "' has shape ", shape_str(shape()),
                                    ", but the array has shape ",
                                    shape_str(data->shape())));
  }
  data_ = std::move(data);
}

void Variable::set_grad(NdArrayPtr grad) {
  if (grad->shape() != shape()) {
    throw std::invalid_argument(msg("[Variable::set_grad] variable '", name_,
                                    "' has shape ", shape_str(shape()),
                                    ", but the array has shape ",
                                    shape_str(grad->shape())));
  }
  grad_ = std::move(grad);
}

VariablePtr make_variable(const Shape& shape, bool need_grad) {
  return std::make_shared<Variable>(shape, need_grad);
}

// ---- FunctionNode and the builder hook ----

FunctionNode::FunctionNode(std::shared_ptr<Function> function,
                           std::vector<VariablePtr> inputs)
    : function_(std::move(function)),
      inputs_(std::move(inputs)),
      grad_enabled_(grad_mode_enabled()) {}

std::vector<FunctionNode*> functions_in_order(
    const std::vector<VariablePtr>& outputs) {
  std::vector<FunctionNode*> order;
  std::unordered_set<FunctionNode*> seen;
  std::vector<std::pair<FunctionNode*, size_t>> stack;
  for (const auto& v : outputs) {
    FunctionNode* root = v ? v->parent().get() : nullptr;
    if (!root || !seen.insert(root).second) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->inputs().size()) {
        FunctionNode* p = node->inputs()[next++]->parent().get();
        if (p && seen.insert(p).second) stack.emplace_back(p, 0);
        continue;
      }
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

std::vector<VariablePtr> FunctionNode::outputs() {
  std::vector<VariablePtr> outs;
  outs.reserve(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    VariablePtr v = outputs_[i].lock();
    if (!v) {
      v = make_variable(output_shapes_[i]);
      outputs_[i] = v;  // lives as long as the caller holds it
    }
    outs.push_back(std::move(v));
  }
  return outs;
}

bool FunctionNode::shapes_changed(const Variables& outputs) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i]->shape() != input_shapes_[i]) return true;
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (outputs[o]->shape() != output_shapes_[o]) return true;
  }
  return false;
}

void FunctionNode::setup_again(const Variables& inputs,
                               const Variables& outputs) {
  try {
    function_->setup(inputs, outputs);
  } catch (const std::exception& e) {
    std::string was, now;
    for (size_t i = 0; i < inputs.size(); ++i) {
      was += (i ? ", " : "") + shape_str(input_shapes_[i]);
      now += (i ? ", " : "") + shape_str(inputs[i]->shape());
    }
    throw std::invalid_argument(msg(function_->tag(),
                                    "was set up for inputs of shapes ", was,
                                    ", but they now have shapes ", now,
                                    ", which it cannot take: ", e.what()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_shapes_[i] = inputs[i]->shape();
    // A leaf whose data alone was reshaped: its grad follows, so backward
    // never writes a grad of the old size.
    if (inputs[i]->grad()->shape() != inputs[i]->shape()) {
      inputs[i]->grad()->reshape(inputs[i]->shape());
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    output_shapes_[o] = outputs[o]->shape();
  }
}

void FunctionNode::forward(const Variables& inputs, const Variables& outputs) {
  function_->forward(inputs, outputs);
  if (!function_->output_shape_depends_on_data()) return;
  for (size_t o = 0; o < outputs.size(); ++o) {
    output_shapes_[o] = outputs[o]->shape();
  }
}

namespace {

Variables raw(const std::vector<VariablePtr>& vars) {
  Variables r;
  r.reserve(vars.size());
  for (const auto& v : vars) r.push_back(v.get());
  return r;
}

bool& auto_forward_flag() {
  static bool flag = false;
  return flag;
}

bool& grad_mode_flag() {
  thread_local bool flag = true;
  return flag;
}

}  // namespace

std::vector<VariablePtr> connect(std::shared_ptr<FunctionNode> node,
                                 int num_outputs) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    if (!node->inputs_[i]) {
      throw std::invalid_argument(
          msg(node->function().tag(), "input ", i, " is a null variable"));
    }
  }
  std::vector<VariablePtr> outputs;
  bool need_grad = false;
  for (const auto& in : node->inputs_) need_grad = need_grad || in->need_grad();
  need_grad = need_grad && node->grad_enabled();
  for (int i = 0; i < num_outputs; ++i) {
    outputs.push_back(make_variable({}, need_grad));
  }
  node->function().setup(raw(node->inputs_), raw(outputs));
  for (const auto& in : node->inputs_)
    node->input_shapes_.push_back(in->shape());
  for (auto& out : outputs) {
    out->parent_ = node;
    node->outputs_.push_back(out);
    node->output_shapes_.push_back(out->shape());
  }
  if (auto_forward()) {
    node->forward(raw(node->inputs_), raw(outputs));
  }
  return outputs;
}

bool auto_forward() { return auto_forward_flag(); }
void set_auto_forward(bool enabled) { auto_forward_flag() = enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_mode_flag()) {
  grad_mode_flag() = false;
}
NoGradGuard::~NoGradGuard() { grad_mode_flag() = previous_; }
bool grad_mode_enabled() { return grad_mode_flag(); }

AutoForwardGuard::AutoForwardGuard(bool enabled) : previous_(auto_forward()) {
  set_auto_forward(enabled);
}
AutoForwardGuard::~AutoForwardGuard() { set_auto_forward(previous_); }

}  // namespace mg
