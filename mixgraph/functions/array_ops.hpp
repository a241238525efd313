// Functions that rearrange arrays: Split, Stack, Broadcast, Pad, Tile,
// Shift, Flip and Trilu.
#pragma once

#include <climits>
#include <mixgraph/graph/function.hpp>
#include <string>
#include <vector>

namespace mg {

struct SplitOptions {
  /// The axis to split along (negative counts from the end).
  int axis = 0;
  /// How many outputs: x.shape[axis]. Ours, not NNabla's: 0 (the default)
  /// takes it from x when the function is linked to its input; a count
  /// given must equal it.
  int num_outputs = 0;

  MG_FIELDS(axis, num_outputs);
};

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
class Split : public FunctionWith<SplitOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override { return opts_.num_outputs; }
  int num_outputs_for(const Variables& inputs) const override;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t outer_ = 1, inner_ = 1;  // sizes before and after the axis
};

struct StackOptions {
  /// Where the new axis goes in y (negative counts from the end of y).
  int axis = 0;

  MG_FIELDS(axis);
};

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
class Stack : public FunctionWith<StackOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t outer_ = 1, inner_ = 1;
};

struct BroadcastOptions {
  /// The shape to broadcast to.
  Shape shape;

  MG_FIELDS(shape);
};

namespace decl {
/// Broadcast's declaration.
inline constexpr FunctionDeclOf<BroadcastOptions> Broadcast{
    {"Broadcast", "broadcast", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x repeated along its size-1 axes to `shape` (x aligned on the right,
/// as in NumPy); the grad sums over the repeated axes in fp32.
class Broadcast : public FunctionWith<BroadcastOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<int> axes_;  // axes of y that x is repeated along
};

/// The functions whose every output element is x at one source index per
/// axis (Pad, Tile, Shift): y[j_0, ..., j_n] = x[source_0[j_0], ...,
/// source_n[j_n]], or the fill value where a source is -1. One CPU kernel
/// moves them; the grad adds dy back to the sources in fp32.
class AxisGather : public Function {
 public:
  bool grad_depends_input_data(int) const override { return false; }
  /// The value written where the source is -1.
  virtual float fill_value() const { return 0.0f; }
  /// x's shape as the sources index it: with leading 1s to y's rank.
  const Shape& x_view() const { return x_view_; }
  const std::vector<std::vector<int64_t>>& source() const { return source_; }

 protected:
  /// Per axis of y, the index along that axis of x_view_ it reads, or -1.
  std::vector<std::vector<int64_t>> source_;
  Shape x_view_;
};

struct PadOptions {
  /// (before, after) pairs for the last pad_width.size() / 2 axes.
  std::vector<int> pad_width;
  /// "constant", "reflect" (mirror without repeating the edge, as NumPy)
  /// or "repeat" (repeat the edge value).
  std::string mode = "constant";
  float constant_value = 0.0f;

  MG_FIELDS(pad_width, mode, constant_value);
};

namespace decl {
/// Pad's declaration.
inline constexpr FunctionDeclOf<PadOptions> Pad{
    {"Pad", "pad", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x padded on the last axes.
class Pad : public FunctionWith<PadOptions, AxisGather> {
 public:
  using FunctionWith::FunctionWith;
  float fill_value() const override { return opts_.constant_value; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct TileOptions {
  /// Repetitions per axis, aligned on the right; more entries than x has
  /// axes add leading axes (NumPy's tile).
  std::vector<int> reps;

  MG_FIELDS(reps);
};

namespace decl {
/// Tile's declaration.
inline constexpr FunctionDeclOf<TileOptions> Tile{
    {"Tile", "tile", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x repeated reps[a] times along each axis a (NNabla's Tile); the grad
/// sums the copies in fp32.
class Tile : public FunctionWith<TileOptions, AxisGather> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct ShiftOptions {
  /// The shift of each of the last shifts.size() axes: y[i] = x[i - s].
  std::vector<int> shifts;
  /// What fills the vacated places: "nearest" (the edge value) or
  /// "reflect" (x mirrored at its edges, the edge repeated: NNabla's, NumPy's
  /// 'symmetric').
  std::string border_mode = "nearest";

  MG_FIELDS(shifts, border_mode);
};

namespace decl {
/// Shift's declaration.
inline constexpr FunctionDeclOf<ShiftOptions> Shift{
    {"Shift", "shift", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x shifted along its last axes, x's shape (NNabla's Shift).
class Shift : public FunctionWith<ShiftOptions, AxisGather> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct UnpoolingOptions {
  /// The factor per pooled axis: the last kernel.size() axes, or the ones
  /// before the last with channel_last.
  std::vector<int64_t> kernel;
  /// Whether the last axis holds the channels (NHWC), left as it is.
  bool channel_last = false;

  MG_FIELDS(kernel, channel_last);
};

namespace decl {
/// Unpooling's declaration.
inline constexpr FunctionDeclOf<UnpoolingOptions> Unpooling{
    {"Unpooling", "unpooling", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// Pooling's inverse as NNabla's: each element spread over a kernel-sized
/// block, y[k i + j] = x[i] per pooled axis (nearest-neighbour upsampling
/// by integer factors); the grad sums each block in fp32.
class Unpooling : public FunctionWith<UnpoolingOptions, AxisGather> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct FlipOptions {
  /// The axes to reverse; NNabla's default is the last.
  std::vector<int> axes = {-1};

  MG_FIELDS(axes);
};

namespace decl {
/// Flip's declaration.
inline constexpr FunctionDeclOf<FlipOptions> Flip{
    {"Flip", "flip", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x with the order of its elements reversed along axes.
class Flip : public FunctionWith<FlipOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<bool> flipped_;  // per axis of x
};

struct TriluOptions {
  /// The diagonal: 0 the main one, k > 0 above it, k < 0 below.
  int k = 0;
  /// Keep the upper triangle (j - i >= k), else the lower (j - i <= k).
  bool upper = true;

  MG_FIELDS(k, upper);
};

namespace decl {
/// Trilu's declaration.
inline constexpr FunctionDeclOf<TriluOptions> Trilu{
    {"Trilu", "trilu", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x on one triangle of its last two axes (row i, column j), 0
/// elsewhere (NNabla's Trilu; numpy.triu / tril); the grad is dy on the
/// same triangle.
class Trilu : public FunctionWith<TriluOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }
  /// Whether (i, j) is kept.
  bool keeps(int64_t i, int64_t j) const {
    return opts_.upper ? j - i >= opts_.k : j - i <= opts_.k;
  }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
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
/// x repeated reps[a] times along each axis (aligned on the right).
VariablePtr tile(const VariablePtr& x, std::vector<int> reps);
/// x shifted by `shifts` along its last axes; border "nearest" or
/// "reflect".
VariablePtr shift(const VariablePtr& x, std::vector<int> shifts,
                  const std::string& border_mode = "nearest");
/// x with each element spread over a kernel-sized block of its last
/// kernel.size() axes (before the last with channel_last).
VariablePtr unpooling(const VariablePtr& x, std::vector<int64_t> kernel,
                      bool channel_last = false);
/// x's upper (or lower) triangle from diagonal k on its last two axes.
VariablePtr trilu(const VariablePtr& x, int k = 0, bool upper = true);
}  // namespace functions

}  // namespace mg
