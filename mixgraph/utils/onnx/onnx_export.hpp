// save_onnx's internals (onnx_export*.cpp): the exporter, the node being
// converted, the attribute and argument helpers and the converters, which
// live by family in onnx_export_ops.cpp (elementwise, reductions, shapes)
// and onnx_export_layers.cpp (the layers: products, convolutions, pooling,
// normalizations, recurrent, interpolation). Internal: not installed.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/onnx/onnx_recurrent.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg::onnx_export {

using onnx_io::elem_type;
inline constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
inline constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;
inline constexpr int32_t kBool = onnx::TensorProto_DataType_BOOL;

inline bool is_float_elem(int32_t e) {
  return e == kFloat || e == onnx::TensorProto_DataType_FLOAT16 ||
         e == onnx::TensorProto_DataType_BFLOAT16;
}

// ---- attributes ----
void attr(onnx::NodeProto* n, const char* name, int64_t v);
void attr(onnx::NodeProto* n, const char* name, double v);
void attr(onnx::NodeProto* n, const char* name, const std::string& v);
void attr(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v);
void attr(onnx::NodeProto* n, const char* name,
          const std::vector<std::string>& v);

// ---- a function's arguments by name ----
const ArgValue& arg(const Function& f, const char* name);
double arg_real(const Function& f, const char* name);
int64_t arg_int(const Function& f, const char* name);
bool arg_bool(const Function& f, const char* name);
std::vector<int64_t> arg_ints(const Function& f, const char* name);
std::string arg_str(const Function& f, const char* name);

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

// ---- converters (onnx_export_ops.cpp) ----
Converter unary(const char* type);
Converter binary(const char* type);
/// y = op(x, val), or op(val, x) when the scalar comes first.
Converter with_scalar(const char* type, bool scalar_first);
/// A comparison or a logical operator: bool out, cast to the output's type.
Converter predicate(const char* type, int arity, bool scalar, bool negate);
/// y = Clip(x, lo, hi).
Converter clip(double lo, double hi);
/// Sum, Mean, Max, Min, Prod over `axes` (empty: all).
Converter reduction(const char* type);
Converter reduce_all(const char* type);
void reshape(Node& n);
void transpose(Node& n);
void concatenate(Node& n);
void stack(Node& n);
void split(Node& n);
void slice(Node& n);
void flip(Node& n);
void broadcast(Node& n);
void tile(Node& n);
void pad(Node& n);
void batch_matmul(Node& n);
void softmax(const char* type, Node& n);
/// y = x * f(x) (Swish: Sigmoid; Mish: Tanh(Softplus)).
Converter x_times(std::vector<const char*> chain);
/// y = f_k(...f_1(x)): a chain of unary operators.
Converter chain(std::vector<const char*> types);
void identity(Node& n);

// ---- converters (onnx_export_layers.cpp) ----
void affine(Node& n);
void convolution(Node& n);
void depthwise_convolution(Node& n);
void deconvolution(Node& n);
/// MaxPool / AveragePool from NNabla's pooling arguments; SumPooling is an
/// AveragePool counting the padding, times the window's size.
Converter pooling(const char* type, bool sum);
void batch_normalization(Node& n);
void interpolate(Node& n);
void layer_normalization(Node& n);
/// Our LSTM, GRU and RNN as ONNX's, one node per layer.
Converter recurrent(onnx_io::RecurrentKind kind);
void instance_normalization(Node& n);
void prelu(Node& n);
void gelu(Node& n);

}  // namespace mg::onnx_export
