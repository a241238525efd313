// load_onnx: an ONNX model's nodes rebuilt as mixgraph functions. Every
// shape is known here (the batch size included), so a node whose inputs are
// all constants is folded while reading: the shape arithmetic exporters
// write (Shape, Gather, Add, Div, Cast, Concat, Range, Where, ...) becomes
// constants whatever its form.
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
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/deconvolution.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/integer_ops.hpp>
#include <mixgraph/functions/interpolate.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/nary.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/onnx_resize.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/prelu.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/scatter_ops.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/onnx/onnx_fold.hpp>
#include <mixgraph/utils/onnx/onnx_recurrent.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg {

namespace F = functions;

namespace {

using onnx_io::Tensor;

std::vector<int> to_int(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

class Importer;

// One ONNX node being rebuilt.
struct Op {
  Importer& im;
  const onnx::NodeProto& node;

  [[noreturn]] void fail(const std::string& what) const;
  int num_inputs() const { return node.input_size(); }
  bool has(int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }
  // Input i as a variable; `shape`: a parameter read in that shape.
  VariablePtr x(int i, const Shape* shape = nullptr,
                bool need_grad = true) const;
  VariablePtr x(int i, const Shape& shape, bool need_grad = true) const {
    return x(i, &shape, need_grad);
  }
  const Shape& shape(int i) const { return x(i)->shape(); }
  bool is_const(int i) const;
  Tensor constant(int i) const;
  // A constant input of one element (a scalar operand), if it is one.
  bool scalar(int i, double* v) const;
  const onnx::AttributeProto* attr(const char* name) const {
    for (const auto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t i(const char* name, int64_t fallback) const {
    auto* a = attr(name);
    return a ? a->i() : fallback;
  }
  double f(const char* name, double fallback) const {
    auto* a = attr(name);
    return a ? a->f() : fallback;
  }
  std::string s(const char* name, const std::string& fallback) const {
    auto* a = attr(name);
    return a ? a->s() : fallback;
  }
  std::vector<int64_t> ints(const char* name,
                            std::vector<int64_t> fallback = {}) const {
    auto* a = attr(name);
    if (!a) return fallback;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }
  void set(int o, const VariablePtr& v) const;
  void set_const(int o, Tensor t) const;
  // Attributes that must keep ONNX's default for the mapping to hold.
  void need_default(const char* name, int64_t value) const {
    if (i(name, value) != value) {
      fail("attribute " + std::string(name) + " = " +
           std::to_string(i(name, value)) + " is not supported (only " +
           std::to_string(value) + ")");
    }
  }
};

using Rule = std::function<void(const Op&)>;
const std::map<std::string, Rule>& rules();

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

// Binary operators; a one-element constant operand becomes a scalar
// function (AddScalar, RSubScalar, ...).
using BinaryFn = VariablePtr (*)(const VariablePtr&, const VariablePtr&);
using ScalarFn = VariablePtr (*)(const VariablePtr&, float);
// A one-element constant input i that leaves the other operand's shape as
// it is (a rank above the other's would add axes to the result).
bool scalar_operand(const Op& op, int i, int other, double* c) {
  return !op.is_const(other) && op.scalar(i, c) &&
         op.constant(i).shape.size() <= op.shape(other).size();
}

// x with leading ones up to `rank`.
VariablePtr to_rank(const VariablePtr& x, size_t rank) {
  if (x->shape().size() >= rank) return x;
  Shape s(rank - x->shape().size(), 1);
  s.insert(s.end(), x->shape().begin(), x->shape().end());
  return F::reshape(x, s);
}

// ONNX's multidirectional broadcasting of a and b: our binary functions
// broadcast size-1 axes of either operand between equal ranks.
VariablePtr broadcast_binary(BinaryFn both, VariablePtr a, VariablePtr b) {
  const size_t rank = std::max(a->shape().size(), b->shape().size());
  return both(to_rank(a, rank), to_rank(b, rank));
}

Rule binary(BinaryFn both, ScalarFn x_op_c, ScalarFn c_op_x) {
  return [=](const Op& op) {
    double c = 0;
    if (op.num_inputs() != 2) {  // Max, Min, Sum: variadic, from the left
      VariablePtr y = op.x(0);
      for (int k = 1; k < op.num_inputs(); ++k)
        y = broadcast_binary(both, y, op.x(k));
      return op.set(0, y);
    }
    if (x_op_c && scalar_operand(op, 1, 0, &c)) {
      return op.set(0, x_op_c(op.x(0), static_cast<float>(c)));
    }
    if (c_op_x && scalar_operand(op, 0, 1, &c)) {
      return op.set(0, c_op_x(op.x(1), static_cast<float>(c)));
    }
    broadcast_shape(op, op.shape(0), op.shape(1));  // an error names the node
    op.set(0, broadcast_binary(both, op.x(0), op.x(1)));
  };
}

Rule unary(VariablePtr (*fn)(const VariablePtr&)) {
  return [fn](const Op& op) { op.set(0, fn(op.x(0))); };
}
void alias(const Op& op) {
  if (op.is_const(0)) return op.set_const(0, op.constant(0));
  op.set(0, op.x(0));
}

void conv(const Op& op) {
  const Shape& ws = op.shape(1);
  const size_t k = ws.size() - 2;
  ConvolutionOptions o;
  o.pad = symmetric_pads(op, k);
  o.stride = op.ints("strides", std::vector<int64_t>(k, 1));
  o.dilation = op.ints("dilations", std::vector<int64_t>(k, 1));
  o.group = static_cast<int>(op.i("group", 1));
  op.set(0, F::convolution(op.x(0), op.x(1), op.has(2) ? op.x(2) : nullptr, o));
}

void conv_transpose(const Op& op) {
  if (op.attr("output_shape")) op.fail("output_shape is not supported");
  const Shape& ws = op.shape(1);
  const size_t k = ws.size() - 2;
  DeconvolutionOptions o;
  o.pad = symmetric_pads(op, k);
  o.stride = op.ints("strides", std::vector<int64_t>(k, 1));
  o.dilation = op.ints("dilations", std::vector<int64_t>(k, 1));
  o.group = static_cast<int>(op.i("group", 1));
  o.output_padding = op.ints("output_padding");
  op.set(0,
         F::deconvolution(op.x(0), op.x(1), op.has(2) ? op.x(2) : nullptr, o));
}

void gemm(const Op& op) {
  VariablePtr a = op.x(0);
  if (a->ndim() != 2) op.fail("A is " + shape_str(a->shape()) + ", not 2-D");
  if (op.i("transA", 0)) a = F::transpose(a, {1, 0});
  // B as the affine weight (K, M): a transposed initializer is read
  // transposed once, into the parameter, not at every forward.
  VariablePtr w;
  if (op.i("transB", 0)) {
    if (op.is_const(1)) {
      Tensor t = op.constant(1);
      if (t.shape.size() != 2) op.fail("B is not 2-D");
      const int64_t M = t.shape[0], K = t.shape[1];
      const size_t e = dtype_size(t.dtype);
      std::vector<uint8_t> tb(t.bytes.size());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k)
          std::memcpy(&tb[(k * M + m) * e], &t.bytes[(m * K + k) * e], e);
      t.bytes = std::move(tb);
      t.shape = {K, M};
      w = op.im.parameter_from(op.node.input(1), t, true);
    } else {
      w = F::transpose(op.x(1), {1, 0});
    }
  } else {
    w = op.x(1);
  }
  const double alpha = op.f("alpha", 1.0), beta = op.f("beta", 1.0);
  const int64_t M = w->shape()[1];
  VariablePtr bias;
  VariablePtr c;
  if (op.has(2)) {
    c = op.x(2);
    if (c->size() == M && beta == 1.0 && alpha == 1.0) {
      bias = op.x(2, Shape{M});
      c = nullptr;
    }
  }
  VariablePtr y = F::affine(a, w, bias);
  if (alpha != 1.0) y = F::mul_scalar(y, static_cast<float>(alpha));
  if (c) {
    if (beta != 1.0) c = F::mul_scalar(c, static_cast<float>(beta));
    if (c->ndim() < 2) c = F::reshape(c, Shape{1, c->size()});
    y = F::add2(y, c);
  }
  op.set(0, y);
}

void matmul(const Op& op) {
  VariablePtr a = op.x(0);
  if (op.is_const(1) && op.constant(1).shape.size() == 2 && a->ndim() >= 2) {
    // x W with a 2-D weight: an affine over the last axis.
    op.set(0, F::affine(a, op.x(1), nullptr,
                        AffineOptions{static_cast<int>(a->ndim() - 1)}));
    return;
  }
  op.set(0, F::batch_matmul(a, op.x(1)));
}

void batch_norm(const Op& op) {
  if (op.i("training_mode", 0) != 0) op.fail("training_mode 1");
  const Shape& xs = op.shape(0);
  if (xs.size() < 2) op.fail("X has no channel axis");
  Shape ps(xs.size(), 1);
  ps[1] = xs[1];
  BatchNormalizationOptions o;
  o.axes = {1};
  o.eps = static_cast<float>(op.f("epsilon", 1e-5));
  o.decay_rate = 1.0f - static_cast<float>(op.f("momentum", 0.9));
  o.batch_stat = false;
  op.set(0, F::batch_normalization(op.x(0), op.x(2, ps), op.x(1, ps),
                                   op.x(3, ps, false), op.x(4, ps, false), o));
}

Rule pool(bool max) {
  return [max](const Op& op) {
    const std::vector<int64_t> kernel = op.ints("kernel_shape");
    const size_t k = kernel.size();
    if (op.shape(0).size() != k + 2) op.fail("X is not (N, C, spatial...)");
    if (op.ints("dilations", std::vector<int64_t>(k, 1)) !=
        std::vector<int64_t>(k, 1)) {
      op.fail("dilations other than 1 are not supported");
    }
    op.need_default("storage_order", 0);
    PoolingOptions o;
    o.pad = symmetric_pads(op, k);
    o.stride = op.ints("strides", std::vector<int64_t>(k, 1));
    o.including_pad = op.i("count_include_pad", 0) != 0;
    VariablePtr x = op.x(0);
    if (op.i("ceil_mode", 0)) {
      // Output sizes rounded up, a window that would start past the input
      // and its left padding dropped (PyTorch's rule, which its exporter
      // writes): max pooling pads the end of x with -inf instead (a max
      // ignores it: every window keeps an element of x), NNabla's
      // ignore_border false where that gives the same sizes.
      std::vector<int> ends;
      bool padded = false;
      for (size_t a = 0; a < k; ++a) {
        const int64_t in = op.shape(0)[2 + a], p = o.pad[a], s = o.stride[a];
        const int64_t span = in + 2 * p - kernel[a];
        int64_t want = (span + s - 1) / s + 1;
        if ((want - 1) * s >= in + p) --want;
        const int64_t extra = (want - 1) * s + kernel[a] - (in + 2 * p);
        ends.push_back(static_cast<int>(p));
        ends.push_back(static_cast<int>(p + std::max<int64_t>(extra, 0)));
        padded = padded || extra > 0;
      }
      if (padded && !max) {
        op.fail(
            "ceil_mode 1 of an AveragePool whose last window reaches "
            "past the padding has no mixgraph equivalent");
      }
      if (padded) {
        x = F::pad(x, ends, "constant",
                   -std::numeric_limits<float>::infinity());
        o.pad.assign(k, 0);
      }
    }
    op.set(0, max ? F::max_pooling(x, kernel, o)
                  : F::average_pooling(x, kernel, o));
  };
}

Shape reshape_target(const Op& op, const Shape& in, std::vector<int64_t> s) {
  int free = -1;
  int64_t known = 1;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == 0 && !op.i("allowzero", 0)) {
      if (k >= in.size()) op.fail("shape entry 0 past the input's rank");
      s[k] = in[k];
    }
    if (s[k] == -1) {
      if (free >= 0) op.fail("two -1 entries in the shape");
      free = static_cast<int>(k);
    } else {
      known *= s[k];
    }
  }
  if (free >= 0) s[free] = known ? shape_size(in) / known : 0;
  if (shape_size(s) != shape_size(in)) {
    op.fail("cannot reshape " + shape_str(in) + " to " + shape_str(s));
  }
  return s;
}

void reshape(const Op& op) {
  if (op.is_const(0)) {  // shape arithmetic on constants
    Tensor t = op.constant(0);
    t.shape = reshape_target(op, t.shape, op.constant(1).ints());
    return op.set_const(0, t);
  }
  op.set(0, F::reshape(op.x(0),
                       reshape_target(op, op.shape(0), op.constant(1).ints())));
}

void flatten(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", 1), s.size() + 1);
  op.set(0, F::reshape(op.x(0), Shape{shape_size(s, 0, static_cast<int>(a)),
                                      shape_size(s, static_cast<int>(a),
                                                 static_cast<int>(s.size()))}));
}

// Squeeze and Unsqueeze, on constants (shape arithmetic) or variables.
void squeeze(const Op& op, bool un) {
  const bool c = op.is_const(0);
  Tensor t;
  Shape s = c ? (t = op.constant(0)).shape : op.shape(0);
  std::vector<int64_t> axes = axes_of(op, 1);
  if (un) {
    const size_t rank = s.size() + axes.size();
    for (auto& a : axes) a = norm_axis(op, a, rank);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) s.insert(s.begin() + a, 1);
  } else {
    if (axes.empty()) {
      for (size_t a = 0; a < s.size(); ++a)
        if (s[a] == 1) axes.push_back(static_cast<int64_t>(a));
    }
    for (auto& a : axes) a = norm_axis(op, a, s.size());
    std::sort(axes.rbegin(), axes.rend());
    for (int64_t a : axes) {
      if (s[a] != 1)
        op.fail("squeezes axis " + std::to_string(a) + " of size " +
                std::to_string(s[a]));
      s.erase(s.begin() + a);
    }
  }
  if (c) {
    t.shape = s;
    return op.set_const(0, t);
  }
  op.set(0, F::reshape(op.x(0), s));
}

// Whether input k is a constant 1-D integer tensor (a shape's entries).
bool int_vector(const Op& op, int k) {
  if (!op.is_const(k)) return false;
  const Tensor t = op.constant(k);
  return t.shape.size() == 1 && !is_floating(t.dtype);
}

void concat(const Op& op) {
  bool shapes = true;
  for (int k = 0; k < op.num_inputs(); ++k)
    shapes = shapes && int_vector(op, k);
  if (shapes) {  // shape lists, exactly; other constants fold through ours
    std::vector<int64_t> v;
    for (int k = 0; k < op.num_inputs(); ++k) {
      const auto part = op.constant(k).ints();
      v.insert(v.end(), part.begin(), part.end());
    }
    return op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
  }
  std::vector<VariablePtr> xs;
  for (int k = 0; k < op.num_inputs(); ++k) xs.push_back(op.x(k));
  op.set(0, F::concatenate(xs, static_cast<int>(op.i("axis", 0))));
}

void shape_op(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t n = static_cast<int64_t>(s.size());
  int64_t start = op.i("start", 0), end = op.i("end", n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  std::vector<int64_t> v(s.begin() + start, s.begin() + end);
  op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
}

void gather(const Op& op) {
  const int64_t axis = op.i("axis", 0);
  if (!op.is_const(1)) {
    return op.set(0, F::gather(op.x(0), op.x(1, nullptr, false),
                               static_cast<int>(axis), 0));
  }
  // Constant indices: ONNX's negative ones count from the end (y[:, -1]);
  // ours must be in [0, n).
  const bool const_data = op.is_const(0);
  const Shape s = const_data ? op.constant(0).shape : op.shape(0);
  const int64_t a = norm_axis(op, axis, s.size()), n = s[a];
  const Tensor idx = op.constant(1);
  std::vector<int64_t> ids = idx.ints();
  for (int64_t& i : ids) {
    if (i < -n || i >= n) {
      op.fail("index " + std::to_string(i) + " is out of range for axis " +
              std::to_string(a) + " of size " + std::to_string(n));
    }
    if (i < 0) i += n;
  }
  if (const_data && s.size() == 1 && !is_floating(op.constant(0).dtype)) {
    const std::vector<int64_t> vals = op.constant(0).ints();
    std::vector<int64_t> out;  // a shape's entries, exactly
    for (int64_t i : ids) out.push_back(vals[static_cast<size_t>(i)]);
    return op.set_const(0, int_tensor(out, idx.shape));
  }
  op.set(0, F::gather(op.x(0),
                      Importer::constant_variable(int_tensor(ids, idx.shape)),
                      static_cast<int>(a), 0));
}

// ONNX's indices (..., k) hold each index tuple on the last axis; ours
// (k, ...) on the first: the same scatter with that axis moved. Swin's
// shifted-window mask is built this way (all constants: folded).
void scatter_nd(const Op& op) {
  const std::string reduction = op.s("reduction", "none");
  if (reduction != "none" && reduction != "add") {
    op.fail("reduction '" + reduction + "' is not supported (none and add)");
  }
  VariablePtr indices = op.x(1, nullptr, false);
  const int r = indices->ndim();
  if (r < 1) op.fail("indices must have at least one axis");
  std::vector<int> perm{r - 1};
  for (int a = 0; a + 1 < r; ++a) perm.push_back(a);
  if (r > 1) indices = F::transpose(indices, perm);
  op.set(0, F::scatter_nd(op.x(2), indices, op.x(0), {}, reduction == "add"));
}

void cast(const Op& op) {
  // The context decides floating types; integers stay exact either way.
  alias(op);
}

void constant(const Op& op) {
  const onnx::AttributeProto* a = op.attr("value");
  if (a) return op.set_const(0, onnx_io::read_tensor(a->t(), op.im.where()));
  if ((a = op.attr("value_float"))) {
    Tensor t;
    t.dtype = Dtype::f32;
    const float f = a->f();
    t.bytes.resize(4);
    std::memcpy(t.bytes.data(), &f, 4);
    return op.set_const(0, t);
  }
  if ((a = op.attr("value_int")))
    return op.set_const(0, int_tensor({a->i()}, {}));
  if ((a = op.attr("value_ints"))) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    return op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
  }
  op.fail("only value, value_float, value_int and value_ints are supported");
}

void slice(const Op& op) {
  const Shape& s = op.shape(0);
  const std::vector<int64_t> starts = op.constant(1).ints(),
                             ends = op.constant(2).ints();
  std::vector<int64_t> axes =
      op.has(3) ? op.constant(3).ints() : std::vector<int64_t>{};
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> steps = op.has(4)
                                   ? op.constant(4).ints()
                                   : std::vector<int64_t>(starts.size(), 1);
  const size_t n = s.size();
  std::vector<int64_t> start(n, 0), stop(s.begin(), s.end()), step(n, 1);
  std::vector<int> flipped;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = norm_axis(op, axes[k], n);
    const int64_t dim = s[a];
    if (steps[k] == -1 && (starts[k] == -1 || starts[k] >= dim - 1) &&
        ends[k] < -dim) {
      flipped.push_back(static_cast<int>(a));  // a whole reversed axis
      continue;
    }
    if (steps[k] <= 0) op.fail("steps <= 0 other than a whole flip");
    auto clampi = [dim](int64_t v) {
      if (v < 0) v += dim;
      return std::clamp<int64_t>(v, 0, dim);
    };
    start[a] = clampi(starts[k]);
    stop[a] = std::max(start[a], clampi(ends[k]));
    step[a] = steps[k];
  }
  VariablePtr x = op.x(0);
  if (!flipped.empty()) x = F::flip(x, flipped);
  if (start != std::vector<int64_t>(n, 0) || stop != s ||
      step != std::vector<int64_t>(n, 1)) {
    x = F::slice(x, start, stop, step);
  }
  op.set(0, x);
}

void split(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", 0), s.size());
  std::vector<int64_t> sizes;
  if (op.has(1)) {
    sizes = op.constant(1).ints();
  } else {
    const int64_t parts = op.node.output_size();
    if (s[a] % parts) op.fail("the axis does not split evenly");
    sizes.assign(parts, s[a] / parts);
  }
  int64_t at = 0;
  for (size_t o = 0; o < sizes.size(); ++o) {
    std::vector<int64_t> start(s.size(), 0), stop(s.begin(), s.end());
    start[a] = at;
    stop[a] = at + sizes[o];
    at += sizes[o];
    op.set(static_cast<int>(o), F::slice(op.x(0), start, stop));
  }
}

void expand(const Op& op) {
  VariablePtr x = op.x(0);
  const Shape target = broadcast_shape(op, x->shape(), op.constant(1).ints());
  if (x->ndim() < static_cast<int>(target.size())) {
    Shape s(target.size() - x->ndim(), 1);
    s.insert(s.end(), x->shape().begin(), x->shape().end());
    x = F::reshape(x, s);
  }
  op.set(0, x->shape() == target ? x : F::broadcast(x, target));
}

void pad(const Op& op) {
  const Shape& s = op.shape(0);
  const std::vector<int64_t> pads = op.constant(1).ints();
  const size_t n = s.size();
  if (op.has(3)) op.fail("the axes input is not supported");
  if (pads.size() != 2 * n) op.fail("pads needs 2 x rank entries");
  std::vector<int> width;
  for (size_t a = 0; a < n; ++a) {
    if (pads[a] < 0 || pads[a + n] < 0) op.fail("negative pads (cropping)");
    width.push_back(static_cast<int>(pads[a]));
    width.push_back(static_cast<int>(pads[a + n]));
  }
  const std::string mode = op.s("mode", "constant");
  double value = 0;
  if (op.has(2) && !op.scalar(2, &value))
    op.fail("constant_value not constant");
  std::string ours = mode == "edge" ? "repeat" : mode;
  if (ours != "constant" && ours != "reflect" && ours != "repeat")
    op.fail("mode '" + mode + "'");
  op.set(0, F::pad(op.x(0), width, ours, static_cast<float>(value)));
}

Rule reduce(VariablePtr (*fn)(const VariablePtr&, std::vector<int>, bool)) {
  return [=](const Op& op) {
    // Axes: an attribute up to opset 17 (an input for ReduceSum from 13).
    std::vector<int64_t> axes = axes_of(op, 1);
    if (axes.empty() && op.i("noop_with_empty_axes", 0)) return alias(op);
    op.set(0, fn(op.x(0), to_int(axes), op.i("keepdims", 1) != 0));
  };
}

// Resize: Interpolate where it computes the same (linear with half_pixel,
// align_corners or asymmetric coordinates; nearest rounding down with
// asymmetric or tf_half_pixel_for_nn ones: what PyTorch writes for its
// upsampling), which save_onnx writes back as Resize; ONNXResize, which
// reads every opset-17 option, for the rest (cubic, nearest's other
// rounding rules, pytorch_half_pixel, tf_crop_and_resize).
void resize(const Op& op) {
  const Shape& s = op.shape(0);
  if (op.attr("axes") || op.i("antialias", 0)) {
    op.fail("axes / antialias (opset 18) are not read");
  }
  const std::string mode = op.s("mode", "nearest");
  const std::string coords =
      op.s("coordinate_transformation_mode", "half_pixel");
  const std::string nearest_mode = op.s("nearest_mode", "round_prefer_floor");
  // The sizes (or scales) input; ONNX writes an absent one as "" or as an
  // empty tensor.
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  if (op.has(3)) sizes = op.constant(3).ints();
  if (sizes.empty() && op.has(2)) scales = op.constant(2).reals();
  if (sizes.size() != s.size() && scales.size() != s.size()) {
    op.fail("needs sizes or scales for every axis of its input of shape " +
            shape_str(s));
  }
  InterpolateOptions o;
  o.mode = mode;
  o.align_corners = false;
  bool as_interpolate = true;
  if (mode == "linear") {
    o.align_corners = coords == "align_corners";
    o.half_pixel = coords == "half_pixel";
    as_interpolate = o.align_corners || o.half_pixel || coords == "asymmetric";
  } else if (mode == "nearest") {
    o.half_pixel_for_nn = coords == "tf_half_pixel_for_nn";
    as_interpolate = nearest_mode == "floor" &&
                     (o.half_pixel_for_nn || coords == "asymmetric");
  } else {
    as_interpolate = false;
  }
  // Interpolate maps coordinates by output / input size; ONNX by the scale
  // given, which differs where input x scale is not a whole number.
  for (size_t a = 0; a < scales.size(); ++a) {
    if (std::floor(s[a] * scales[a]) != s[a] * scales[a])
      as_interpolate = false;
  }
  if (!as_interpolate) {
    ONNXResizeOptions r;
    r.mode = mode;
    r.coordinate_transformation_mode = coords;
    r.cubic_coeff_a = static_cast<float>(op.f("cubic_coeff_a", -0.75));
    r.exclude_outside = op.i("exclude_outside", 0);
    r.extrapolation_value = static_cast<float>(op.f("extrapolation_value", 0));
    r.nearest_mode = nearest_mode;
    if (op.has(1)) {
      for (double v : op.constant(1).reals())
        r.roi.push_back(static_cast<float>(v));
    }
    if (!sizes.empty()) {
      r.sizes = sizes;
    } else {
      for (double v : scales) r.scales.push_back(static_cast<float>(v));
    }
    // ONNXResize checks the options itself; its message names it.
    return op.set(0, F::onnx_resize(op.x(0), r));
  }
  Shape out = sizes;
  if (out.empty()) {
    for (size_t a = 0; a < s.size(); ++a)
      out.push_back(static_cast<int64_t>(std::floor(s[a] * scales[a])));
  }
  size_t lead = 0;
  while (lead < s.size() && out[lead] == s[lead]) ++lead;
  lead = std::min(lead, s.size() - 1);
  o.output_size.assign(out.begin() + lead, out.end());
  op.set(0, F::interpolate(op.x(0), o.output_size, o.mode, o.align_corners,
                           o.half_pixel, o.half_pixel_for_nn));
}

void prelu(const Op& op) {
  const VariablePtr x = op.x(0);
  Tensor slope = op.constant(1);
  if (slope.size() == 1) return op.set(0, F::prelu(x, op.x(1, Shape{})));
  if (x->ndim() < 2 || slope.size() != x->shape()[1]) {
    op.fail("slope of shape " + shape_str(slope.shape) +
            " (one per channel of axis 1, or shared, is read)");
  }
  op.set(0, F::prelu(x, op.x(1, Shape{x->shape()[1]}), 1));
}

void layer_norm(const Op& op) {
  const Shape& xs = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", -1), xs.size());
  std::vector<int> batch;
  Shape ps = xs;
  for (int64_t k = 0; k < a; ++k) {
    batch.push_back(static_cast<int>(k));
    ps[k] = 1;
  }
  if (op.node.output_size() > 1 && !op.node.output(1).empty())
    op.fail("the Mean and InvStdDev outputs are not supported");
  VariablePtr gamma = op.x(1, ps), beta = op.has(2) ? op.x(2, ps) : nullptr;
  op.set(0, F::layer_normalization(op.x(0), beta, gamma, batch,
                                   static_cast<float>(op.f("epsilon", 1e-5))));
}

void instance_norm(const Op& op) {
  const Shape& xs = op.shape(0);
  Shape ps(xs.size(), 1);
  ps[1] = xs[1];
  op.set(0,
         F::instance_normalization(op.x(0), op.x(2, ps), op.x(1, ps), 1, {0},
                                   static_cast<float>(op.f("epsilon", 1e-5))));
}

// Where with ONNX's broadcasting of all three inputs: ours broadcasts the
// condition, and x_true and x_false (a scalar 0.0 beside a tensor, as
// masked_fill writes) are broadcast to the common shape first.
void where(const Op& op) {
  const VariablePtr c = op.x(0, nullptr, false);
  VariablePtr a = op.x(1), b = op.x(2);
  const Shape s = broadcast_shape(
      op, broadcast_shape(op, c->shape(), a->shape()), b->shape());
  if (a->shape() != s) a = F::broadcast(a, s);
  if (b->shape() != s) b = F::broadcast(b, s);
  op.set(0, F::where(c, a, b));
}

void constant_of_shape(const Op& op) {
  const std::vector<int64_t> shape = op.constant(0).ints();
  Tensor value;  // ONNX's default: one float 0
  value.bytes.assign(4, 0);
  if (const auto* a = op.attr("value")) {
    value = onnx_io::read_tensor(a->t(), op.im.where());
    if (value.size() != 1) op.fail("value must hold one element");
  }
  for (int64_t d : shape) {
    if (d < 0) op.fail("negative dimension in shape " + shape_str(shape));
  }
  Tensor t;
  t.shape = shape;
  t.dtype = value.dtype;
  const size_t e = value.bytes.size();
  t.bytes.resize(static_cast<size_t>(shape_size(shape)) * e);
  for (size_t k = 0; k < t.bytes.size(); k += e)
    std::memcpy(&t.bytes[k], value.bytes.data(), e);
  op.set_const(0, t);
}

// Range: exact in int64 for integers, start + k delta in double then float
// (ONNX's formula) for floating types.
void range(const Op& op) {
  const Tensor start = op.constant(0), limit = op.constant(1),
               delta = op.constant(2);
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    op.fail("start, limit and delta must be scalars");
  const double s = start.reals()[0], l = limit.reals()[0], d = delta.reals()[0];
  if (d == 0) op.fail("delta is 0");
  const int64_t n =
      std::max<int64_t>(static_cast<int64_t>(std::ceil((l - s) / d)), 0);
  if (!is_floating(start.dtype)) {
    const int64_t s0 = start.ints()[0], d0 = delta.ints()[0];
    std::vector<int64_t> v;
    for (int64_t k = 0; k < n; ++k) v.push_back(s0 + k * d0);
    return op.set_const(0, int_tensor(v, {n}));
  }
  Tensor t;
  t.shape = {n};
  t.dtype = Dtype::f32;
  t.bytes.resize(static_cast<size_t>(n) * 4);
  for (int64_t k = 0; k < n; ++k) {
    const float v = static_cast<float>(s + static_cast<double>(k) * d);
    std::memcpy(&t.bytes[k * 4], &v, 4);
  }
  op.set_const(0, t);
}

// ---- LSTM, GRU, RNN on our fused recurrent functions ----

using onnx_io::onnx_gates;
using onnx_io::RecurrentKind;

Tensor float_tensor(Shape shape, const std::vector<float>& v) {
  Tensor t;
  t.shape = std::move(shape);
  t.bytes.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// A state input (D, B, H) as ours (1, D, B, H); zeros where it is absent.
VariablePtr initial_state(const Op& op, int i, const Shape& state) {
  if (op.has(i)) return op.x(i, state);
  VariablePtr z = make_variable(state);
  float* p = z->data()->cast<float>(/*write_only=*/true);
  std::fill(p, p + z->size(), 0.0f);
  return z;
}

// The checks of what we do not map, each naming the attribute or input.
void check_recurrent(const Op& op, RecurrentKind kind, int64_t steps,
                     int64_t batch) {
  if (op.i("layout", 0) != 0) {
    op.fail("layout " + std::to_string(op.i("layout", 0)) +
            " (batch first) is not supported; only layout 0, X as (seq, "
            "batch, input)");
  }
  if (op.attr("clip")) op.fail("attribute clip is not supported");
  if (op.attr("activation_alpha") || op.attr("activation_beta"))
    op.fail("activation_alpha / activation_beta are not supported");
  if (kind == RecurrentKind::lstm) op.need_default("input_forget", 0);
  if (kind == RecurrentKind::gru && op.i("linear_before_reset", 0) != 1) {
    op.fail(
        "linear_before_reset 0 is not supported (our GRU applies the reset "
        "gate after the hidden state's linear map, as linear_before_reset 1 "
        "and PyTorch's GRU do)");
  }
  if (op.has(4)) {
    // Lengths that are all the whole sequence change nothing; shorter ones
    // would need per-sequence masking our fused functions do not do.
    if (!op.is_const(4))
      op.fail("sequence_lens computed at run time is not supported");
    for (int64_t n : op.constant(4).ints()) {
      if (n != steps) {
        op.fail("sequence_lens with a length " + std::to_string(n) +
                " shorter than the sequence (" + std::to_string(steps) +
                " steps) is not supported; pad to full length or leave "
                "sequence_lens out");
      }
    }
    if (op.constant(4).size() != batch)
      op.fail("sequence_lens does not hold one length per batch entry");
  }
  if (kind == RecurrentKind::lstm && op.has(7)) {
    for (double p : op.constant(7).reals()) {
      if (p != 0) op.fail("peephole weights P are not supported");
    }
  }
}

// The nonlinearity of an RNN ("tanh" or "relu"); LSTM's and GRU's must be
// ONNX's defaults, which are ours.
std::string activations(const Op& op, RecurrentKind kind, int dirs) {
  std::vector<std::string> want;
  if (kind == RecurrentKind::lstm) want = {"Sigmoid", "Tanh", "Tanh"};
  if (kind == RecurrentKind::gru) want = {"Sigmoid", "Tanh"};
  if (kind == RecurrentKind::rnn) want = {"Tanh"};
  const auto* a = op.attr("activations");
  if (!a) return "tanh";
  std::vector<std::string> got(a->strings().begin(), a->strings().end());
  if (kind == RecurrentKind::rnn && !got.empty() && got[0] == "Relu")
    want = {"Relu"};
  std::vector<std::string> all;
  for (int d = 0; d < dirs; ++d)
    all.insert(all.end(), want.begin(), want.end());
  if (got != all) {
    std::string list;
    for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
    op.fail("activations [" + list +
            "] are not supported (only ONNX's defaults, and Relu for RNN)");
  }
  return want[0] == "Relu" ? "relu" : "tanh";
}

// ONNX's W (D, G H, I), R (D, G H, H) and B (D, 2 G H) as our weight_l0 (D,
// G, H, I + H) and bias (1, D, G_b, H), converted once while loading into
// parameters named after the node (the gates reordered, W and R side by
// side, ONNX's two biases summed where ours has one).
std::pair<VariablePtr, VariablePtr> recurrent_weights(const Op& op,
                                                      RecurrentKind kind,
                                                      int64_t D, int64_t H,
                                                      int64_t I) {
  const std::vector<int> gates = onnx_gates(kind);
  const int64_t G = static_cast<int64_t>(gates.size());
  if (!op.is_const(1) || !op.is_const(2))
    op.fail(
        "W and R must be initializers (weights computed at run time are "
        "not read)");
  const Tensor Wt = op.constant(1), Rt = op.constant(2);
  if (Wt.shape != Shape{D, G * H, I} || Rt.shape != Shape{D, G * H, H}) {
    op.fail("W with shape " + shape_str(Wt.shape) + " and R with shape " +
            shape_str(Rt.shape) + " must be " + shape_str({D, G * H, I}) +
            " and " + shape_str({D, G * H, H}) + " for hidden_size " +
            std::to_string(H));
  }
  const std::vector<double> W = Wt.reals(), R = Rt.reals();
  std::vector<float> w;
  w.reserve(static_cast<size_t>(D * G * H * (I + H)));
  for (int64_t d = 0; d < D; ++d) {
    for (int g : gates) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t row = (d * G + g) * H + h;
        for (int64_t k = 0; k < I; ++k) w.push_back(float(W[row * I + k]));
        for (int64_t k = 0; k < H; ++k) w.push_back(float(R[row * H + k]));
      }
    }
  }
  // "rnn/LSTM/weight_l0" for PyTorch's node "/rnn/LSTM": a scope path.
  std::string base = op.node.name().empty() ? op.node.input(1) : op.node.name();
  base.erase(0, base.find_first_not_of('/'));
  VariablePtr weight = op.im.parameter_from(
      base + "/weight_l0", float_tensor({D, G, H, I + H}, w), true);
  if (!op.has(3)) return {weight, nullptr};
  if (!op.is_const(3)) op.fail("B must be an initializer");
  const Tensor Bt = op.constant(3);
  if (Bt.shape != Shape{D, 2 * G * H}) {
    op.fail("B with shape " + shape_str(Bt.shape) + " must be " +
            shape_str({D, 2 * G * H}));
  }
  const std::vector<double> B = Bt.reals();
  auto wb = [&](int64_t d, int g, int64_t h) {
    return B[static_cast<size_t>(d * 2 * G * H + g * H + h)];
  };
  auto rb = [&](int64_t d, int g, int64_t h) {
    return B[static_cast<size_t>(d * 2 * G * H + (G + g) * H + h)];
  };
  std::vector<float> b;
  for (int64_t d = 0; d < D; ++d) {
    for (int g : gates) {
      // GRU's candidate keeps its input and hidden biases apart (ours: rows
      // b_n and b_nh, the last two).
      const bool split =
          kind == RecurrentKind::gru && g == onnx_io::kGruCandidateGate;
      for (int64_t h = 0; h < H; ++h)
        b.push_back(float(wb(d, g, h) + (split ? 0.0 : rb(d, g, h))));
    }
    if (kind == RecurrentKind::gru) {
      for (int64_t h = 0; h < H; ++h)
        b.push_back(float(rb(d, onnx_io::kGruCandidateGate, h)));
    }
  }
  const int64_t rows = onnx_io::recurrent_bias_rows(kind);
  VariablePtr bias = op.im.parameter_from(
      base + "/bias", float_tensor({1, D, rows, H}, b), true);
  return {weight, bias};
}

Rule recurrent(RecurrentKind kind) {
  return [kind](const Op& op) {
    VariablePtr x = op.x(0);
    if (x->ndim() != 3)
      op.fail("X with shape " + shape_str(x->shape()) +
              " is not (seq, batch, input)");
    const int64_t T = x->shape()[0], N = x->shape()[1], I = x->shape()[2];
    check_recurrent(op, kind, T, N);
    const std::string dir = op.s("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
      op.fail("direction '" + dir + "' is not one ONNX defines");
    const int64_t D = dir == "bidirectional" ? 2 : 1;
    const int64_t H = op.i("hidden_size", 0);
    if (H <= 0) op.fail("attribute hidden_size is missing");
    const std::string act = activations(op, kind, static_cast<int>(D));
    const auto [weight, bias] = recurrent_weights(op, kind, D, H, I);
    const Shape state{1, D, N, H};
    const VariablePtr h0 = initial_state(op, 5, state);
    // A reverse-only layer: the sequence reversed, run forward, and its
    // outputs put back in order.
    if (dir == "reverse") x = F::flip(x, {0});
    RecurrentOptions o;
    o.bidirectional = D == 2;
    o.training = false;
    VariablePtr y, h, c;
    if (kind == RecurrentKind::lstm) {
      std::tie(y, h, c) =
          F::lstm(x, h0, initial_state(op, 6, state), weight, nullptr, bias, o);
    } else if (kind == RecurrentKind::gru) {
      std::tie(y, h) = F::gru(x, h0, weight, nullptr, bias, o);
    } else {
      RNNOptions r;
      r.nonlinearity = act;
      r.bidirectional = o.bidirectional;
      r.training = false;
      std::tie(y, h) = F::rnn(x, h0, weight, nullptr, bias, r);
    }
    if (dir == "reverse") y = F::flip(y, {0});
    // Ours: y (T, B, D H); ONNX's Y: (T, D, B, H).
    if (op.node.output_size() > 0 && !op.node.output(0).empty()) {
      op.set(0, F::transpose(F::reshape(y, {T, N, D, H}), {0, 2, 1, 3}));
    }
    op.set(1, F::reshape(h, {D, N, H}));
    if (c) op.set(2, F::reshape(c, {D, N, H}));
  };
}

VariablePtr neg(const VariablePtr& x) { return F::mul_scalar(x, -1.0f); }
VariablePtr reciprocal(const VariablePtr& x) {
  return F::r_div_scalar(x, 1.0f);
}
VariablePtr softplus(const VariablePtr& x) { return F::softplus(x); }
VariablePtr sub_from(const VariablePtr& x, float c) {
  return F::r_sub_scalar(x, c);
}
VariablePtr div_from(const VariablePtr& x, float c) {
  return F::r_div_scalar(x, c);
}
VariablePtr sub_c(const VariablePtr& x, float c) {
  return F::add_scalar(x, -c);
}
VariablePtr div_c(const VariablePtr& x, float c) {
  return F::mul_scalar(x, 1.0f / c);
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> table = [] {
    std::map<std::string, Rule> t;
    t["Relu"] = unary(F::relu);
    t["Sigmoid"] = unary(F::sigmoid);
    t["Tanh"] = unary(F::tanh);
    t["Exp"] = unary(F::exp);
    t["Log"] = unary(F::log);
    t["Sqrt"] = unary(F::sqrt);
    t["Abs"] = unary(F::abs);
    t["Erf"] = unary(F::erf);
    t["Sin"] = unary(F::sin);
    t["Cos"] = unary(F::cos);
    t["Tan"] = unary(F::tan);
    t["Asin"] = unary(F::asin);
    t["Acos"] = unary(F::acos);
    t["Atan"] = unary(F::atan);
    t["Sinh"] = unary(F::sinh);
    t["Cosh"] = unary(F::cosh);
    t["Asinh"] = unary(F::asinh);
    t["Acosh"] = unary(F::acosh);
    t["Atanh"] = unary(F::atanh);
    t["Ceil"] = unary(F::ceil);
    t["Floor"] = unary(F::floor);
    t["Softplus"] = unary(softplus);
    t["Softsign"] = unary(F::softsign);
    t["Neg"] = unary(neg);
    t["Reciprocal"] = unary(reciprocal);
    t["Not"] = unary(F::logical_not);
    t["IsNaN"] = unary(F::isnan);
    t["Identity"] = t["Dropout"] = alias;
    t["Cast"] = cast;
    t["Constant"] = constant;
    t["LeakyRelu"] = [](const Op& op) {
      op.set(0,
             F::leaky_relu(op.x(0), static_cast<float>(op.f("alpha", 0.01))));
    };
    t["Elu"] = [](const Op& op) {
      op.set(0, F::elu(op.x(0), static_cast<float>(op.f("alpha", 1.0))));
    };
    t["Selu"] = [](const Op& op) {
      op.set(0,
             F::selu(op.x(0),
                     static_cast<float>(op.f("gamma", 1.05070102214813232)),
                     static_cast<float>(op.f("alpha", 1.67326319217681884))));
    };
    t["HardSigmoid"] = [](const Op& op) {
      const double a = op.f("alpha", 0.2), b = op.f("beta", 0.5);
      if (std::abs(a - 0.2) < 1e-7 && std::abs(b - 0.5) < 1e-7) {
        return op.set(0, F::hard_sigmoid(op.x(0)));
      }
      op.set(0, F::clip_by_value(
                    F::add_scalar(F::mul_scalar(op.x(0), static_cast<float>(a)),
                                  static_cast<float>(b)),
                    0.0f, 1.0f));
    };
    t["Clip"] = [](const Op& op) {
      double lo = -std::numeric_limits<double>::infinity(),
             hi = std::numeric_limits<double>::infinity();
      if (op.has(1) && !op.scalar(1, &lo)) op.fail("min is not a constant");
      if (op.has(2) && !op.scalar(2, &hi)) op.fail("max is not a constant");
      VariablePtr x = op.x(0);
      if (lo == 0.0 && hi == 6.0) return op.set(0, F::relu6(x));
      if (std::isinf(lo))
        return op.set(0, F::minimum_scalar(x, static_cast<float>(hi)));
      if (std::isinf(hi))
        return op.set(0, F::maximum_scalar(x, static_cast<float>(lo)));
      op.set(0, F::clip_by_value(x, static_cast<float>(lo),
                                 static_cast<float>(hi)));
    };
    t["Add"] = binary(F::add2, F::add_scalar, F::add_scalar);
    t["Sub"] = binary(F::sub2, sub_c, sub_from);
    t["Mul"] = binary(F::mul2, F::mul_scalar, F::mul_scalar);
    t["Div"] = binary(F::div2, div_c, div_from);
    t["Pow"] = binary(F::pow2, F::pow_scalar, F::r_pow_scalar);
    t["Max"] = binary(F::maximum2, F::maximum_scalar, F::maximum_scalar);
    t["Min"] = binary(F::minimum2, F::minimum_scalar, F::minimum_scalar);
    t["Equal"] = binary(F::equal, F::equal_scalar, F::equal_scalar);
    t["Greater"] = binary(F::greater, F::greater_scalar, nullptr);
    t["GreaterOrEqual"] =
        binary(F::greater_equal, F::greater_equal_scalar, nullptr);
    t["Less"] = binary(F::less, F::less_scalar, nullptr);
    t["LessOrEqual"] = binary(F::less_equal, F::less_equal_scalar, nullptr);
    t["And"] = binary(F::logical_and, nullptr, nullptr);
    t["Or"] = binary(F::logical_or, nullptr, nullptr);
    t["Xor"] = binary(F::logical_xor, nullptr, nullptr);
    t["Sum"] = binary(F::add2, nullptr, nullptr);
    t["Mod"] = [](const Op& op) {
      // Integer Mod on constants folds exactly (Python's sign rule or fmod);
      // at run time the data is floating, which our Mod2 computes as fmod.
      if (!op.i("fmod", 0)) {
        op.fail(
            "fmod 0 on data computed at run time is not supported (our Mod2 "
            "computes floating data as fmod, the sign of the dividend)");
      }
      op.set(0, F::mod2(op.x(0), op.x(1), true));
    };
    t["Where"] = where;
    t["ConstantOfShape"] = constant_of_shape;
    t["Range"] = range;
    t["HardSwish"] = [](const Op& op) {  // x relu6(x + 3) / 6
      const VariablePtr x = op.x(0);
      op.set(0, F::mul2(x, F::mul_scalar(F::relu6(F::add_scalar(x, 3.0f)),
                                         1.0f / 6.0f)));
    };
    t["LSTM"] = recurrent(RecurrentKind::lstm);
    t["GRU"] = recurrent(RecurrentKind::gru);
    t["RNN"] = recurrent(RecurrentKind::rnn);
    t["Conv"] = conv;
    t["ConvTranspose"] = conv_transpose;
    t["Gemm"] = gemm;
    t["MatMul"] = matmul;
    t["BatchNormalization"] = batch_norm;
    t["MaxPool"] = pool(true);
    t["AveragePool"] = pool(false);
    t["GlobalAveragePool"] = unary(F::global_average_pooling);
    t["GlobalMaxPool"] = [](const Op& op) {
      std::vector<int> axes;
      for (int a = 2; a < op.x(0)->ndim(); ++a) axes.push_back(a);
      op.set(0, F::max(op.x(0), axes, true));
    };
    t["Softmax"] = [](const Op& op) {
      op.set(0, F::softmax(op.x(0), static_cast<int>(op.i("axis", -1))));
    };
    t["LogSoftmax"] = [](const Op& op) {
      op.set(0, F::log_softmax(op.x(0), static_cast<int>(op.i("axis", -1))));
    };
    t["Reshape"] = reshape;
    t["Flatten"] = flatten;
    t["Squeeze"] = [](const Op& op) { squeeze(op, false); };
    t["Unsqueeze"] = [](const Op& op) { squeeze(op, true); };
    t["Transpose"] = [](const Op& op) {
      std::vector<int64_t> perm = op.ints("perm");
      if (perm.empty()) {
        for (int a = op.x(0)->ndim() - 1; a >= 0; --a) perm.push_back(a);
      }
      op.set(0, F::transpose(op.x(0), to_int(perm)));
    };
    t["Concat"] = concat;
    t["Shape"] = shape_op;
    t["Gather"] = gather;
    t["ScatterND"] = scatter_nd;
    t["Slice"] = slice;
    t["Split"] = split;
    t["Expand"] = expand;
    t["Tile"] = [](const Op& op) {
      op.set(0, F::tile(op.x(0), to_int(op.constant(1).ints())));
    };
    t["Pad"] = pad;
    t["ReduceSum"] = reduce(F::sum);
    t["ReduceMean"] = reduce(F::mean);
    t["ReduceMax"] = reduce(F::max);
    t["ReduceMin"] = reduce(F::min);
    t["ReduceProd"] = reduce(F::prod);
    t["Resize"] = resize;
    t["PRelu"] = prelu;
    t["LayerNormalization"] = layer_norm;
    t["InstanceNormalization"] = instance_norm;
    return t;
  }();
  return table;
}

}  // namespace

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
  return Importer(model, params, source, options).run();
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
