// Functions that move data without arithmetic: Reshape, Transpose,
// Concatenate and Slice.
#pragma once

#include <climits>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ReshapeOptions {
  /// The new shape; one entry may be -1, inferred from the size.
  Shape shape;
  /// NNabla's flag, accepted for compatibility; the data is always copied
  /// (see Reshape).
  bool inplace = true;

  MG_FIELDS(shape, inplace);
};

namespace decl {
/// Reshape's declaration.
inline constexpr FunctionDeclOf<ReshapeOptions> Reshape{
    {"Reshape", "reshape", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x with another shape of the same size. The data is copied, except
/// where the engine lets y take over the buffer of an x freed right after
/// (under clearing: Function::inplace_data), and dx the buffer of dy
/// (inplace_grad): then nothing moves. y never shares a buffer x keeps,
/// which clear_buffer would free together with x's.
class Reshape : public FunctionWith<ReshapeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }
  bool inplace_data(int) const override { return true; }
  bool inplace_grad(int) const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct TransposeOptions {
  /// A permutation of x's axes: y's axis i is x's axis axes[i].
  std::vector<int> axes;

  MG_FIELDS(axes);
};

namespace decl {
/// Transpose's declaration.
inline constexpr FunctionDeclOf<TransposeOptions> Transpose{
    {"Transpose", "transpose", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x with its axes permuted.
class Transpose : public FunctionWith<TransposeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<int> perm_;  // axes with negative entries normalised
};

struct ConcatenateOptions {
  /// The axis to join along; -1 is the last, NNabla's default.
  int axis = -1;

  MG_FIELDS(axis);
};

namespace decl {
/// Concatenate's declaration.
inline constexpr FunctionDeclOf<ConcatenateOptions> Concatenate{
    {"Concatenate",
     "concatenate",
     {Port{"x", Port::any}},
     {Port{"y", Port::any}},
     Precision::reduced,
     /*variadic=*/true}};
}  // namespace decl

/// y = the inputs joined along axis; they must match on every other axis.
class Concatenate : public FunctionWith<ConcatenateOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t outer_ = 1, inner_ = 1;  // sizes before and after the axis
};

struct SliceOptions {
  /// Per axis, Python style: negative start and stop count from the end,
  /// a stop past the end is clipped, and step may be negative (then stop
  /// -size-1 reaches index 0). Shorter vectors apply to the last axes, as in
  /// NNabla; an empty step means 1 on every sliced axis.
  std::vector<int64_t> start, stop, step;

  MG_FIELDS(start, stop, step);
};

namespace decl {
/// Slice's declaration.
inline constexpr FunctionDeclOf<SliceOptions> Slice{
    {"Slice", "slice", {Port{"x", Port::any}}, {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x[start:stop:step] on every axis.
class Slice : public FunctionWith<SliceOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<int64_t> start_, step_;  // resolved, one per axis of x
};

namespace functions {
/// x with `shape` (one -1 is inferred). The data is copied.
VariablePtr reshape(const VariablePtr& x, Shape shape, bool inplace = true);
/// x with its axes permuted: y.shape[i] = x.shape[axes[i]].
VariablePtr transpose(const VariablePtr& x, std::vector<int> axes);
/// The xs joined along `axis` (the last by default).
VariablePtr concatenate(std::vector<VariablePtr> xs, int axis = -1);
/// x[start:stop:step] per axis (see SliceOptions).
VariablePtr slice(const VariablePtr& x, std::vector<int64_t> start,
                  std::vector<int64_t> stop, std::vector<int64_t> step = {});
}  // namespace functions

}  // namespace mg
