// load_onnx: an ONNX model's nodes rebuilt as mixgraph functions, node by
// node in graph order (the converters, one per operator, are in
// onnx_import_*.cpp). Every shape is known here (the batch size included),
// so a node whose inputs are all constants is folded while reading: the
// shape arithmetic exporters write (Shape, Gather, Add, Div, Cast, Concat,
// Range, Where, ...) becomes constants whatever its form.
#include <onnx/checker.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/onnx/onnx_fold.hpp>
#include <mixgraph/utils/onnx/onnx_import.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg {

namespace onnx_import {

namespace F = functions;

class Importer {
 public:
  Importer(const onnx::ModelProto& model, ParameterScope& params,
           std::string source, const NetworkOptions& options)
      : model_(model),
        params_(params),
        source_(std::move(source)),
        options_(options) {}

  Network run() {
    const onnx::GraphProto& g = model_.graph();
    for (const auto& t : g.initializer()) initializers_[t.name()] = &t;
    Network net;
    net.name = g.name();
    for (const auto& in : g.input()) {
      const auto& shape = in.type().tensor_type().shape();
      if (shape.dim_size() > 0 && !shape.dim(0).has_dim_value())
        batch_symbols_.insert(shape.dim(0).dim_param());
    }
    for (const auto& in : g.input()) {
      if (initializers_.count(in.name())) continue;  // an old-style listing
      auto v = make_variable(input_shape(in));
      v->set_name(in.name());
      vars_[in.name()] = v;
      net.inputs.emplace_back(in.name(), v);
    }
    for (const auto& node : g.node()) {
      auto it = rules().find(node.op_type());
      const Op op{*this, node};
      if (!node.domain().empty() && node.domain() != "ai.onnx") {
        op.fail("operators of domain '" + node.domain() +
                "' are not supported (only the default domain)");
      }
      if (it == rules().end()) {
        op.fail(
            "no mixgraph function for this operator "
            "(mg::onnx_importable_operators() lists those read)");
      }
      try {
        if (foldable(node)) {
          fold(op, it->second);
        } else {
          it->second(op);
        }
      } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        if (what.rfind("[load_onnx]", 0) == 0) throw;
        op.fail(what);
      }
    }
    for (const auto& out : g.output()) {
      net.outputs.emplace_back(out.name(), variable(out.name(), nullptr, true,
                                                    "the graph's output"));
    }
    return net;
  }

  std::string where() const { return "[load_onnx] " + source_; }

  bool is_const(const std::string& name) const {
    return constants_.count(name) || initializers_.count(name);
  }
  Tensor constant(const std::string& name, const std::string& who) const {
    auto c = constants_.find(name);
    if (c != constants_.end()) return c->second;
    auto it = initializers_.find(name);
    if (it == initializers_.end()) {
      throw std::invalid_argument(msg(where(), ": ", who, " needs '", name,
                                      "' to be a constant (an initializer or a "
                                      "Constant node)"));
    }
    return onnx_io::read_tensor(*it->second, where());
  }

  VariablePtr variable(const std::string& name, const Shape* shape,
                       bool need_grad, const std::string& who) {
    if (folding_ && is_const(name)) {
      // A variable of the fold's own, never a parameter of the model; kept
      // until the fold ends (rules hold references to its shape).
      auto f = fold_vars_.find(name);
      if (f == fold_vars_.end()) {
        f = fold_vars_.emplace(name, constant_variable(constant(name, who)))
                .first;
      }
      return reshaped(f->second, name, shape, who);
    }
    auto it = vars_.find(name);
    if (it == vars_.end()) {
      if (initializers_.count(name)) {
        it = vars_.emplace(name, parameter(name, shape, need_grad)).first;
      } else if (constants_.count(name)) {
        it = vars_.emplace(name, constant_variable(constants_.at(name))).first;
      } else {
        throw std::invalid_argument(msg(where(), ": ", who, " reads '", name,
                                        "', which no input, initializer or "
                                        "earlier node defines"));
      }
    }
    return reshaped(it->second, name, shape, who);
  }

  VariablePtr reshaped(VariablePtr v, const std::string& name,
                       const Shape* shape, const std::string& who) const {
    if (shape && *shape != v->shape()) {
      if (shape_size(*shape) != v->size()) {
        throw std::invalid_argument(msg(where(), ": ", who, " reads '", name,
                                        "' of shape ", shape_str(v->shape()),
                                        " as ", shape_str(*shape)));
      }
      v = F::reshape(v, *shape);
    }
    return v;
  }

  void set(const std::string& name, const VariablePtr& v) {
    if (folding_) {
      folded_.emplace_back(name, v);
    } else {
      vars_[name] = v;
    }
  }
  void set_const(const std::string& name, Tensor t) {
    constants_[name] = std::move(t);
  }

 private:
  // Whether every input of `node` is known now: a constant, or an
  // initializer that is not floating. A floating initializer is a
  // parameter: folding it into a constant would cut it out of the graph
  // (its grads, and new values set in the scope, would no longer reach the
  // outputs).
  bool foldable(const onnx::NodeProto& node) const {
    if (node.op_type() == "Constant") return false;
    bool any = false;
    for (const std::string& name : node.input()) {
      if (name.empty()) continue;
      if (!is_const(name)) return false;
      auto it = initializers_.find(name);
      if (it != initializers_.end() &&
          is_floating(onnx_io::dtype_of(it->second->data_type(), where())))
        return false;
      any = true;
    }
    return any;
  }

  // Runs a node on constants: integer elementwise arithmetic exactly in
  // int64 (our functions would compute it in the context's floating type),
  // Cast as a conversion, anything else by its rule's own functions,
  // forwarded in fp32 whatever the context.
  void fold(const Op& op, const Rule& rule) {
    const onnx::NodeProto& node = op.node;
    const std::string who =
        "node '" + node.name() + "' (" + node.op_type() + ")";
    std::vector<Tensor> in;
    bool integer = false;
    for (int k = 0; k < node.input_size(); ++k) {
      if (node.input(k).empty()) {
        in.emplace_back();
        continue;
      }
      in.push_back(constant(node.input(k), who));
      const bool data = node.op_type() != "Where" || k > 0;
      if (data && !is_floating(in.back().dtype)) integer = true;
    }
    if (node.op_type() == "Cast") {
      const Dtype to = onnx_io::dtype_of(
          static_cast<int32_t>(op.i("to", onnx::TensorProto_DataType_FLOAT)),
          where() + ": " + who);
      return op.set_const(0, onnx_io::cast_tensor(in[0], to));
    }
    if (integer && onnx_io::folds_integers(node.op_type())) {
      return op.set_const(
          0, onnx_io::fold_integer(node.op_type(), in, op.i("fmod", 0) != 0));
    }
    std::vector<std::pair<std::string, VariablePtr>> outs;
    {
      ContextGuard fp32(context("cpu", "float"));
      folding_ = true;
      folded_.clear();
      try {
        rule(op);
      } catch (...) {
        folding_ = false;
        fold_vars_.clear();
        throw;
      }
      folding_ = false;
      outs.swap(folded_);
      for (auto& [name, v] : outs) v->forward();
      fold_vars_.clear();
    }
    const bool integer_out = !in.empty() && !is_floating(in[0].dtype);
    for (auto& [name, v] : outs) set_const(name, read_back(op, v, integer_out));
  }

  // A folded output as a tensor: in the type it holds, except integer data
  // a floating function computed (ReduceProd of a shape, say), which goes
  // back to int64 where fp32 held it exactly.
  static Tensor read_back(const Op& op, const VariablePtr& v,
                          bool integer_out) {
    Tensor t;
    t.shape = v->shape();
    t.dtype = v->data()->array().dtype();
    if (is_floating(t.dtype)) t.dtype = Dtype::f32;
    const size_t n = static_cast<size_t>(v->size());
    t.bytes.resize(n * dtype_size(t.dtype));
    if (n) {
      std::memcpy(t.bytes.data(), v->data()->array().get(t.dtype, "cpu"),
                  t.bytes.size());
    }
    if (!integer_out || !is_floating(t.dtype)) return t;
    for (double r : t.reals()) {
      if (std::abs(r) >= 16777216.0 || r != std::floor(r)) {
        op.fail("folding integer data through a floating function gives " +
                std::to_string(r) +
                ", which fp32 may have rounded (integers are exact up to "
                "2^24 there)");
      }
    }
    return onnx_io::cast_tensor(t, Dtype::i64);
  }

  Shape input_shape(const onnx::ValueInfoProto& in) const {
    const auto& t = in.type().tensor_type();
    Shape s;
    for (int i = 0; i < t.shape().dim_size(); ++i) {
      const auto& d = t.shape().dim(i);
      if (d.has_dim_value() && d.dim_value() >= 0) {
        s.push_back(d.dim_value());
        continue;
      }
      // The batch: a free first dimension, or one named as some input's
      // free first dimension (an RNN's states are (layers, batch, hidden)).
      if (i != 0 &&
          (d.dim_param().empty() || !batch_symbols_.count(d.dim_param()))) {
        throw std::invalid_argument(
            msg(where(), ": input '", in.name(), "' has a free dimension ", i,
                " ('", d.dim_param(),
                "'); only the batch may be free: the first dimension, or one "
                "named as an input's free first dimension"));
      }
      if (options_.batch_size <= 0) {
        throw std::invalid_argument(
            msg(where(), ": input '", in.name(),
                "' has a free batch "
                "dimension ('",
                d.dim_param(),
                "'): set NetworkOptions::batch_size to the batch size to run"));
      }
      s.push_back(options_.batch_size);
    }
    return s;
  }

  static void fill(const VariablePtr& v, const Tensor& t) {
    // Doubles become floats; everything else keeps its type (fp16 / bf16
    // weights stay as they are, integers stay exact).
    if (t.dtype == Dtype::f64) {
      const std::vector<double> r = t.reals();
      float* p = static_cast<float*>(
          v->data()->array().cast(Dtype::f32, "cpu", /*write_only=*/true));
      for (size_t k = 0; k < r.size(); ++k) p[k] = static_cast<float>(r[k]);
      return;
    }
    void* p = v->data()->array().cast(t.dtype, "cpu", /*write_only=*/true);
    if (!t.bytes.empty()) std::memcpy(p, t.bytes.data(), t.bytes.size());
  }

  VariablePtr parameter(const std::string& name, const Shape* shape,
                        bool need_grad) {
    Tensor t = onnx_io::read_tensor(*initializers_.at(name), where());
    if (shape) {
      if (shape_size(*shape) != t.size()) {
        throw std::invalid_argument(
            msg(where(), ": initializer '", name, "' of shape ",
                shape_str(t.shape), " cannot be read as ", shape_str(*shape)));
      }
      t.shape = *shape;
    }
    return parameter_from(name, t, need_grad);
  }

 public:
  // The parameter `name` with the values of `t` (read in t.shape): the
  // scope's own variable when it has one of that shape.
  VariablePtr parameter_from(const std::string& name, const Tensor& t,
                             bool need_grad) {
    const Shape& s = t.shape;
    const bool floating = t.dtype == Dtype::f32 || t.dtype == Dtype::f16 ||
                          t.dtype == Dtype::bf16 || t.dtype == Dtype::f64;
    VariablePtr v = params_.get(name);
    if (v && v->shape() != s) {
      throw std::invalid_argument(msg(where(), ": parameter '", name, "' is ",
                                      shape_str(s), " in the model but ",
                                      shape_str(v->shape()), " in the scope"));
    }
    if (!v) {
      v = make_variable(s, need_grad && floating);
      v->set_persistent(true);
      params_.set(name, v);
    }
    fill(v, t);
    vars_[name] = v;
    return v;
  }

  // A variable holding `t` (not a parameter).
  static VariablePtr constant_variable(const Tensor& t) {
    auto v = make_variable(t.shape);
    fill(v, t);
    return v;
  }

 private:
  const onnx::ModelProto& model_;
  ParameterScope& params_;
  std::string source_;
  NetworkOptions options_;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, Tensor> constants_;
  std::unordered_map<std::string, VariablePtr> vars_;
  std::set<std::string> batch_symbols_;  // names of free first dimensions
  // While a node is folded: op.x makes fresh constants, op.set collects.
  bool folding_ = false;
  std::vector<std::pair<std::string, VariablePtr>> folded_;
  std::unordered_map<std::string, VariablePtr> fold_vars_;
};

std::string Op::where() const { return im.where(); }
VariablePtr Op::parameter_from(const std::string& name, const Tensor& t,
                               bool need_grad) const {
  return im.parameter_from(name, t, need_grad);
}
VariablePtr constant_variable(const Tensor& t) {
  return Importer::constant_variable(t);
}
void Op::fail(const std::string& what) const {
  throw std::invalid_argument(msg(im.where(), ": node '", node.name(), "' (",
                                  node.op_type(), "): ", what));
}
VariablePtr Op::x(int i, const Shape* shape, bool need_grad) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is missing");
  return im.variable(node.input(i), shape, need_grad,
                     "node '" + node.name() + "' (" + node.op_type() + ")");
}
bool Op::is_const(int i) const { return has(i) && im.is_const(node.input(i)); }
Tensor Op::constant(int i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is missing");
  return im.constant(node.input(i),
                     "node '" + node.name() + "' (" + node.op_type() + ")");
}
bool Op::scalar(int i, double* v) const {
  if (!is_const(i)) return false;
  const Tensor t = constant(i);
  if (t.size() != 1) return false;
  *v = t.reals()[0];
  return true;
}
void Op::set(int o, const VariablePtr& v) const {
  if (o < node.output_size() && !node.output(o).empty())
    im.set(node.output(o), v);
}
void Op::set_const(int o, Tensor t) const {
  if (o < node.output_size()) im.set_const(node.output(o), std::move(t));
}

// ---- constants folded while reading ----

Tensor int_tensor(const std::vector<int64_t>& v, Shape shape) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = Dtype::i64;
  t.bytes.resize(v.size() * sizeof(int64_t));
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// Axes from a constant input (opset 13+) or an attribute (before).
std::vector<int64_t> axes_of(const Op& op, int input) {
  if (op.has(input)) return op.constant(input).ints();
  return op.ints("axes");
}

int64_t norm_axis(const Op& op, int64_t a, size_t ndim) {
  const int64_t n = static_cast<int64_t>(ndim);
  if (a < -n || a >= n) {
    op.fail("axis " + std::to_string(a) + " is out of range for rank " +
            std::to_string(n));
  }
  return a < 0 ? a + n : a;
}

// Symmetric pads (begin == end) as NNabla's per-axis pad.
std::vector<int64_t> symmetric_pads(const Op& op, size_t k) {
  if (op.s("auto_pad", "NOTSET") != "NOTSET" &&
      op.s("auto_pad", "NOTSET") != "VALID") {
    op.fail("auto_pad '" + op.s("auto_pad", "") +
            "' is not supported (write explicit pads)");
  }
  std::vector<int64_t> pads = op.ints("pads", std::vector<int64_t>(2 * k, 0));
  std::vector<int64_t> pad(pads.begin(), pads.begin() + k);
  for (size_t a = 0; a < k; ++a) {
    if (pads[a] != pads[a + k]) {
      op.fail("asymmetric pads " + shape_str(pads) +
              " (mixgraph pads both sides alike)");
    }
  }
  return pad;
}

Shape broadcast_shape(const Op& op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    const int64_t da =
        k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    const int64_t db =
        k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) {
      op.fail("shapes " + shape_str(a) + " and " + shape_str(b) +
              " do not broadcast");
    }
    out[k] = std::max(da, db);
  }
  return out;
}

Rule unary(VariablePtr (*fn)(const VariablePtr&)) {
  return [fn](const Op& op) { op.set(0, fn(op.x(0))); };
}
void alias(const Op& op) {
  if (op.is_const(0)) return op.set_const(0, op.constant(0));
  op.set(0, op.x(0));
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = [] {
    std::map<std::string, Rule> t;
    add_elementwise_rules(t);
    add_nn_rules(t);
    add_array_rules(t);
    add_recurrent_rules(t);
    return t;
  }();
  return table;
}

}  // namespace onnx_import

using onnx_import::rules;

std::vector<std::string> onnx_importable_operators() {
  std::vector<std::string> names;
  for (const auto& [name, r] : rules()) names.push_back(name);
  return names;
}

Network network_from_onnx(const std::string& bytes, ParameterScope& params,
                          const std::string& source,
                          const NetworkOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw std::invalid_argument(
        msg("[load_onnx] ", source,
            ": not an ONNX model (the protobuf does not "
            "parse)"));
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        msg("[load_onnx] ", source,
            ": ONNX's checker rejects the model: ", e.what()));
  }
  for (const auto& o : model.opset_import()) {
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() < 11) {
      throw std::invalid_argument(
          msg("[load_onnx] ", source, ": opset ", o.version(),
              " is too old (11 or newer is read; convert it with "
              "onnx.version_converter)"));
    }
  }
  return onnx_import::Importer(model, params, source, options).run();
}

Network load_onnx(const std::string& path, ParameterScope& params,
                  const NetworkOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(msg("[load_onnx] cannot open '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return network_from_onnx(ss.str(), params, path, options);
}

}  // namespace mg
