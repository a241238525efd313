// save_onnx: a graph's functions written as ONNX nodes (opset 17), one
// converter per function, in the types the graph computes in. This file
// holds the exporter's plumbing, the table of converters and the public
// functions; the converters themselves are in onnx_export_ops.cpp and
// onnx_export_layers.cpp (onnx_export.hpp declares them).
#include <onnx/checker.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

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
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/onnx/onnx_recurrent.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

#include <mixgraph/utils/onnx/onnx_export.hpp>

namespace mg {

namespace onnx_export {

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

}  // namespace onnx_export

using onnx_export::converters;
using onnx_export::elem_type;
using onnx_export::Exporter;
using onnx_export::is_float_elem;
using onnx_export::kFloat;
using onnx_export::Node;

std::vector<std::string> onnx_exportable_functions() {
  std::vector<std::string> names;
  for (const auto& [name, c] : converters()) names.push_back(name);
  // Ours, written as their compositions of functions converted above.
  for (const FunctionDecl* d : FunctionRegistry::instance().decls()) {
    if (d->composed) names.push_back(d->name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// The functions to convert, in order: the graph's, with each function that
// has no converter but a composition (Function::composition) replaced by
// the functions of its composition, built on the same inputs in the type it
// computes in (on the CPU: it only has to describe the math).
struct ExportOrder {
  std::vector<FunctionNode*> nodes;
  // A composition's output -> the function output it stands for.
  std::unordered_map<const Variable*, Variable*> stands_for;
  std::vector<VariablePtr> keep;  // the compositions, alive while converted
};

ExportOrder export_order(const std::vector<VariablePtr>& outputs) {
  ExportOrder order;
  std::unordered_set<const FunctionNode*> listed;
  for (FunctionNode* node : functions_in_order(outputs)) {
    const Function& fn = node->function();
    std::vector<VariablePtr> composed;
    if (!converters().count(fn.name())) {
      ContextGuard guard(context("cpu", dtype_name(fn.dtype())));
      composed = fn.composition(node->inputs());
    }
    if (composed.empty()) {
      listed.insert(node);
      order.nodes.push_back(node);
      continue;
    }
    for (size_t o = 0; o < composed.size(); ++o) {
      order.stands_for[composed[o].get()] = node->outputs()[o].get();
      order.keep.push_back(composed[o]);
    }
    for (FunctionNode* part : functions_in_order(composed)) {
      if (listed.insert(part).second) order.nodes.push_back(part);
    }
  }
  return order;
}

}  // namespace

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
  const ExportOrder order = export_order(vars);
  // Every function first, so that the error lists all that cannot be
  // written, not the first.
  std::string unmapped;
  for (FunctionNode* node : order.nodes) {
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
  for (FunctionNode* node : order.nodes) {
    Function& fn = node->function();
    Node n{e, *node, fn, node->outputs(), elem_type(fn.dtype())};
    converters().at(fn.name())(n);
    for (size_t o = 0; o < n.outs.size(); ++o) {
      n.out(static_cast<int>(o));
      const Variable* v = n.outs[o].get();
      if (auto it = order.stands_for.find(v); it != order.stands_for.end()) {
        e.set_value(it->second, e.value_of(v));
      }
    }
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
