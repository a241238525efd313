// Detection: RoiAlign (features of boxes by bilinear sampling) and
// NmsDetection2d (YOLO-style suppression of a detector's raw output), as
// NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct RoiAlignOptions {
  /// (height, width) of each box's output.
  std::vector<int64_t> output_size;
  /// (y, x) factors from box to input coordinates.
  std::vector<float> spatial_scale = {1.0f, 1.0f};
  /// Sampling points per output cell and axis; <= 0: ceil(cell size).
  int64_t sampling_ratio = -1;
  /// input (N, H, W, C) and y (K, oh, ow, C) when true.
  bool channel_last = false;

  MG_FIELDS(output_size, spatial_scale, sampling_ratio, channel_last);
};

namespace decl {
/// RoiAlign's declaration: boxes are read in fp32 (pixel coordinates need
/// its precision: half spaces them 0.5 apart past 1024) and get no grad.
inline constexpr FunctionDeclOf<RoiAlignOptions> RoiAlign{
    {"RoiAlign",
     "roi_align",
     {Port{"input"}, Port{"boxes", Port::float32, false}},
     {Port{"y"}}}};
}  // namespace decl

/// input (N, C, H, W), boxes (K, 5) rows (batch index, x1, y1, x2, y2):
/// y (K, C, oh, ow), each cell the mean of grid_y x grid_x bilinear samples
/// of its box's sample (NNabla's sampling: box corners scaled and shifted by
/// -0.5, samples at cell fractions, those beyond [-1, size] skipped, the
/// rest clamped into the map). Samples summed in fp32. Grad to input only.
class RoiAlign : public FunctionWith<RoiAlignOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct NmsDetection2dOptions {
  /// Objectness and scores below it become 0.
  float thresh = 0.5f;
  /// IoU above which the lower-scored box is suppressed.
  float nms = 0.45f;
  /// Suppress per class (by objectness x probability) or by objectness.
  bool nms_per_class = true;

  MG_FIELDS(thresh, nms, nms_per_class);
};

namespace decl {
/// NmsDetection2d's declaration: no grad (NNabla's backward is empty).
inline constexpr FunctionDeclOf<NmsDetection2dOptions> NmsDetection2d{
    {"NmsDetection2d",
     "nms_detection2d",
     {Port{"x", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// x (B, N, 5 + C) rows (x, y, w, h, objectness, p_1..p_C): y the same
/// rows with objectness below thresh zeroed, p_k replaced by objectness x
/// p_k (zeroed below thresh) and suppressed boxes' scores zeroed, as
/// NNabla's (per class: a box kept at a higher score zeroes a later box's
/// class score; by objectness: a box is zeroed, objectness and all scores,
/// when any box of higher objectness overlaps it). Ties keep the input
/// order (a stable sort; NNabla's std::sort leaves them open).
class NmsDetection2d : public FunctionWith<NmsDetection2dOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// The features of each box of `boxes` (K, 5), (K, C, oh, ow).
VariablePtr roi_align(const VariablePtr& input, const VariablePtr& boxes,
                      const RoiAlignOptions& opts);
/// roi_align with output_size and the other options at their defaults.
VariablePtr roi_align(const VariablePtr& input, const VariablePtr& boxes,
                      std::vector<int64_t> output_size,
                      std::vector<float> spatial_scale = {1.0f, 1.0f},
                      int64_t sampling_ratio = -1, bool channel_last = false);
/// Thresholding and non-maximum suppression of a detector's output.
VariablePtr nms_detection2d(const VariablePtr& x,
                            const NmsDetection2dOptions& opts = {});
}  // namespace functions

}  // namespace mg
