// NNabla's "Geometric Neural Network Layers": AffineGrid (the sampling grid
// of an affine transform), WarpByGrid (sampling an image at a grid, the
// spatial transformer's sampler) and WarpByFlow (sampling an image at
// per-pixel offsets, as optical-flow networks do).
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct AffineGridOptions {
  /// The grid's size: (H, W) for 2-D, (D, H, W) for 3-D.
  std::vector<int64_t> size;
  /// True: the target grid's corner pixels sit at -1 and 1; false: the
  /// pixel centres, the grid scaled by (S - 1) / S.
  bool align_corners = false;

  MG_FIELDS(size, align_corners);
};

struct WarpByGridOptions {
  /// "linear" or "nearest".
  std::string mode = "linear";
  /// Outside [-1, 1]: "zero" (0), "repeat" (the border value) or "reflect"
  /// (mirrored at the borders).
  std::string padding_mode = "zero";
  /// Whether -1 and 1 are the corner pixels' centres (true) or their outer
  /// edges (false).
  bool align_corners = false;
  /// Whether x's last axis holds the channels (NHWC; y likewise).
  bool channel_last = false;

  MG_FIELDS(mode, padding_mode, align_corners, channel_last);
};

struct WarpByFlowOptions {};

namespace decl {
/// AffineGrid's declaration.
inline constexpr FunctionDeclOf<AffineGridOptions> AffineGrid{
    {"AffineGrid", "affine_grid", {Port{"theta"}}, {Port{"grid"}}}};
/// WarpByGrid's declaration.
inline constexpr FunctionDeclOf<WarpByGridOptions> WarpByGrid{
    {"WarpByGrid", "warp_by_grid", {Port{"x"}, Port{"grid"}}, {Port{"y"}}}};
/// WarpByFlow's declaration.
inline constexpr FunctionDeclOf<WarpByFlowOptions> WarpByFlow{
    {"WarpByFlow",
     "warp_by_flow",
     {Port{"data"}, Port{"flow"}},
     {Port{"warped_image"}}}};
}  // namespace decl

/// grid (B, H, W, 2) or (B, D, H, W, 3) = theta (B, 2, 3) or (B, 3, 4)
/// applied to the normalized target grid (x, y[, z], 1) in [-1, 1], in fp32.
class AffineGrid : public FunctionWith<AffineGridOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// y (B, C, Ho, Wo) = x (B, C, Hi, Wi) sampled at grid (B, Ho, Wo, 2) of
/// normalized (x, y) in [-1, 1] (and the 3-D forms), by bilinear
/// (trilinear) or nearest interpolation, in fp32.
class WarpByGrid : public FunctionWith<WarpByGridOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// warped (N, C, H, W) = data sampled bilinearly at (x + flow[:, 0], y +
/// flow[:, 1]), positions outside clamped to the border, in fp32.
class WarpByFlow : public Function {
 public:
  explicit WarpByFlow(const WarpByFlowOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// The source grid of the affine transforms theta over a target grid of
/// `size` ((H, W) or (D, H, W)), for F::warp_by_grid.
VariablePtr affine_grid(const VariablePtr& theta, std::vector<int64_t> size,
                        bool align_corners = false);
/// x sampled at grid's normalized positions.
VariablePtr warp_by_grid(const VariablePtr& x, const VariablePtr& grid,
                         const std::string& mode = "linear",
                         const std::string& padding_mode = "zero",
                         bool align_corners = false, bool channel_last = false);
/// data sampled at each pixel's position plus its flow vector.
VariablePtr warp_by_flow(const VariablePtr& data, const VariablePtr& flow);
}  // namespace functions

}  // namespace mg
