// ClipGradByValue and ClipGradByNorm: the identity in forward, with the
// grad clipped on its way back (NNabla's, for keeping a gradient from
// exploding through a whole graph).
#pragma once

#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ClipGradByValueOptions {};

namespace decl {
/// ClipGradByValue's declaration: min and max get no grad (NNabla's).
inline constexpr FunctionDeclOf<ClipGradByValueOptions> ClipGradByValue{
    {"ClipGradByValue",
     "clip_grad_by_value",
     {Port{"x"}, Port{"min", Port::floating, false},
      Port{"max", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y = x; dx = dy clipped elementwise to [min, max] (dy above max gives
/// max, below min gives min, NNabla's order of the tests). min and max have
/// x's shape (NNabla's rule: F::broadcast them first).
class ClipGradByValue : public Function {
 public:
  explicit ClipGradByValue(const ClipGradByValueOptions&) {}
  // Backward reads min and max, never x.
  bool grad_depends_input_data(int i) const override { return i != 0; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct ClipGradByNormOptions {
  /// The norm of the grad over `axes` after clipping.
  float clip_norm = 1.0f;
  /// The axes the norm runs over; empty: every axis (NNabla's default,
  /// range(x.ndim)). Negative axes count from the end.
  std::vector<int> axes = {};

  MG_FIELDS(clip_norm, axes);
};

namespace decl {
/// ClipGradByNorm's declaration.
inline constexpr FunctionDeclOf<ClipGradByNormOptions> ClipGradByNorm{
    {"ClipGradByNorm", "clip_grad_by_norm", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x; dx = clip_norm * dy / ||dy||_2, the norm over `axes` (kept, so
/// broadcast back over them). As NNabla's, every grad is rescaled to the
/// norm clip_norm, small ones too, and a zero dy gives 0 / 0 (NaN). The
/// sum of squares runs in fp32.
class ClipGradByNorm : public FunctionWith<ClipGradByNormOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Whether each axis of x is reduced.
  std::vector<bool> reduced_;
};

namespace functions {
/// The identity whose grad is clipped to [min, max] elementwise.
VariablePtr clip_grad_by_value(const VariablePtr& x, const VariablePtr& min,
                               const VariablePtr& max);
/// The identity whose grad is rescaled to the norm clip_norm over `axes`.
VariablePtr clip_grad_by_norm(const VariablePtr& x,
                              const ClipGradByNormOptions& opts = {});
}  // namespace functions

}  // namespace mg
