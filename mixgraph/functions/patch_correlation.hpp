// PatchCorrelation: FlowNetC's correlation of patches of two images at
// shifted positions, as NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct PatchCorrelationOptions {
  /// (height, width); one value stands for both.
  std::vector<int64_t> patch = {1, 1};
  /// The largest vertical and horizontal displacement of x2's patch.
  std::vector<int64_t> shift = {0, 0};
  /// Increments of the patch position and of the shift.
  std::vector<int64_t> patch_step = {1, 1};
  std::vector<int64_t> shift_step = {1, 1};
  /// Zeros added (top, bottom, left, right); (vertical, horizontal) or one
  /// value stand for those.
  std::vector<int64_t> padding = {0, 0, 0, 0};

  MG_FIELDS(patch, shift, patch_step, shift_step, padding);
};

namespace decl {
/// PatchCorrelation's declaration.
inline constexpr FunctionDeclOf<PatchCorrelationOptions> PatchCorrelation{
    {"PatchCorrelation",
     "patch_correlation",
     {Port{"x1"}, Port{"x2"}},
     {Port{"y"}}}};
}  // namespace decl

/// NNabla's function on channel-last images: x1, x2 (N, H, W, C) ->
/// y (N, Ho, Wo, Cy, Cx), y[n, i, j, sy, sx] = sum over the patch and C of
/// x1[n, y + ky, x + kx, c] x2[n, y + ky + dy, x + kx + dx, c] with
/// y = i patch_step_v - top, dy = sy shift_step_v - shift_v (likewise
/// horizontally), positions outside either image adding nothing. Ho = (H +
/// top + bottom - patch_v) / patch_step_v + 1, Cy = 2 shift_v / shift_step_v
/// + 1. Sums in fp32.
class PatchCorrelation : public FunctionWith<PatchCorrelationOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The options expanded: patch, shift, patch_step, shift_step as (v, h),
  /// padding as (top, bottom, left, right).
  int64_t patch_[2], shift_[2], pstep_[2], sstep_[2], pad_[4];
};

namespace functions {
/// NNabla's F.patch_correlation: x1, x2 (N, C, H, W) -> (N, Cy, Cx, Ho, Wo)
/// (transposed around PatchCorrelation, as NNabla's Python function does),
/// or with channel_last (N, H, W, C) -> (N, Ho, Wo, Cy, Cx), the function
/// itself.
VariablePtr patch_correlation(const VariablePtr& x1, const VariablePtr& x2,
                              const PatchCorrelationOptions& opts = {},
                              bool channel_last = false);
}  // namespace functions

}  // namespace mg
