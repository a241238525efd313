// The internals of load_onnx (utils/onnx/onnx_import*.cpp): Op, the node
// being rebuilt that every converter reads, the helpers the converter files
// share, and the converter table's parts, one per family of operators.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <mixgraph/graph/variable.hpp>
#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg::onnx_import {

using onnx_io::Tensor;

inline std::vector<int> to_int(const std::vector<int64_t>& v) {
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
  // "[load_onnx] <source>", the start of every error.
  std::string where() const;
  // The parameter `name` with the values of `t` (Importer::parameter_from).
  VariablePtr parameter_from(const std::string& name, const Tensor& t,
                             bool need_grad) const;
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

// ---- helpers the converter files share (onnx_import.cpp) ----

// A variable holding `t` (not a parameter).
VariablePtr constant_variable(const Tensor& t);
Tensor int_tensor(const std::vector<int64_t>& v, Shape shape);
// Axes from a constant input (opset 13+) or an attribute (before).
std::vector<int64_t> axes_of(const Op& op, int input);
// A possibly negative axis of a rank-ndim input, in [0, ndim).
int64_t norm_axis(const Op& op, int64_t a, size_t ndim);
// Symmetric pads (begin == end) as NNabla's per-axis pad.
std::vector<int64_t> symmetric_pads(const Op& op, size_t k);
// The broadcast shape of a and b; fails the node when they do not broadcast.
Shape broadcast_shape(const Op& op, const Shape& a, const Shape& b);
// The converter of a one-input function.
Rule unary(VariablePtr (*fn)(const VariablePtr&));
// y = x (a constant stays one).
void alias(const Op& op);

// ---- the converter table ----

// ONNX operator type -> its converter: the parts below together.
const std::map<std::string, Rule>& rules();
// Activations, arithmetic, comparisons (onnx_import_elementwise.cpp).
void add_elementwise_rules(std::map<std::string, Rule>& t);
// Convolution, matmul, pooling, normalization, softmax, resize
// (onnx_import_nn.cpp).
void add_nn_rules(std::map<std::string, Rule>& t);
// Shapes, constants, indexing, reductions (onnx_import_array.cpp).
void add_array_rules(std::map<std::string, Rule>& t);
// LSTM, GRU, RNN (onnx_import_recurrent.cpp).
void add_recurrent_rules(std::map<std::string, Rule>& t);

}  // namespace mg::onnx_import
