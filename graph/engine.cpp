// forward and backward over the graph below a variable.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

namespace {

// One function of the run, with its outputs held for the run's duration.
struct Step {
  FunctionNode* node;
  std::vector<VariablePtr> outputs;
  Variables in;
  Variables out;
};

// The functions `root` depends on, each after the functions it reads from.
// Iterative, so deep graphs (long sequences) do not overflow the stack.
std::vector<Step> topological_order(Variable* root) {
  std::vector<Step> order;
  std::unordered_set<FunctionNode*> visited;
  if (!root->parent()) return order;
  std::vector<std::pair<FunctionNode*, size_t>> stack;
  stack.emplace_back(root->parent().get(), 0);
  visited.insert(root->parent().get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs().size()) {
      FunctionNode* parent = node->inputs()[next++]->parent().get();
      if (parent && visited.insert(parent).second) stack.emplace_back(parent, 0);
      continue;
    }
    Step step{node, node->outputs(), {}, {}};
    for (const auto& v : node->inputs()) step.in.push_back(v.get());
    for (const auto& v : step.outputs) step.out.push_back(v.get());
    order.push_back(std::move(step));
    stack.pop_back();
  }
  return order;
}

bool is_intermediate(const Variable* v, const Variable* root) {
  return v->parent() && !v->persistent() && v != root;
}

}  // namespace

void Variable::forward(bool clear_buffer, bool clear_no_need_grad) {
  std::vector<Step> order = topological_order(this);

  // The last step that reads each intermediate, and whether backward will.
  std::unordered_map<Variable*, size_t> last_reader;
  std::unordered_map<Variable*, bool> backward_reads;
  if (clear_buffer || clear_no_need_grad) {
    for (size_t s = 0; s < order.size(); ++s) {
      Function& f = order[s].node->function();
      for (size_t o = 0; o < order[s].out.size(); ++o) {
        backward_reads[order[s].out[o]] |=
            f.grad_depends_output_data(static_cast<int>(o));
      }
      for (size_t i = 0; i < order[s].in.size(); ++i) {
        Variable* v = order[s].in[i];
        last_reader[v] = s;
        backward_reads[v] |= f.grad_depends_input_data(static_cast<int>(i));
      }
    }
  }

  for (size_t s = 0; s < order.size(); ++s) {
    order[s].node->function().forward(order[s].in, order[s].out);
    if (!clear_buffer && !clear_no_need_grad) continue;
    for (Variable* v : order[s].in) {
      if (!is_intermediate(v, this) || last_reader[v] != s) continue;
      if (clear_buffer || !backward_reads[v]) v->data()->array().clear();
    }
  }
}

void Variable::backward(float grad, bool clear_buffer) {
  grad_->fill(grad);
  backward(NdArrayPtr(), clear_buffer);
}

void Variable::backward(const NdArrayPtr& grad, bool clear_buffer) {
  if (grad) {
    if (grad->shape() != shape()) {
      throw std::invalid_argument(
          "[backward] the grad has shape " + shape_str(grad->shape()) +
          ", but variable '" + name_ + "' has shape " + shape_str(shape()));
    }
    grad_->set_array(grad->array_ptr());
  }
  std::vector<Step> order = topological_order(this);

  // Which variables get a grad: leaves that ask for one and everything
  // computed from them by a function not cut off by NoGradGuard.
  std::unordered_map<Variable*, bool> needs_grad;
  auto var_needs_grad = [&](Variable* v) {
    auto it = needs_grad.find(v);
    return it != needs_grad.end() ? it->second : v->need_grad();
  };
  for (auto& step : order) {
    bool any = false;
    for (Variable* v : step.in) any = any || var_needs_grad(v);
    any = any && step.node->grad_enabled();
    for (Variable* v : step.out) needs_grad[v] = any;
  }

  // Intermediates whose grad has been written in this pass.
  std::unordered_set<Variable*> written{this};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Step& step = *it;
    bool reached = false;
    for (Variable* v : step.out) reached = reached || written.count(v);
    if (reached && needs_grad[step.out.front()]) {
      // An output that no path from the root reaches has a zero grad.
      for (Variable* v : step.out) {
        if (!written.count(v)) v->grad()->zero();
      }
      std::vector<bool> propagate_down(step.in.size());
      std::vector<bool> accum(step.in.size());
      for (size_t i = 0; i < step.in.size(); ++i) {
        Variable* v = step.in[i];
        propagate_down[i] = var_needs_grad(v);
        if (!propagate_down[i]) continue;
        if (v->parent()) {
          accum[i] = written.count(v) > 0;
        } else {
          // Leaves accumulate across backward calls; a deferred zero (from
          // zero_grad) needs no add. A leaf read twice here adds the second.
          accum[i] = written.count(v) > 0 || !v->grad()->array().zeroing();
        }
        written.insert(v);
      }
      step.node->function().backward(step.in, step.out, propagate_down, accum);
    }
    if (clear_buffer) {
      for (Variable* v : step.out) {
        if (!is_intermediate(v, this)) continue;
        v->data()->array().clear();
        v->grad()->array().clear();
      }
    }
  }
}

}  // namespace mg
