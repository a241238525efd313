// save_onnx: a graph's functions written as ONNX nodes (opset 17), one
// converter per function, in the types the graph computes in.
#include <onnx/checker.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/cast.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/deconvolution.hpp>
#include <mixgraph/functions/dropout.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/interpolate.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/nary.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/prelu.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/onnx/onnx_recurrent.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg {

namespace {

using onnx_io::elem_type;
constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;
constexpr int32_t kBool = onnx::TensorProto_DataType_BOOL;

bool is_float_elem(int32_t e) {
  return e == kFloat || e == onnx::TensorProto_DataType_FLOAT16 ||
         e == onnx::TensorProto_DataType_BFLOAT16;
}

// ---- attributes ----

void attr(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}
void attr(onnx::NodeProto* n, const char* name, double v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(static_cast<float>(v));
}
void attr(onnx::NodeProto* n, const char* name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_STRING);
  a->set_s(v);
}
void attr(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t x : v) a->add_ints(x);
}

void attr(onnx::NodeProto* n, const char* name,
          const std::vector<std::string>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_STRINGS);
  for (const auto& x : v) a->add_strings(x);
}

// ---- a function's arguments by name ----

const ArgValue& arg(const Function& f, const char* name) {
  for (const auto& [k, v] : f.args()) {
    if (k == name) return v;
  }
  throw std::logic_error(msg(f.tag(), "has no argument '", name, "'"));
}
double arg_real(const Function& f, const char* name) {
  const ArgValue& v = arg(f, name);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  if (auto p = std::get_if<bool>(&v)) return *p ? 1.0 : 0.0;
  throw std::logic_error(msg(f.tag(), "argument '", name, "' is not a number"));
}
int64_t arg_int(const Function& f, const char* name) {
  return static_cast<int64_t>(arg_real(f, name));
}
bool arg_bool(const Function& f, const char* name) {
  return arg_real(f, name) != 0.0;
}
std::vector<int64_t> arg_ints(const Function& f, const char* name) {
  const ArgValue& v = arg(f, name);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  if (auto p = std::get_if<std::vector<double>>(&v)) {
    std::vector<int64_t> out;
    for (double d : *p) out.push_back(static_cast<int64_t>(d));
    return out;
  }
  if (auto p = std::get_if<int64_t>(&v)) return {*p};
  throw std::logic_error(msg(f.tag(), "argument '", name, "' is not a list"));
}
std::string arg_str(const Function& f, const char* name) {
  const ArgValue& v = arg(f, name);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw std::logic_error(msg(f.tag(), "argument '", name, "' is not a string"));
}

class Exporter;

// One function being converted: its inputs, fetched in the types its ports
// want, and its outputs, named and typed as its ports declare.
struct Node {
  Exporter& e;
  FunctionNode& node;
  const Function& fn;
  std::vector<VariablePtr> outs;
  int32_t T;  // the element type it computes in

  // Input i in the type its port wants (and in `shape`, when given).
  std::string in(int i, const Shape* shape = nullptr);
  std::string in(int i, const Shape& shape) { return in(i, &shape); }
  bool has_in(int i) const {
    return i < static_cast<int>(node.inputs().size()) && node.inputs()[i];
  }
  const Shape& in_shape(int i) const { return node.inputs()[i]->shape(); }
  const Shape& out_shape(int o) const { return outs[o]->shape(); }
  int ndim(int i) const { return static_cast<int>(in_shape(i).size()); }
  // The name output o gets (its value is registered with its port's type).
  std::string out(int o);
  int32_t out_elem(int o);
  onnx::NodeProto* op(const std::string& type,
                      const std::vector<std::string>& ins,
                      const std::vector<std::string>& outs_);
  // A fresh intermediate name.
  std::string tmp();
  // Constants (initializers): a scalar of element type `elem` (T by
  // default), int64 lists.
  std::string scalar(double v, int32_t elem = 0);
  std::string ints(const std::vector<int64_t>& v);
  // y = op(x) etc. for one-node conversions, into output 0.
  void unary(const std::string& type) { op(type, {in(0)}, {out(0)}); }
  [[noreturn]] void unsupported(const std::string& why) const {
    throw std::invalid_argument(msg("[save_onnx] ", fn.name(), ": ", why));
  }
};

using Converter = std::function<void(Node&)>;
const std::map<std::string, Converter>& converters();

struct Value {
  std::string name;
  int32_t elem;
  Shape shape;  // as written (a parameter may be written reshaped)
};

class Exporter {
 public:
  Exporter(onnx::GraphProto* g, const ParameterScope& params,
           const SaveOnnxOptions& options)
      : g_(g), options_(options) {
    for (const auto& [name, v] : params.parameters(/*grad_only=*/false)) {
      param_names_[v.get()] = name;
    }
  }

  std::string fresh(const std::string& hint) {
    return hint + "_" + std::to_string(next_++);
  }

  onnx::NodeProto* node(const std::string& type,
                        const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    auto* n = g_->add_node();
    n->set_op_type(type);
    n->set_name(fresh(type));
    for (const auto& i : ins) n->add_input(i);
    for (const auto& o : outs) n->add_output(o);
    return n;
  }

  std::string constant(const Shape& shape, Dtype dtype, const void* data,
                       const std::string& hint) {
    const std::string name = fresh(hint);
    onnx_io::write_tensor(g_->add_initializer(), name, shape, dtype, data);
    return name;
  }
  std::string ints(const std::vector<int64_t>& v) {
    return constant({static_cast<int64_t>(v.size())}, Dtype::i64, v.data(),
                    "const");
  }
  std::string scalar(double v, int32_t elem) {
    const float f = static_cast<float>(v);
    const int64_t i = static_cast<int64_t>(v);
    if (elem == kInt64) return constant({}, Dtype::i64, &i, "const");
    const std::string name = constant({}, Dtype::f32, &f, "const");
    if (elem == kFloat) return name;
    // An fp16 / bf16 constant: its float value converted by ONNX's rule
    // (round to nearest even) through a Cast the runtime folds.
    return cast(name, elem);
  }

  std::string cast(const std::string& name, int32_t to) {
    auto key = std::make_pair(name, to);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    const std::string out = fresh(name + "_as_" + onnx_io::elem_name(to));
    attr(node("Cast", {name}, {out}), "to", static_cast<int64_t>(to));
    casts_[key] = out;
    return out;
  }

  // `v` in element type `want` (0: as it is) and shape `shape` (null: as it
  // is). A leaf becomes an initializer (a parameter, written in `shape`) or
  // a model input on first use.
  std::string value(const VariablePtr& v, int32_t want, const Shape* shape,
                    const std::string& who) {
    auto it = values_.find(v.get());
    if (it == values_.end()) {
      if (v->parent()) {
        throw std::logic_error(
            msg("[save_onnx] ", who, " reads a value not computed yet"));
      }
      it = values_.emplace(v.get(), leaf(v, want, shape)).first;
    }
    Value& val = it->second;
    std::string name = val.name;
    if (shape && *shape != val.shape) {
      if (shape_size(*shape) != shape_size(val.shape)) {
        throw std::logic_error(msg("[save_onnx] ", who, ": cannot view ",
                                   shape_str(val.shape), " as ",
                                   shape_str(*shape)));
      }
      const std::string r = fresh(name + "_reshaped");
      node("Reshape", {name, ints(*shape)}, {r});
      name = r;
    }
    if (want != 0 && want != val.elem) {
      // Integer data (labels, ids) is converted exactly to int64; floating
      // data to the type the reader computes in.
      name = cast(name, want);
    }
    return name;
  }

  bool is_parameter(const Variable* v) const {
    return param_names_.count(v) != 0;
  }
  const std::string& parameter_name(const Variable* v) const {
    return param_names_.at(v);
  }
  void set_value(const Variable* v, Value val) { values_[v] = std::move(val); }
  const Value& value_of(const Variable* v) const { return values_.at(v); }
  bool has_value(const Variable* v) const { return values_.count(v) != 0; }
  const SaveOnnxOptions& options() const { return options_; }
  int64_t batch() const { return batch_; }
  onnx::GraphProto* graph() { return g_; }

 private:
  // v's data as the initializer `name`, in `shape` (null: v's own).
  Value initializer(const VariablePtr& v, const std::string& name,
                    const Shape* shape) {
    SyncedArray& a = v->data()->array();
    const Dtype d = a.has_head() ? a.dtype() : Dtype::f32;
    const Shape s = shape ? *shape : v->shape();
    onnx_io::write_tensor(g_->add_initializer(), name, s, d, a.get(d));
    return {name, elem_type(d), s};
  }

  Value leaf(const VariablePtr& v, int32_t want, const Shape* shape) {
    auto p = param_names_.find(v.get());
    if (p != param_names_.end()) return initializer(v, p->second, shape);
    // Data of the graph's own (attention's causal mask).
    if (v->constant()) {
      return initializer(v, fresh(v->name().empty() ? "constant" : v->name()),
                         shape);
    }
    // A model input: float where a floating port reads it (converted inside
    // to the type the reader computes in), int64 where an integer port does.
    std::string name =
        v->name().empty() ? "x" + std::to_string(next_input_++) : v->name();
    const int32_t elem = want == kInt64 ? kInt64 : kFloat;
    auto* in = g_->add_input();
    in->set_name(name);
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* s = t->mutable_shape();
    for (size_t i = 0; i < v->shape().size(); ++i) {
      if (i == 0 && options_.free_batch) {
        s->add_dim()->set_dim_param("N");
        batch_ = v->shape()[0];
      } else {
        s->add_dim()->set_dim_value(v->shape()[i]);
      }
    }
    return {name, elem, v->shape()};
  }

  onnx::GraphProto* g_;
  SaveOnnxOptions options_;
  std::unordered_map<const Variable*, std::string> param_names_;
  std::unordered_map<const Variable*, Value> values_;
  std::map<std::pair<std::string, int32_t>, std::string> casts_;
  int next_ = 0, next_input_ = 0;
  int64_t batch_ = -1;
};

std::string Node::in(int i, const Shape* shape) {
  const Port& port = fn.input_decl(i);
  int32_t want = 0;
  switch (port.kind) {
    case Port::floating:
      want = T;
      break;
    case Port::float32:
      want = kFloat;
      break;
    case Port::integer:
      want = kInt64;
      break;
    case Port::any:
      want = 0;
      break;
  }
  return e.value(node.inputs()[i], want, shape, fn.name());
}

int32_t Node::out_elem(int o) {
  switch (fn.decl().output(o).kind) {
    case Port::floating:
      return T;
    case Port::float32:
      return kFloat;
    case Port::integer:
      return kInt64;
    case Port::any:
      break;
  }
  in(0);  // the type it keeps is its first input's, fetched first
  return e.value_of(node.inputs()[0].get()).elem;
}

std::string Node::out(int o) {
  const Variable* v = outs[o].get();
  if (e.has_value(v)) return e.value_of(v).name;
  const std::string name = e.fresh(fn.decl().snake);
  e.set_value(v, {name, out_elem(o), outs[o]->shape()});
  return name;
}

onnx::NodeProto* Node::op(const std::string& type,
                          const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs_) {
  return e.node(type, ins, outs_);
}
std::string Node::tmp() { return e.fresh(std::string(fn.decl().snake) + "_t"); }
std::string Node::scalar(double v, int32_t elem) {
  return e.scalar(v, elem ? elem : T);
}
std::string Node::ints(const std::vector<int64_t>& v) { return e.ints(v); }

// ---- converters ----

Converter unary(const char* type) {
  return [type](Node& n) { n.unary(type); };
}
Converter binary(const char* type) {
  return [type](Node& n) { n.op(type, {n.in(0), n.in(1)}, {n.out(0)}); };
}
// y = op(x, val), or op(val, x) when the scalar comes first.
Converter with_scalar(const char* type, bool scalar_first) {
  return [=](Node& n) {
    const std::string x = n.in(0), c = n.scalar(arg_real(n.fn, "val"));
    n.op(type,
         scalar_first ? std::vector<std::string>{c, x}
                      : std::vector<std::string>{x, c},
         {n.out(0)});
  };
}
// A comparison or a logical operator: bool out, cast to the output's type.
Converter predicate(const char* type, int arity, bool scalar, bool negate) {
  return [=](Node& n) {
    std::vector<std::string> ins;
    for (int i = 0; i < arity; ++i) ins.push_back(n.in(i));
    if (scalar) ins.push_back(n.scalar(arg_real(n.fn, "val")));
    const bool logical = std::string(type).rfind("Logical", 0) == 0 ||
                         std::string(type) == "Not";
    const char* onnx_type = type;
    if (logical) {
      // Nonzero is true: the operands as bool first.
      for (auto& s : ins) s = n.e.cast(s, kBool);
      if (std::string(type) == "LogicalAnd") onnx_type = "And";
      if (std::string(type) == "LogicalOr") onnx_type = "Or";
      if (std::string(type) == "LogicalXor") onnx_type = "Xor";
    }
    std::string b = n.tmp();
    n.op(onnx_type, ins, {b});
    if (negate) {
      const std::string nb = n.tmp();
      n.op("Not", {b}, {nb});
      b = nb;
    }
    attr(n.op("Cast", {b}, {n.out(0)}), "to",
         static_cast<int64_t>(n.out_elem(0)));
  };
}
// y = Clip(x, lo, hi).
Converter clip(double lo, double hi) {
  return [=](Node& n) {
    n.op("Clip", {n.in(0), n.scalar(lo), n.scalar(hi)}, {n.out(0)});
  };
}

void affine(Node& n) {
  const int b = static_cast<int>(arg_int(n.fn, "base_axis"));
  const Shape& xs = n.in_shape(0);
  const Shape& ws = n.in_shape(1);
  const int64_t K = shape_size(xs, b, static_cast<int>(xs.size()));
  const int64_t M = shape_size(ws) / K;
  std::string a = n.in(0);
  if (!(xs.size() == 2 && b == 1)) {
    const std::string f = n.tmp();
    attr(n.op("Flatten", {a}, {f}), "axis", static_cast<int64_t>(b));
    a = f;
  }
  std::vector<std::string> ins = {a, n.in(1, Shape{K, M})};
  if (n.has_in(2)) ins.push_back(n.in(2, Shape{M}));
  const Shape& ys = n.out_shape(0);
  if (ys.size() == 2 && b == 1) {
    n.op("Gemm", ins, {n.out(0)});
    return;
  }
  const std::string y2 = n.tmp();
  n.op("Gemm", ins, {y2});
  Shape target = ys;
  target[0] = -1;  // the batch (free or not); the rest is static
  n.op("Reshape", {y2, n.ints(target)}, {n.out(0)});
}

// Conv and ConvTranspose share their attributes.
void conv_attrs(Node& n, onnx::NodeProto* c, const Shape& ws, int64_t group) {
  const size_t k = ws.size() - 2;
  auto per_axis = [&](const char* name, int64_t fill) {
    std::vector<int64_t> v = arg_ints(n.fn, name);
    if (v.empty()) v.assign(k, fill);
    return v;
  };
  std::vector<int64_t> pad = per_axis("pad", 0);
  std::vector<int64_t> pads = pad;
  pads.insert(pads.end(), pad.begin(), pad.end());
  attr(c, "kernel_shape", Shape(ws.begin() + 2, ws.end()));
  attr(c, "pads", pads);
  attr(c, "strides", per_axis("stride", 1));
  attr(c, "dilations", per_axis("dilation", 1));
  attr(c, "group", group);
}

void need_base_axis_1(Node& n) {
  if (arg_int(n.fn, "base_axis") != 1) {
    n.unsupported("base_axis " + std::to_string(arg_int(n.fn, "base_axis")) +
                  ": ONNX convolves the axes after (N, C) only (base_axis 1)");
  }
}

void convolution(Node& n) {
  need_base_axis_1(n);
  std::vector<std::string> ins = {n.in(0), n.in(1)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  conv_attrs(n, n.op("Conv", ins, {n.out(0)}), n.in_shape(1),
             arg_int(n.fn, "group"));
}

void depthwise_convolution(Node& n) {
  need_base_axis_1(n);
  if (arg_int(n.fn, "multiplier") != 1) {
    n.unsupported("multiplier " + std::to_string(arg_int(n.fn, "multiplier")) +
                  " (only 1 is written)");
  }
  const int64_t C = n.in_shape(0)[1];
  Shape ws = n.in_shape(1);  // (C, k...) -> (C, 1, k...)
  ws.insert(ws.begin() + 1, 1);
  std::vector<std::string> ins = {n.in(0), n.in(1, ws)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  conv_attrs(n, n.op("Conv", ins, {n.out(0)}), ws, C);
}

void deconvolution(Node& n) {
  need_base_axis_1(n);
  std::vector<std::string> ins = {n.in(0), n.in(1)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  auto* c = n.op("ConvTranspose", ins, {n.out(0)});
  conv_attrs(n, c, n.in_shape(1), arg_int(n.fn, "group"));
  const std::vector<int64_t> op = arg_ints(n.fn, "output_padding");
  if (!op.empty()) attr(c, "output_padding", op);
}

// MaxPool / AveragePool from NNabla's pooling arguments; SumPooling is an
// AveragePool counting the padding, times the window's size.
Converter pooling(const char* type, bool sum) {
  return [=](Node& n) {
    const std::vector<int64_t> kernel = arg_ints(n.fn, "kernel");
    const size_t k = kernel.size();
    if (static_cast<size_t>(n.ndim(0)) != k + 2) {
      n.unsupported("pools " + std::to_string(k) + " axes of " +
                    shape_str(n.in_shape(0)) +
                    ": ONNX pools every axis after (N, C)");
    }
    std::vector<int64_t> stride = arg_ints(n.fn, "stride");
    if (stride.empty()) stride = kernel;
    std::vector<int64_t> pad = arg_ints(n.fn, "pad");
    if (pad.empty()) pad.assign(k, 0);
    int64_t ceil_mode = 0;
    if (!arg_bool(n.fn, "ignore_border")) {
      // NNabla's windows past the end: the same as ONNX's ceil_mode where
      // the sizes agree (every window starts inside the padded input).
      for (size_t i = 0; i < k; ++i) {
        const int64_t in = n.in_shape(0)[2 + i];
        const int64_t span = in + 2 * pad[i] - kernel[i];
        const int64_t ceil_out = (span + stride[i] - 1) / stride[i] + 1;
        if (ceil_out != n.out_shape(0)[2 + i]) {
          n.unsupported(
              "ignore_border false gives " + shape_str(n.out_shape(0)) +
              ", which ONNX's ceil_mode does not (set ignore_border true)");
        }
      }
      if (std::string(type) != "MaxPool") {
        n.unsupported(
            "ignore_border false: ONNX averages partial windows "
            "otherwise (set ignore_border true)");
      }
      ceil_mode = 1;
    }
    std::vector<int64_t> pads = pad;
    pads.insert(pads.end(), pad.begin(), pad.end());
    const std::string y = sum ? n.tmp() : n.out(0);
    auto* p = n.op(type, {n.in(0)}, {y});
    attr(p, "kernel_shape", kernel);
    attr(p, "strides", stride);
    attr(p, "pads", pads);
    if (ceil_mode) attr(p, "ceil_mode", ceil_mode);
    if (std::string(type) == "AveragePool") {
      attr(p, "count_include_pad",
           static_cast<int64_t>(sum || arg_bool(n.fn, "including_pad")));
    }
    if (sum) {
      n.op("Mul", {y, n.scalar(static_cast<double>(shape_size(kernel)))},
           {n.out(0)});
    }
  };
}

void batch_normalization(Node& n) {
  if (arg_bool(n.fn, "batch_stat")) {
    n.unsupported(
        "batch_stat true (batch statistics) is training: export "
        "mg::inference_graph(outputs) (utils/inference.hpp), which "
        "normalises with the running mean and variance");
  }
  const std::vector<int64_t> axes = arg_ints(n.fn, "axes");
  if (axes != std::vector<int64_t>{1}) {
    n.unsupported("axes " + shape_str(axes) +
                  ": ONNX normalizes per channel of axis 1");
  }
  const Shape c{n.in_shape(0)[1]};
  // Ours: x, beta, gamma, mean, variance, with beta left out under no_bias
  // and gamma under no_scale (NNabla's lists); ONNX: X, scale, B, mean,
  // var, always: a left-out one is written as its constant (0 or 1).
  const bool no_bias = arg_bool(n.fn, "no_bias");
  const bool no_scale = arg_bool(n.fn, "no_scale");
  const std::vector<float> zeros(c[0], 0.0f), ones(c[0], 1.0f);
  int i = 1;
  const std::string beta =
      no_bias ? n.e.constant(c, Dtype::f32, zeros.data(), "beta")
              : n.in(i++, c);
  const std::string gamma =
      no_scale ? n.e.constant(c, Dtype::f32, ones.data(), "gamma")
               : n.in(i++, c);
  const std::string mean = n.in(i, c), variance = n.in(i + 1, c);
  auto* b = n.op("BatchNormalization", {n.in(0), gamma, beta, mean, variance},
                 {n.out(0)});
  attr(b, "epsilon", arg_real(n.fn, "eps"));
}

// Sum, Mean, Max, Min, Prod over `axes` (empty: all).
Converter reduction(const char* type) {
  return [type](Node& n) {
    std::vector<int64_t> axes = arg_ints(n.fn, "axes");
    if (axes.empty()) {
      for (int i = 0; i < n.ndim(0); ++i) axes.push_back(i);
    }
    const int64_t keep = arg_bool(n.fn, "keep_dims");
    onnx::NodeProto* r;
    if (std::string(type) == "ReduceSum") {  // axes an input since opset 13
      r = n.op(type, {n.in(0), n.ints(axes)}, {n.out(0)});
    } else {
      r = n.op(type, {n.in(0)}, {n.out(0)});
      attr(r, "axes", axes);
    }
    attr(r, "keepdims", keep);
  };
}
Converter reduce_all(const char* type) {
  return [type](Node& n) {
    std::vector<int64_t> axes;
    for (int i = 0; i < n.ndim(0); ++i) axes.push_back(i);
    auto* r = std::string(type) == "ReduceSum"
                  ? n.op(type, {n.in(0), n.ints(axes)}, {n.out(0)})
                  : n.op(type, {n.in(0)}, {n.out(0)});
    if (std::string(type) != "ReduceSum") attr(r, "axes", axes);
    attr(r, "keepdims",
         static_cast<int64_t>(n.out_shape(0).size() == n.in_shape(0).size()));
  };
}

void reshape(Node& n) {
  Shape target = n.out_shape(0);
  const Shape& xs = n.in_shape(0);
  // A free batch: a leading dimension equal to the input's batch size copies
  // it (ONNX's 0), so the model runs on any batch.
  if (n.e.options().free_batch && !target.empty() && !xs.empty() &&
      target[0] == xs[0] && xs[0] == n.e.batch()) {
    target[0] = 0;
  }
  n.op("Reshape", {n.in(0), n.ints(target)}, {n.out(0)});
}

void transpose(Node& n) {
  attr(n.op("Transpose", {n.in(0)}, {n.out(0)}), "perm",
       arg_ints(n.fn, "axes"));
}

void concatenate(Node& n) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < n.node.inputs().size(); ++i)
    ins.push_back(n.in(static_cast<int>(i)));
  attr(n.op("Concat", ins, {n.out(0)}), "axis", arg_int(n.fn, "axis"));
}

void stack(Node& n) {
  const int64_t axis = arg_int(n.fn, "axis");
  std::vector<std::string> ins;
  const std::string axes = n.ints({axis});
  for (size_t i = 0; i < n.node.inputs().size(); ++i) {
    const std::string u = n.tmp();
    n.op("Unsqueeze", {n.in(static_cast<int>(i)), axes}, {u});
    ins.push_back(u);
  }
  attr(n.op("Concat", ins, {n.out(0)}), "axis", axis);
}

void split(Node& n) {
  const int64_t axis = arg_int(n.fn, "axis");
  std::vector<std::string> parts;
  for (size_t o = 0; o < n.outs.size(); ++o) parts.push_back(n.tmp());
  attr(n.op("Split", {n.in(0)}, parts), "axis", axis);
  const std::string axes = n.ints({axis});
  for (size_t o = 0; o < n.outs.size(); ++o) {
    n.op("Squeeze", {parts[o], axes}, {n.out(static_cast<int>(o))});
  }
}

void slice(Node& n) {
  const std::vector<int64_t> start = arg_ints(n.fn, "start"),
                             stop = arg_ints(n.fn, "stop");
  std::vector<int64_t> step = arg_ints(n.fn, "step");
  if (step.empty()) step.assign(start.size(), 1);
  std::vector<int64_t> axes;
  for (size_t i = 0; i < start.size(); ++i) {
    if (step[i] <= 0) n.unsupported("a step <= 0 is not written");
    axes.push_back(static_cast<int64_t>(i));
  }
  n.op("Slice",
       {n.in(0), n.ints(start), n.ints(stop), n.ints(axes), n.ints(step)},
       {n.out(0)});
}

void flip(Node& n) {
  const std::vector<int64_t> axes = arg_ints(n.fn, "axes");
  const std::vector<int64_t> starts(axes.size(), -1), steps(axes.size(), -1),
      ends(axes.size(), INT64_MIN);
  n.op("Slice",
       {n.in(0), n.ints(starts), n.ints(ends), n.ints(axes), n.ints(steps)},
       {n.out(0)});
}

void broadcast(Node& n) {
  n.op("Expand", {n.in(0), n.ints(n.out_shape(0))}, {n.out(0)});
}

void tile(Node& n) {
  std::vector<int64_t> reps = arg_ints(n.fn, "reps");
  std::string x = n.in(0);
  const Shape& xs = n.in_shape(0);
  if (reps.size() > xs.size()) {  // leading axes added, as NumPy
    Shape padded(reps.size() - xs.size(), 1);
    padded.insert(padded.end(), xs.begin(), xs.end());
    const std::string r = n.tmp();
    n.op("Reshape", {x, n.ints(padded)}, {r});
    x = r;
  } else {
    reps.insert(reps.begin(), xs.size() - reps.size(), 1);
  }
  n.op("Tile", {x, n.ints(reps)}, {n.out(0)});
}

void pad(Node& n) {
  const std::vector<int64_t> width = arg_ints(n.fn, "pad_width");
  const std::string mode = arg_str(n.fn, "mode");
  const int nd = n.ndim(0);
  const int padded = static_cast<int>(width.size() / 2);
  std::vector<int64_t> pads(2 * nd, 0);
  for (int i = 0; i < padded; ++i) {
    pads[nd - padded + i] = width[2 * i];
    pads[2 * nd - padded + i] = width[2 * i + 1];
  }
  std::string onnx_mode;
  if (mode == "constant") onnx_mode = "constant";
  if (mode == "reflect") onnx_mode = "reflect";
  if (mode == "repeat" || mode == "edge") onnx_mode = "edge";
  if (onnx_mode.empty()) n.unsupported("mode '" + mode + "'");
  std::vector<std::string> ins = {n.in(0), n.ints(pads)};
  if (onnx_mode == "constant") {
    ins.push_back(n.scalar(arg_real(n.fn, "constant_value"), n.out_elem(0)));
  }
  attr(n.op("Pad", ins, {n.out(0)}), "mode", onnx_mode);
}

void batch_matmul(Node& n) {
  auto operand = [&](int i, const char* flag) {
    std::string v = n.in(i);
    if (!arg_bool(n.fn, flag)) return v;
    std::vector<int64_t> perm;
    for (int a = 0; a < n.ndim(i); ++a) perm.push_back(a);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    const std::string t = n.tmp();
    attr(n.op("Transpose", {v}, {t}), "perm", perm);
    return t;
  };
  n.op("MatMul", {operand(0, "transpose_a"), operand(1, "transpose_b")},
       {n.out(0)});
}

void softmax(const char* type, Node& n) {
  attr(n.op(type, {n.in(0)}, {n.out(0)}), "axis", arg_int(n.fn, "axis"));
}

void interpolate(Node& n) {
  if (arg_bool(n.fn, "channel_last")) n.unsupported("channel_last true");
  const std::string mode = arg_str(n.fn, "mode");
  const bool align = arg_bool(n.fn, "align_corners"),
             half = arg_bool(n.fn, "half_pixel"),
             half_nn = arg_bool(n.fn, "half_pixel_for_nn");
  std::string coords, nearest;
  if (mode == "linear") {
    coords = align ? "align_corners" : half ? "half_pixel" : "asymmetric";
  } else if (half_nn) {
    coords = "tf_half_pixel_for_nn", nearest = "floor";
  } else if (!align && !half) {
    coords = "asymmetric", nearest = "floor";
  } else {
    n.unsupported(
        "nearest with align_corners or half_pixel (ONNX rounds "
        "those sources differently)");
  }
  const std::vector<int64_t> size = arg_ints(n.fn, "output_size");
  const int kept = n.ndim(0) - static_cast<int>(size.size());
  std::string sizes;
  if (n.e.options().free_batch) {  // the leading axes from the input
    const std::string lead = n.tmp();
    auto* s = n.op("Shape", {n.in(0)}, {lead});
    attr(s, "end", static_cast<int64_t>(kept));
    sizes = n.tmp();
    attr(n.op("Concat", {lead, n.ints(size)}, {sizes}), "axis", int64_t{0});
  } else {
    sizes = n.ints(n.out_shape(0));
  }
  auto* r = n.op("Resize", {n.in(0), "", "", sizes}, {n.out(0)});
  attr(r, "mode", mode);
  attr(r, "coordinate_transformation_mode", coords);
  if (!nearest.empty()) attr(r, "nearest_mode", nearest);
}

void layer_normalization(Node& n) {
  // ONNX normalises the axes from `axis` on: ours with the leading axes
  // 0 .. k-1 as batch_axis (a transformer's (L, B, E) has {0, 1}).
  const std::vector<int64_t> batch_axis = arg_ints(n.fn, "batch_axis");
  for (size_t a = 0; a < batch_axis.size(); ++a) {
    if (batch_axis[a] != static_cast<int64_t>(a)) {
      n.unsupported("batch_axis " + shape_str(batch_axis) +
                    ": only the leading axes {0, 1, ..., k-1}");
    }
  }
  const int64_t axis = static_cast<int64_t>(batch_axis.size());
  const Shape& xs = n.in_shape(0);
  if (axis < 1 || axis >= static_cast<int64_t>(xs.size())) {
    n.unsupported("batch_axis " + shape_str(batch_axis) + " of x with shape " +
                  shape_str(xs) + " leaves no axis to normalise");
  }
  const Shape feat(xs.begin() + axis, xs.end());
  // Ours: x, beta, gamma; ONNX: X, Scale (required), B.
  const bool scale = !arg_bool(n.fn, "no_scale") && n.has_in(2);
  const bool bias = !arg_bool(n.fn, "no_bias") && n.has_in(1);
  std::string s;
  if (scale) {
    s = n.in(2, feat);
  } else {
    s = n.tmp();
    n.op("Expand", {n.scalar(1.0), n.ints(feat)}, {s});
  }
  std::vector<std::string> ins = {n.in(0), s};
  if (bias) ins.push_back(n.in(1, feat));
  auto* l = n.op("LayerNormalization", ins, {n.out(0)});
  attr(l, "axis", axis);
  attr(l, "epsilon", arg_real(n.fn, "eps"));
}

// Our LSTM, GRU and RNN as ONNX's, one node per layer (layout 0: x as
// (T, B, I)), with the weights converted while writing into ONNX's W, R and
// B initializers (named "<ours>_W" ...): our weight (D, G, H, I + H) split
// into W and R with its gate blocks in ONNX's order, our bias rows spread
// over ONNX's Wb and Rb (onnx_recurrent.hpp has the layouts). The weights
// must be parameters, as the importer wants them.
Converter recurrent(onnx_io::RecurrentKind kind) {
  return [kind](Node& n) {
    using onnx_io::RecurrentKind;
    const bool lstm = kind == RecurrentKind::lstm;
    const int w0 = lstm ? 3 : 2;  // weight_l0 after x, h (and c)
    const int64_t L = arg_int(n.fn, "num_layers");
    const int64_t D = arg_bool(n.fn, "bidirectional") ? 2 : 1;
    if (arg_real(n.fn, "dropout") != 0.0) {
      n.unsupported("dropout between layers has no ONNX equivalent");
    }
    const Shape& xs = n.in_shape(0);
    const int64_t T = xs[0], I = xs[2], H = n.in_shape(1).back();
    const int64_t G = onnx_io::recurrent_gates(kind);
    const int64_t Gb = onnx_io::recurrent_bias_rows(kind);
    const std::vector<int> ours = onnx_io::our_gates(kind);
    // NNabla's rule for the optional inputs (Recurrent::setup_impl).
    const int given = static_cast<int>(n.node.inputs().size());
    const int weight_at = L > 1 ? w0 + 1 : -1;
    const int bias_at = L > 1 ? w0 + 2 : w0 + 1;
    const bool has_bias = given > bias_at && n.has_in(bias_at);
    auto weights = [&](int i, const char* name) {
      const VariablePtr& v = n.node.inputs()[i];
      if (v->parent() || !n.e.is_parameter(v.get())) {
        n.unsupported(std::string(name) +
                      " must be a parameter (ONNX's W, R and B are written "
                      "as initializers, converted to its gate order)");
      }
      const float* p = v->data()->get<const float>();
      return std::vector<float>(p, p + v->size());
    };
    // Each layer's node is named after our weights' scope ("lstm" for
    // "lstm/weight_l0"; layer l > 0 "lstm/l<l>"), which load_onnx names its
    // converted weights after: "lstm/weight_l0" and "lstm/bias" come back.
    std::string scope = n.e.parameter_name(n.node.inputs()[w0].get());
    const std::string suffix = "/weight_l0";
    if (scope.size() > suffix.size() &&
        scope.compare(scope.size() - suffix.size(), suffix.size(), suffix) ==
            0) {
      scope.resize(scope.size() - suffix.size());
    }
    auto initializer = [&](const Shape& shape, const std::vector<float>& data,
                           const std::string& hint) {
      const std::string name =
          n.e.constant(shape, Dtype::f32, data.data(), scope + "/" + hint);
      return n.T == kFloat ? name : n.e.cast(name, n.T);
    };
    auto at = [&](const std::string& v, int64_t index) {
      const std::string r = n.tmp();
      attr(n.op("Gather", {v, n.scalar(static_cast<double>(index), kInt64)},
                {r}),
           "axis", int64_t{0});
      return r;
    };
    const std::vector<float> first = weights(w0, "weight_l0");
    const std::vector<float> deeper =
        L > 1 ? weights(weight_at, "weight") : std::vector<float>{};
    const std::vector<float> bias =
        has_bias ? weights(bias_at, "bias") : std::vector<float>{};
    std::string x = n.in(0);
    std::vector<std::string> hs, cs;
    for (int64_t l = 0; l < L; ++l) {
      const int64_t in_size = l == 0 ? I : D * H;
      // Our (D, G, H, in_size + H) block of this layer.
      const float* w =
          l == 0 ? first.data()
                 : deeper.data() + (l - 1) * D * G * H * (in_size + H);
      std::vector<float> W, R;
      for (int64_t d = 0; d < D; ++d) {
        for (int g : ours) {
          for (int64_t h = 0; h < H; ++h) {
            const float* row = w + ((d * G + g) * H + h) * (in_size + H);
            W.insert(W.end(), row, row + in_size);
            R.insert(R.end(), row + in_size, row + in_size + H);
          }
        }
      }
      std::string b;
      if (has_bias) {
        std::vector<float> B;
        for (int64_t d = 0; d < D; ++d) {
          const float* rows = bias.data() + (l * D + d) * Gb * H;
          for (int g : ours) B.insert(B.end(), rows + g * H, rows + g * H + H);
          for (int64_t g = 0; g < G; ++g) {
            const bool hidden =
                kind == RecurrentKind::gru && g == onnx_io::kGruCandidateGate;
            const float* r = rows + onnx_io::kGruHiddenBiasRow * H;
            for (int64_t h = 0; h < H; ++h) B.push_back(hidden ? r[h] : 0.0f);
          }
        }
        b = initializer({D, 2 * G * H}, B, "B" + std::to_string(l));
      }
      std::vector<std::string> ins = {
          x,
          initializer({D, G * H, in_size}, W, "W" + std::to_string(l)),
          initializer({D, G * H, H}, R, "R" + std::to_string(l)),
          b,
          "",
          at(n.in(1), l)};
      if (lstm) ins.push_back(at(n.in(2), l));
      const std::string y = n.tmp(), h = n.tmp(), c = n.tmp();
      const char* type = lstm                         ? "LSTM"
                         : kind == RecurrentKind::gru ? "GRU"
                                                      : "RNN";
      std::vector<std::string> outs = {y, h};
      if (lstm) outs.push_back(c);
      auto* r = n.op(type, ins, outs);
      r->set_name(l == 0 ? scope : scope + "/l" + std::to_string(l));
      attr(r, "hidden_size", H);
      attr(r, "direction", std::string(D == 2 ? "bidirectional" : "forward"));
      if (kind == RecurrentKind::gru) {
        attr(r, "linear_before_reset", int64_t{1});
      }
      if (kind == RecurrentKind::rnn &&
          arg_str(n.fn, "nonlinearity") == "relu") {
        attr(r, "activations", std::vector<std::string>(D, "Relu"));
      }
      // ONNX's Y (T, D, B, H) as ours (T, B, D H); 0 keeps the batch.
      const std::string yt = n.tmp();
      attr(n.op("Transpose", {y}, {yt}), "perm",
           std::vector<int64_t>{0, 2, 1, 3});
      x = l + 1 == L ? n.out(0) : n.tmp();
      n.op("Reshape", {yt, n.ints({T, 0, D * H})}, {x});
      hs.push_back(h);
      cs.push_back(c);
    }
    // The states (D, B, H) of each layer stacked as ours (L, D, B, H).
    auto stack = [&](const std::vector<std::string>& states, int o) {
      std::vector<std::string> parts;
      for (const auto& st : states) {
        parts.push_back(L == 1 ? n.out(o) : n.tmp());
        n.op("Unsqueeze", {st, n.ints({0})}, {parts.back()});
      }
      if (L > 1) attr(n.op("Concat", parts, {n.out(o)}), "axis", int64_t{0});
    };
    stack(hs, 1);
    if (lstm) stack(cs, 2);
  };
}

void instance_normalization(Node& n) {
  if (arg_int(n.fn, "channel_axis") != 1 ||
      arg_ints(n.fn, "batch_axis") != std::vector<int64_t>{0}) {
    n.unsupported("channel_axis 1 and batch_axis {0} only");
  }
  const int64_t C = n.in_shape(0)[1];
  auto param = [&](int i, bool off, double fill) {
    if (!off && n.has_in(i)) return n.in(i, Shape{C});
    const std::string v = n.tmp();
    n.op("Expand", {n.scalar(fill), n.ints({C})}, {v});
    return v;
  };
  const std::string s = param(2, arg_bool(n.fn, "no_scale"), 1.0);
  const std::string b = param(1, arg_bool(n.fn, "no_bias"), 0.0);
  attr(n.op("InstanceNormalization", {n.in(0), s, b}, {n.out(0)}), "epsilon",
       arg_real(n.fn, "eps"));
}

void prelu(Node& n) {
  const int b = static_cast<int>(arg_int(n.fn, "base_axis"));
  std::string w;
  if (n.in_shape(1).empty() || shape_size(n.in_shape(1)) == 1) {
    w = n.in(1, Shape{1});
  } else {
    Shape ws{n.in_shape(1)[0]};  // the channel axis, then ones to the end
    ws.insert(ws.end(), n.ndim(0) - b - 1, 1);
    w = n.in(1, ws);
  }
  n.op("PRelu", {n.in(0), w}, {n.out(0)});
}

void gelu(Node& n) {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const std::string x = n.in(0);
  const std::string x3 = n.tmp(), a = n.tmp(), inner = n.tmp(), t = n.tmp(),
                    one_t = n.tmp(), hx = n.tmp();
  n.op("Pow", {x, n.scalar(3.0)}, {x3});
  n.op("Mul", {x3, n.scalar(0.044715)}, {a});
  const std::string sum = n.tmp();
  n.op("Add", {x, a}, {sum});
  n.op("Mul", {sum, n.scalar(0.7978845608028654)}, {inner});
  n.op("Tanh", {inner}, {t});
  n.op("Add", {t, n.scalar(1.0)}, {one_t});
  n.op("Mul", {x, n.scalar(0.5)}, {hx});
  n.op("Mul", {hx, one_t}, {n.out(0)});
}

// y = x * f(x) (Swish: Sigmoid; Mish: Tanh(Softplus)).
Converter x_times(std::vector<const char*> chain) {
  return [chain](Node& n) {
    const std::string x = n.in(0);
    std::string v = x;
    for (const char* type : chain) {
      const std::string t = n.tmp();
      n.op(type, {v}, {t});
      v = t;
    }
    n.op("Mul", {x, v}, {n.out(0)});
  };
}
// y = f_k(...f_1(x)): a chain of unary operators.
Converter chain(std::vector<const char*> types) {
  return [types](Node& n) {
    std::string v = n.in(0);
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string t = i + 1 == types.size() ? n.out(0) : n.tmp();
      n.op(types[i], {v}, {t});
      v = t;
    }
  };
}

void identity(Node& n) { n.op("Identity", {n.in(0)}, {n.out(0)}); }

// The table's keys: the names the functions' declarations give
// (graph/function_decl.hpp), so that a renamed function cannot leave a stale
// entry behind.
template <class Op>
constexpr const char* unary_name = decl::unary<Op>.name;
template <class Op>
constexpr const char* binary_name = decl::binary<Op>.name;

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = [] {
    std::map<std::string, Converter> t;
    // Ours and ONNX's unary operator of the same meaning.
    const std::pair<const char*, const char*> unaries[] = {
        {unary_name<ops::Sigmoid>, "Sigmoid"},
        {unary_name<ops::Tanh>, "Tanh"},
        {unary_name<ops::Exp>, "Exp"},
        {unary_name<ops::Log>, "Log"},
        {unary_name<ops::Sqrt>, "Sqrt"},
        {unary_name<ops::Abs>, "Abs"},
        {unary_name<ops::Erf>, "Erf"},
        {unary_name<ops::Sin>, "Sin"},
        {unary_name<ops::Cos>, "Cos"},
        {unary_name<ops::Tan>, "Tan"},
        {unary_name<ops::Sinh>, "Sinh"},
        {unary_name<ops::Cosh>, "Cosh"},
        {unary_name<ops::Ceil>, "Ceil"},
        {unary_name<ops::Floor>, "Floor"},
        {unary_name<ops::ReLU>, "Relu"},
        {unary_name<ops::ASin>, "Asin"},
        {unary_name<ops::ACos>, "Acos"},
        {unary_name<ops::ATan>, "Atan"},
        {unary_name<ops::ASinh>, "Asinh"},
        {unary_name<ops::ACosh>, "Acosh"},
        {unary_name<ops::ATanh>, "Atanh"},
        {unary_name<ops::SoftSign>, "Softsign"},
    };
    for (const auto& [ours, theirs] : unaries) t[ours] = unary(theirs);
    t[unary_name<ops::Identity>] = t[decl::Dropout.name] =
        t[unary_name<ops::Unlink>] = identity;
    t[unary_name<ops::SoftPlus>] = [](Node& n) {  // log(1 + exp(beta x)) / beta
      const double beta = arg_real(n.fn, "beta");
      if (beta == 1.0) return n.unary("Softplus");
      const std::string bx = n.tmp(), s = n.tmp();
      n.op("Mul", {n.in(0), n.scalar(beta)}, {bx});
      n.op("Softplus", {bx}, {s});
      n.op("Div", {s, n.scalar(beta)}, {n.out(0)});
    };
    t[unary_name<ops::LeakyReLU>] = [](Node& n) {
      attr(n.op("LeakyRelu", {n.in(0)}, {n.out(0)}), "alpha",
           arg_real(n.fn, "alpha"));
    };
    t[unary_name<ops::ELU>] = [](Node& n) {
      attr(n.op("Elu", {n.in(0)}, {n.out(0)}), "alpha",
           arg_real(n.fn, "alpha"));
    };
    t[unary_name<ops::SELU>] = [](Node& n) {
      auto* s = n.op("Selu", {n.in(0)}, {n.out(0)});
      attr(s, "alpha", arg_real(n.fn, "alpha"));
      attr(s, "gamma", arg_real(n.fn, "scale"));
    };
    t[unary_name<ops::HardSigmoid>] = [](Node& n) {  // clip(0.2 x + 0.5, 0, 1)
      auto* h = n.op("HardSigmoid", {n.in(0)}, {n.out(0)});
      attr(h, "alpha", 0.2);
      attr(h, "beta", 0.5);
    };
    t[unary_name<ops::ReLU6>] = clip(0.0, 6.0);
    t[unary_name<ops::HardTanh>] = clip(-1.0, 1.0);
    t[unary_name<ops::ClipByValue>] = [](Node& n) {
      clip(arg_real(n.fn, "min"), arg_real(n.fn, "max"))(n);
    };
    t[unary_name<ops::Swish>] = x_times({"Sigmoid"});
    t[unary_name<ops::Mish>] = x_times({"Softplus", "Tanh"});
    t[unary_name<ops::GELU>] = gelu;
    t[unary_name<ops::LogSigmoid>] = chain({"Neg", "Softplus", "Neg"});
    t[unary_name<ops::Rsqrt>] = chain({"Sqrt", "Reciprocal"});
    t[unary_name<ops::TanhShrink>] = [](Node& n) {
      const std::string x = n.in(0), th = n.tmp();
      n.op("Tanh", {x}, {th});
      n.op("Sub", {x, th}, {n.out(0)});
    };
    t[binary_name<ops::Add2>] = t[binary_name<ops::BcAdd2>] = binary("Add");
    t[binary_name<ops::Sub2>] = binary("Sub");
    t[binary_name<ops::Mul2>] = binary("Mul");
    t[binary_name<ops::Div2>] = binary("Div");
    t[binary_name<ops::Pow2>] = binary("Pow");
    t[binary_name<ops::Maximum2>] = binary("Max");
    t[binary_name<ops::Minimum2>] = binary("Min");
    t[unary_name<ops::AddScalar>] = with_scalar("Add", false);
    t[unary_name<ops::MulScalar>] = with_scalar("Mul", false);
    t[unary_name<ops::PowScalar>] = with_scalar("Pow", false);
    t[unary_name<ops::MaximumScalar>] = with_scalar("Max", false);
    t[unary_name<ops::MinimumScalar>] = with_scalar("Min", false);
    t[unary_name<ops::RSubScalar>] = with_scalar("Sub", true);
    t[unary_name<ops::RDivScalar>] = with_scalar("Div", true);
    t[unary_name<ops::RPowScalar>] = with_scalar("Pow", true);
    t[decl::AddN.name] = [](Node& n) {
      std::vector<std::string> ins;
      for (size_t i = 0; i < n.node.inputs().size(); ++i)
        ins.push_back(n.in(static_cast<int>(i)));
      n.op("Sum", ins, {n.out(0)});
    };
    t[binary_name<ops::Equal>] = predicate("Equal", 2, false, false);
    t[binary_name<ops::NotEqual>] = predicate("Equal", 2, false, true);
    t[binary_name<ops::Greater>] = predicate("Greater", 2, false, false);
    t[binary_name<ops::GreaterEqual>] =
        predicate("GreaterOrEqual", 2, false, false);
    t[binary_name<ops::Less>] = predicate("Less", 2, false, false);
    t[binary_name<ops::LessEqual>] = predicate("LessOrEqual", 2, false, false);
    t[unary_name<ops::EqualScalar>] = predicate("Equal", 1, true, false);
    t[unary_name<ops::NotEqualScalar>] = predicate("Equal", 1, true, true);
    t[unary_name<ops::GreaterScalar>] = predicate("Greater", 1, true, false);
    t[unary_name<ops::GreaterEqualScalar>] =
        predicate("GreaterOrEqual", 1, true, false);
    t[unary_name<ops::LessScalar>] = predicate("Less", 1, true, false);
    t[unary_name<ops::LessEqualScalar>] =
        predicate("LessOrEqual", 1, true, false);
    t[binary_name<ops::LogicalAnd>] = predicate("LogicalAnd", 2, false, false);
    t[binary_name<ops::LogicalOr>] = predicate("LogicalOr", 2, false, false);
    t[binary_name<ops::LogicalXor>] = predicate("LogicalXor", 2, false, false);
    t[unary_name<ops::LogicalNot>] = predicate("Not", 1, false, false);
    t[unary_name<ops::IsNaN>] = predicate("IsNaN", 1, false, false);
    t[unary_name<ops::IsInf>] = predicate("IsInf", 1, false, false);
    t[decl::Affine.name] = affine;
    t[decl::Convolution.name] = convolution;
    t[decl::DepthwiseConvolution.name] = depthwise_convolution;
    t[decl::Deconvolution.name] = deconvolution;
    t[decl::MaxPooling.name] = pooling("MaxPool", false);
    t[decl::AveragePooling.name] = pooling("AveragePool", false);
    t[decl::SumPooling.name] = pooling("AveragePool", true);
    t[decl::GlobalAveragePooling.name] = unary("GlobalAveragePool");
    t[decl::BatchNormalization.name] = t[decl::SyncBatchNormalization.name] =
        batch_normalization;
    t[decl::LayerNormalization.name] = layer_normalization;
    t[decl::LSTM.name] = recurrent(onnx_io::RecurrentKind::lstm);
    t[decl::GRU.name] = recurrent(onnx_io::RecurrentKind::gru);
    t[decl::RNN.name] = recurrent(onnx_io::RecurrentKind::rnn);
    t[decl::InstanceNormalization.name] = instance_normalization;
    t[decl::PReLU.name] = prelu;
    t[decl::Softmax.name] = [](Node& n) { softmax("Softmax", n); };
    t[decl::LogSoftmax.name] = [](Node& n) { softmax("LogSoftmax", n); };
    t[decl::Sum.name] = reduction("ReduceSum");
    t[decl::Mean.name] = reduction("ReduceMean");
    t[decl::Max.name] = reduction("ReduceMax");
    t[decl::Min.name] = reduction("ReduceMin");
    t[decl::Prod.name] = reduction("ReduceProd");
    t[decl::ReduceSum.name] = reduce_all("ReduceSum");
    t[decl::ReduceMean.name] = reduce_all("ReduceMean");
    t[decl::Reshape.name] = reshape;
    t[decl::Transpose.name] = transpose;
    t[decl::Concatenate.name] = concatenate;
    t[decl::Stack.name] = stack;
    t[decl::Split.name] = split;
    t[decl::Slice.name] = slice;
    t[decl::Flip.name] = flip;
    t[decl::Broadcast.name] = broadcast;
    t[decl::Tile.name] = tile;
    t[decl::Pad.name] = pad;
    t[decl::BatchMatmul.name] = batch_matmul;
    t[decl::Interpolate.name] = interpolate;
    t[decl::Embed.name] = [](Node& n) {  // Gather(W, ids) on axis 0
      n.op("Gather", {n.in(1), n.in(0)}, {n.out(0)});
    };
    t[decl::Gather.name] = [](Node& n) {
      if (arg_int(n.fn, "batch_dims") != 0) n.unsupported("batch_dims != 0");
      attr(n.op("Gather", {n.in(0), n.in(1)}, {n.out(0)}), "axis",
           arg_int(n.fn, "axis"));
    };
    t[decl::Where.name] = [](Node& n) {
      n.op("Where", {n.e.cast(n.in(0), kBool), n.in(1), n.in(2)}, {n.out(0)});
    };
    t[decl::Cast.name] = [](Node& n) {
      attr(n.op("Cast", {n.in(0)}, {n.out(0)}), "to",
           static_cast<int64_t>(n.out_elem(0)));
    };
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> onnx_exportable_functions() {
  std::vector<std::string> names;
  for (const auto& [name, c] : converters()) names.push_back(name);
  return names;
}

std::string network_to_onnx(
    const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveOnnxOptions& options) {
  std::vector<VariablePtr> vars;
  for (const auto& [oname, v] : outputs) {
    if (!v) {
      throw std::invalid_argument(
          msg("[save_onnx] output '", oname, "' is null"));
    }
    vars.push_back(v);
  }
  const auto order = functions_in_order(vars);
  // Every function first, so that the error lists all that cannot be
  // written, not the first.
  std::string unmapped;
  for (FunctionNode* node : order) {
    const std::string fn = node->function().name();
    if (!converters().count(fn) &&
        unmapped.find("'" + fn + "'") == std::string::npos) {
      unmapped += (unmapped.empty() ? "'" : ", '") + fn + "'";
    }
  }
  if (!unmapped.empty()) {
    throw std::invalid_argument(
        msg("[save_onnx] no ONNX equivalent for ", unmapped,
            " (mg::onnx_exportable_functions() lists what is written; a loss "
            "or a training-only function has no place in an exported model: "
            "export mg::inference_graph(outputs), utils/inference.hpp)"));
  }

  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("mixgraph");
  model.set_producer_version(MIXGRAPH_VERSION);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(name);
  Exporter e(g, params, options);
  for (FunctionNode* node : order) {
    Function& fn = node->function();
    Node n{e, *node, fn, node->outputs(), elem_type(fn.dtype())};
    converters().at(fn.name())(n);
    for (size_t o = 0; o < n.outs.size(); ++o) n.out(static_cast<int>(o));
  }
  for (const auto& [oname, v] : outputs) {
    // The model's outputs in float, whatever the graph computes in (integer
    // outputs stay integer).
    const int32_t elem = e.has_value(v.get()) ? e.value_of(v.get()).elem : 0;
    const bool floating = elem == 0 || is_float_elem(elem);
    const std::string src = e.value(v, floating ? kFloat : 0, nullptr, oname);
    e.node("Identity", {src}, {oname});
    auto* out = g->add_output();
    out->set_name(oname);
    auto* t = out->mutable_type()->mutable_tensor_type();
    t->set_elem_type(floating ? kFloat : elem);
    auto* s = t->mutable_shape();
    for (size_t i = 0; i < v->shape().size(); ++i) {
      if (i == 0 && options.free_batch && v->shape()[0] == e.batch()) {
        s->add_dim()->set_dim_param("N");
      } else {
        s->add_dim()->set_dim_value(v->shape()[i]);
      }
    }
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& ex) {
    throw std::logic_error(
        msg(std::string("[save_onnx] ONNX's checker rejects the model written "
                        "for '"),
            name, "': ", ex.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw std::runtime_error(msg("[save_onnx] cannot serialize '", name, "'"));
  }
  return bytes;
}

void save_onnx(const std::string& path, const std::string& name,
               const std::vector<std::pair<std::string, VariablePtr>>& outputs,
               const ParameterScope& params, const SaveOnnxOptions& options) {
  const std::string bytes = network_to_onnx(name, outputs, params, options);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f)
      throw std::runtime_error(msg("[save_onnx] cannot write '", tmp, "'"));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      throw std::runtime_error(msg("[save_onnx] writing '", tmp, "' failed"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(
        msg("[save_onnx] cannot rename '", tmp, "' to '", path, "'"));
  }
}

bool onnx_available() { return true; }

}  // namespace mg
