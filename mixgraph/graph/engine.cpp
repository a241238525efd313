// forward and backward over the graph below a variable.
//
// Each run sorts the functions the root depends on (O(functions), marks on
// the nodes instead of hash sets) and keeps its per-variable bookkeeping in
// flat arrays indexed by (step, output): a step of a small network costs
// well under a microsecond of engine time per function (bench_training).
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <unordered_set>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/backward_plan.hpp>
#include <mixgraph/graph/check_finite.hpp>
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
  size_t first_out;  // this step's outputs are [first_out, + out.size()) in
                     // the run's per-output arrays
};

uint64_t next_visit_mark() {
  static std::atomic<uint64_t> mark{0};
  return ++mark;
}

// The functions `root` depends on, each after the functions it reads from.
// Iterative, so deep graphs (long sequences) do not overflow the stack.
// Sets each node's visit_index to its place in the order.
std::vector<Step> topological_order(Variable* root, size_t* num_outputs) {
  std::vector<Step> order;
  *num_outputs = 0;
  if (!root->parent()) return order;
  const uint64_t mark = next_visit_mark();
  std::vector<std::pair<FunctionNode*, size_t>> stack;
  stack.emplace_back(root->parent().get(), 0);
  root->parent()->visit_mark = mark;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs().size()) {
      FunctionNode* parent = node->inputs()[next++]->parent().get();
      if (parent && parent->visit_mark != mark) {
        parent->visit_mark = mark;
        stack.emplace_back(parent, 0);
      }
      continue;
    }
    Step step{node, node->outputs(), {}, {}, *num_outputs};
    step.in.reserve(node->inputs().size());
    step.out.reserve(step.outputs.size());
    for (const auto& v : node->inputs()) step.in.push_back(v.get());
    for (const auto& v : step.outputs) step.out.push_back(v.get());
    *num_outputs += step.out.size();
    node->visit_index = order.size();
    order.push_back(std::move(step));
    stack.pop_back();
  }
  return order;
}

// The index of v, an output of a function of `order`, in the run's
// per-output arrays.
size_t output_slot(const std::vector<Step>& order, const Variable* v) {
  const Step& p = order[v->parent()->visit_index];
  for (size_t o = 0; o < p.out.size(); ++o) {
    if (p.out[o] == v) return p.first_out + o;
  }
  throw std::logic_error(
      "[engine] a variable is missing from its parent's "
      "outputs");
}

bool is_intermediate(const Variable* v, const Variable* root) {
  return v->parent() && !v->persistent() && v != root;
}

// Under clear_buffer, an input's grad can take over the buffer of the
// step's one output grad where the function writes it in place (ReLU and
// the other unary functions): that grad is freed after the step anyway, so
// backward then holds one buffer where it held two. Only for an
// intermediate input read once and not accumulated into. Returns the
// input's index, or -1.
int shared_grad_input(const Step& step, const Variable* root,
                      const std::vector<bool>& propagate_down,
                      const std::vector<bool>& accum) {
  if (step.out.size() != 1 || !is_intermediate(step.out[0], root)) return -1;
  const Variable* y = step.out[0];
  for (size_t i = 0; i < step.in.size(); ++i) {
    const Variable* x = step.in[i];
    if (!propagate_down[i] || accum[i] || !is_intermediate(x, root) ||
        !step.node->function().inplace_grad(static_cast<int>(i)) ||
        x->size() != y->size()) {
      continue;
    }
    size_t uses = 0;
    for (const Variable* v : step.in) uses += v == x;
    if (uses == 1) return static_cast<int>(i);
  }
  return -1;
}

// Under clearing, a step's one output can take over the buffer of its one
// input where the function computes in place (ReLU and the other unary
// functions) and the input would be freed right after the step (the
// caller knows): an intermediate no later function or backward reads, held
// by nothing else, in the dtype and on the device the function writes.
// Forward then holds one buffer where it held two, and writes where it has
// just read.
bool takes_input_buffer(const Step& step, const Variable* root) {
  if (step.in.size() != 1 || step.out.size() != 1) return false;
  const Variable* x = step.in[0];
  const Variable* y = step.out[0];
  const Function& f = step.node->function();
  if (!f.inplace_data(0) || !is_intermediate(x, root) ||
      x->size() != y->size() || x->data().use_count() != 1 ||
      x->data()->array_ptr().use_count() != 1) {
    return false;
  }
  const SyncedArray& a = x->data()->array();
  return a.has_head() && !a.filling() && a.dtype() == f.dtype() &&
         a.head_device() == f.device();
}

// Backward runs on the sizes of the last setup; a variable reshaped since
// then would have it read or write out of bounds.
void check_set_up(const Step& step) {
  if (!step.node->shapes_changed(step.out)) return;
  const std::vector<Shape>& was = step.node->setup_input_shapes();
  std::string was_str;
  for (size_t i = 0; i < was.size(); ++i) {
    was_str += (i ? ", " : "") + shape_str(was[i]);
  }
  throw std::invalid_argument(
      msg("[backward] ", step.node->function().name(),
          " was set up for inputs of shapes ", was_str,
          ", but its inputs and outputs now have shapes ", shapes_str(step.in),
          " and ", shapes_str(step.out),
          ": run forward() after reshaping, before backward()"));
}

}  // namespace

void Variable::forward(bool clear_buffer, bool clear_no_need_grad) {
  size_t slots = 0;
  std::vector<Step> order = topological_order(this, &slots);
  const bool clearing = clear_buffer || clear_no_need_grad;

  // Per output: the last step that reads it, and whether backward will.
  std::vector<size_t> last_reader(clearing ? slots : 0, 0);
  std::vector<char> backward_reads(clearing ? slots : 0, 0);
  if (clearing) {
    for (size_t s = 0; s < order.size(); ++s) {
      Function& f = order[s].node->function();
      for (size_t o = 0; o < order[s].out.size(); ++o) {
        backward_reads[order[s].first_out + o] |=
            f.grad_depends_output_data(static_cast<int>(o));
      }
      for (size_t i = 0; i < order[s].in.size(); ++i) {
        Variable* v = order[s].in[i];
        if (!v->parent()) continue;
        const size_t slot = output_slot(order, v);
        last_reader[slot] = s;
        backward_reads[slot] |= f.grad_depends_input_data(static_cast<int>(i));
      }
    }
  }

  // Whether v, an intermediate input of step s, is freed after it.
  const auto freed_after = [&](const Variable* v, size_t s) {
    const size_t slot = output_slot(order, v);
    return last_reader[slot] == s && (clear_buffer || !backward_reads[slot]);
  };
  for (size_t s = 0; s < order.size(); ++s) {
    Step& step = order[s];
    // An input reshaped since setup (a new batch size): set up again down
    // the graph, so that no function runs on the sizes of the old shapes.
    if (step.node->shapes_changed(step.out)) {
      step.node->setup_again(step.in, step.out);
    }
    const bool in_place = clearing && takes_input_buffer(step, this) &&
                          freed_after(step.in[0], s);
    const auto run = [&] {
      step.node->forward(step.in, step.out);
      if (detail::check_finite_depth) {
        detail::check_outputs_finite(step.node->function(), step.in, step.out);
      }
    };
    if (in_place) {
      // The output keeps the buffer; the input lets go of it, also when
      // forward or the finite check throws (else the two would share it
      // from then on, and a later forward would write y over x).
      Variable* x = step.in[0];
      const auto let_go = [x] {
        x->data()->set_array(std::make_shared<SyncedArray>(x->size()));
      };
      step.out[0]->data()->set_array(x->data()->array_ptr());
      try {
        run();
      } catch (...) {
        let_go();
        throw;
      }
      let_go();
      continue;
    }
    run();
    if (!clearing) continue;
    for (Variable* v : step.in) {
      if (is_intermediate(v, this) && freed_after(v, s)) {
        v->data()->array().clear();
      }
    }
  }
}

void Variable::backward(float grad, bool clear_buffer,
                        const GradReadyCallback& on_grad_ready) {
  grad_->fill(grad);
  backward(NdArrayPtr(), clear_buffer, on_grad_ready);
}

void Variable::backward(const NdArrayPtr& grad, bool clear_buffer,
                        const GradReadyCallback& on_grad_ready) {
  if (grad) {
    if (grad->shape() != shape()) {
      throw std::invalid_argument(
          msg("[backward] the grad has shape ", shape_str(grad->shape()),
              ", but variable '", name_, "' has shape ", shape_str(shape())));
    }
    // A copy, not the caller's buffer: the root's grad is the graph's (a
    // later backward(float) fills it), and the caller's array stays theirs.
    SyncedArray& src = grad->array();
    const Dtype dtype = src.dtype();
    auto seed = std::make_shared<SyncedArray>(src.size());
    std::memcpy(seed->cast(dtype, "cpu", /*write_only=*/true),
                src.get(dtype, "cpu"), src.size() * dtype_size(dtype));
    grad_->set_array(std::move(seed));
  }
  std::vector<detail::PlannedStep> plan =
      detail::plan_backward(this, clear_buffer);
  // For CheckFiniteGuard's message: a scalar root's seed is the loss scale.
  std::string seed;
  if (detail::check_finite_depth && size() == 1) {
    const float value =
        *static_cast<const float*>(grad_->array().get(Dtype::f32, "cpu"));
    seed = msg(value, " (the loss scale)");
  }
  detail::run_backward(plan, seed, on_grad_ready);
}

namespace detail {

std::vector<PlannedStep> plan_backward(Variable* root, bool clear_buffer) {
  size_t slots = 0;
  std::vector<Step> order = topological_order(root, &slots);

  // Which outputs get a grad: those computed from a leaf that asks for one
  // by functions not cut off by NoGradGuard.
  std::vector<char> needs_grad(slots, 0);
  auto var_needs_grad = [&](Variable* v) {
    return v->parent() ? needs_grad[output_slot(order, v)] != 0
                       : v->need_grad();
  };
  // With clear_buffer, the step after whose backward an output's data is
  // read no more: its function's when that reads its outputs, else the
  // first in forward order of the functions whose backward read it (the
  // last to run), else its function's. Its grad goes with its function.
  std::vector<size_t> data_free_after(clear_buffer ? slots : 0);
  std::vector<char> producer_reads(clear_buffer ? slots : 0, 0);
  std::vector<size_t> first_reader(clear_buffer ? slots : 0, order.size());
  for (size_t s = 0; s < order.size(); ++s) {
    Step& step = order[s];
    check_set_up(step);
    bool any = false;
    for (Variable* v : step.in) any = any || var_needs_grad(v);
    any = any && step.node->grad_enabled();
    for (size_t o = 0; o < step.out.size(); ++o) {
      needs_grad[step.first_out + o] = any;
    }
    if (!clear_buffer) continue;
    Function& f = step.node->function();
    for (size_t o = 0; o < step.out.size(); ++o) {
      producer_reads[step.first_out + o] =
          f.grad_depends_output_data(static_cast<int>(o));
    }
    for (size_t i = 0; i < step.in.size(); ++i) {
      Variable* v = step.in[i];
      if (!v->parent() || !f.grad_depends_input_data(static_cast<int>(i))) {
        continue;
      }
      size_t& r = first_reader[output_slot(order, v)];
      if (r == order.size()) r = s;  // steps run in forward order here
    }
  }
  if (clear_buffer) {
    for (size_t s = 0; s < order.size(); ++s) {
      for (size_t o = 0; o < order[s].out.size(); ++o) {
        const size_t slot = order[s].first_out + o;
        data_free_after[slot] =
            producer_reads[slot] || first_reader[slot] == order.size()
                ? s
                : first_reader[slot];
      }
    }
  }

  // Walk backward's order once, as it will run, tracking which grads have
  // been written so far: a second write to one is an add.
  std::vector<char> written(slots, 0);
  std::unordered_set<Variable*> written_leaves;
  auto is_written = [&](Variable* v) {
    if (v == root) return true;
    return v->parent() ? written[output_slot(order, v)] != 0
                       : written_leaves.count(v) != 0;
  };
  auto mark_written = [&](Variable* v) {
    if (v->parent()) {
      written[output_slot(order, v)] = 1;
    } else {
      written_leaves.insert(v);
    }
  };
  std::vector<PlannedStep> plan;
  plan.reserve(order.size());
  for (size_t s = order.size(); s-- > 0;) {
    Step& step = order[s];
    PlannedStep p;
    p.node = step.node;
    bool reached = false;
    for (Variable* v : step.out) reached = reached || is_written(v);
    p.run = reached && needs_grad[step.first_out];
    if (p.run) {
      // An output that no path from the root reaches has a zero grad.
      for (size_t o = 0; o < step.out.size(); ++o) {
        if (!is_written(step.out[o]))
          p.zero_outputs.push_back(static_cast<int>(o));
      }
      p.propagate_down.assign(step.in.size(), false);
      p.accum.assign(step.in.size(), false);
      for (size_t i = 0; i < step.in.size(); ++i) {
        Variable* v = step.in[i];
        p.propagate_down[i] = var_needs_grad(v);
        if (!p.propagate_down[i]) continue;
        if (v->parent()) {
          p.accum[i] = is_written(v);
        } else {
          // Leaves accumulate across backward calls; a deferred zero (from
          // zero_grad) needs no add. A leaf read twice here adds the second.
          p.accum[i] = is_written(v) || !v->grad()->array().zeroing();
        }
        mark_written(v);
      }
      if (clear_buffer) {
        p.share_input =
            shared_grad_input(step, root, p.propagate_down, p.accum);
      }
    }
    if (clear_buffer) {
      // Intermediates whose data no later backward reads, and this step's
      // outputs' grads (only this step read them).
      for (Variable* v : step.in) {
        if (is_intermediate(v, root) &&
            data_free_after[output_slot(order, v)] == s) {
          p.free_data.push_back(v);
        }
      }
      for (size_t o = 0; o < step.out.size(); ++o) {
        Variable* v = step.out[o];
        if (!is_intermediate(v, root)) continue;
        if (data_free_after[step.first_out + o] == s) p.free_data.push_back(v);
        p.free_grads.push_back(v);
      }
    }
    p.outputs = std::move(step.outputs);
    p.in = std::move(step.in);
    p.out = std::move(step.out);
    plan.push_back(std::move(p));
  }
  // A leaf is done after the last step that reads it: its grad is final
  // (no later step writes it) and no later step reads its data, so a
  // solver may update it there. Only leaves that get a grad count.
  std::unordered_set<Variable*> with_grad, final_seen;
  for (const PlannedStep& p : plan) {
    if (!p.run) continue;
    for (size_t i = 0; i < p.in.size(); ++i) {
      if (p.propagate_down[i] && !p.in[i]->parent()) with_grad.insert(p.in[i]);
    }
  }
  for (size_t s = plan.size(); s-- > 0;) {
    PlannedStep& p = plan[s];
    if (!p.run) continue;
    for (Variable* v : p.in) {
      if (with_grad.count(v) && final_seen.insert(v).second) {
        p.final_leaves.push_back(v);
      }
    }
  }
  return plan;
}

void run_backward(std::vector<PlannedStep>& plan, const std::string& seed,
                  const GradReadyCallback& on_grad_ready) {
  for (PlannedStep& p : plan) {
    if (p.run) {
      for (int o : p.zero_outputs) p.out[o]->grad()->zero();
      if (p.share_input >= 0) {
        p.in[p.share_input]->grad()->set_array(p.out[0]->grad()->array_ptr());
      }
      p.node->function().backward(p.in, p.out, p.propagate_down, p.accum);
      if (check_finite_depth) {
        check_grads_finite(p.node->function(), p.in, p.out, p.propagate_down,
                           seed);
      }
    }
    if (on_grad_ready) {
      for (Variable* v : p.final_leaves) on_grad_ready(*v);
    }
    for (Variable* v : p.free_data) v->data()->array().clear();
    for (Variable* v : p.free_grads) {
      if (p.share_input >= 0) {  // the input keeps the buffer; this lets go
        v->grad()->set_array(
            std::make_shared<SyncedArray>(v->grad()->array().size()));
      } else {
        v->grad()->array().clear();
      }
    }
  }
}

}  // namespace detail

}  // namespace mg
