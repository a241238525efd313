// Functions that rearrange arrays: Split, Stack, Broadcast, Pad and Flip.
#pragma once

#include <climits>
#include <mixgraph/graph/function.hpp>
#include <string>
#include <vector>

namespace mg {

struct SplitOptions {
  /// The axis to split along (negative counts from the end).
  int axis = 0;
  /// How many outputs: x.shape[axis]. The builder fills it in from x, since
  /// a function must know its output count before it sees its inputs.
  int num_outputs = 1;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(SplitOptions& o, V&& v) {
  v("axis", o.axis);
  v("num_outputs", o.num_outputs);
}

namespace decl {
/// Split's declaration.
inline constexpr FunctionDeclOf<SplitOptions> Split{
    {"Split",
     "split",
     {Port{"x", Port::any}},
     {Port{"y", Port::any}},
     Precision::reduced,
     /*variadic=*/false,
     /*variadic_outputs=*/true}};
}  // namespace decl

/// y_k = x[..., k, ...] for each k along axis: x.shape[axis] outputs, each
/// with the axis removed (NNabla's Split).
class Split : public Function {
 public:
  explicit Split(const SplitOptions& opts) : opts_(opts) {}
  int num_outputs() const override { return opts_.num_outputs; }
  bool grad_depends_input_data(int) const override { return false; }
  const SplitOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const SplitOptions opts_;
  int64_t outer_ = 1, inner_ = 1;  // sizes before and after the axis
};

struct StackOptions {
  /// Where the new axis goes in y (negative counts from the end of y).
  int axis = 0;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(StackOptions& o, V&& v) {
  v("axis", o.axis);
}

namespace decl {
/// Stack's declaration.
inline constexpr FunctionDeclOf<StackOptions> Stack{{"Stack",
                                                     "stack",
                                                     {Port{"x", Port::any}},
                                                     {Port{"y", Port::any}},
                                                     Precision::reduced,
                                                     /*variadic=*/true}};
}  // namespace decl

/// y = the inputs (all of one shape) joined along a new axis.
class Stack : public Function {
 public:
  explicit Stack(const StackOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int) const override { return false; }
  const StackOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const StackOptions opts_;
  int64_t outer_ = 1, inner_ = 1;
};

struct BroadcastOptions {
  /// The shape to broadcast to.
  Shape shape;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(BroadcastOptions& o, V&& v) {
  v("shape", o.shape);
}

namespace decl {
/// Broadcast's declaration.
inline constexpr FunctionDeclOf<BroadcastOptions> Broadcast{
    {"Broadcast", "broadcast", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x repeated along its size-1 axes to `shape` (x aligned on the right,
/// as in NumPy); the grad sums over the repeated axes in fp32.
class Broadcast : public Function {
 public:
  explicit Broadcast(const BroadcastOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int) const override { return false; }
  const BroadcastOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const BroadcastOptions opts_;
  std::vector<int> axes_;  // axes of y that x is repeated along
};

struct PadOptions {
  /// (before, after) pairs for the last pad_width.size() / 2 axes.
  std::vector<int> pad_width;
  /// "constant", "reflect" (mirror without repeating the edge, as NumPy)
  /// or "repeat" (repeat the edge value).
  std::string mode = "constant";
  float constant_value = 0.0f;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(PadOptions& o, V&& v) {
  v("pad_width", o.pad_width);
  v("mode", o.mode);
  v("constant_value", o.constant_value);
}

namespace decl {
/// Pad's declaration.
inline constexpr FunctionDeclOf<PadOptions> Pad{
    {"Pad", "pad", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x padded on the last axes.
class Pad : public Function {
 public:
  explicit Pad(const PadOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int) const override { return false; }
  const PadOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const PadOptions opts_;
  /// Per axis of y, the index of x it reads, or -1 for the constant.
  std::vector<std::vector<int64_t>> source_;
};

struct FlipOptions {
  /// The axes to reverse; NNabla's default is the last.
  std::vector<int> axes = {-1};
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(FlipOptions& o, V&& v) {
  v("axes", o.axes);
}

namespace decl {
/// Flip's declaration.
inline constexpr FunctionDeclOf<FlipOptions> Flip{
    {"Flip", "flip", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x with the order of its elements reversed along axes.
class Flip : public Function {
 public:
  explicit Flip(const FlipOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int) const override { return false; }
  const FlipOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const FlipOptions opts_;
  std::vector<bool> flipped_;  // per axis of x
};

namespace functions {
/// The slices of x along `axis`, that axis removed: x.shape[axis] outputs.
std::vector<VariablePtr> split(const VariablePtr& x, int axis = 0);
/// The xs (of one shape) joined along a new axis.
VariablePtr stack(std::vector<VariablePtr> xs, int axis = 0);
/// x repeated to `shape` along its size-1 (or missing leading) axes.
VariablePtr broadcast(const VariablePtr& x, Shape shape);
/// x padded by (before, after) pairs on its last pad_width.size() / 2 axes;
/// mode "constant", "reflect" or "repeat".
VariablePtr pad(const VariablePtr& x, std::vector<int> pad_width,
                const std::string& mode = "constant",
                float constant_value = 0.0f);
/// x reversed along `axes` (the last by default).
VariablePtr flip(const VariablePtr& x, std::vector<int> axes = {-1});
}  // namespace functions

}  // namespace mg
