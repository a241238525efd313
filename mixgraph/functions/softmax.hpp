// Softmax and LogSoftmax along one axis, and the axis split that the
// losses over classes share with them.
#pragma once

#include <string>

#include <mixgraph/graph/function.hpp>

namespace mg {

/// A shape seen as (outer, size, inner) around one axis: element (o, a, j)
/// is at (o * size + a) * inner + j.
struct AxisSplit {
  int axis = 0;
  int64_t outer = 1, size = 1, inner = 1;
};

/// Splits x's shape at `axis` (negative counts from the end). Throws
/// std::invalid_argument "<tag>axis 2 is out of range for x with shape
/// (4, 10)" otherwise.
AxisSplit split_at_axis(const Shape& x, int axis, const std::string& tag);

struct SoftmaxOptions {
  /// The axis to normalise along; negative counts from the end (NNabla's
  /// default is the last axis).
  int axis = -1;

  MG_FIELDS(axis);
};

namespace decl {
/// Softmax's declaration.
inline constexpr FunctionDeclOf<SoftmaxOptions> Softmax{
    {"Softmax", "softmax", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = exp(x - max) / sum(exp(x - max)) along the axis; sums in fp32.
class Softmax : public FunctionWith<SoftmaxOptions> {
 public:
  using FunctionWith::FunctionWith;
  // dx = y (dy - sum(dy y)): backward reads y, not x.
  bool grad_depends_input_data(int) const override { return false; }
  bool grad_depends_output_data(int) const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  AxisSplit split_;
};

namespace decl {
/// LogSoftmax's declaration.
inline constexpr FunctionDeclOf<SoftmaxOptions> LogSoftmax{
    {"LogSoftmax", "log_softmax", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x - max - log(sum(exp(x - max))) along the axis; sums in fp32.
class LogSoftmax : public Softmax {
 public:
  using Softmax::Softmax;
};

namespace functions {
/// Softmax along `axis` (default: the last).
VariablePtr softmax(const VariablePtr& x, int axis = -1);
/// Log of the softmax along `axis`, computed without forming the softmax.
VariablePtr log_softmax(const VariablePtr& x, int axis = -1);
}  // namespace functions

}  // namespace mg
