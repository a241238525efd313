// ONNXResize: resizing an N-D array as ONNX's Resize does (opset 11-13
// attributes), as NNabla's, for networks read from ONNX files.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ONNXResizeOptions {
  /// tf_crop_and_resize's region: starts of every axis, then ends, in the
  /// input's normalized coordinates.
  std::vector<float> roi;
  /// One scale per axis (or sizes instead).
  std::vector<float> scales;
  /// One output size per axis (or scales instead).
  std::vector<int64_t> sizes;
  /// "nearest", "linear" or "cubic".
  std::string mode = "nearest";
  /// "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
  /// "tf_half_pixel_for_nn" or "tf_crop_and_resize".
  std::string coordinate_transformation_mode = "half_pixel";
  /// The cubic kernel's a.
  float cubic_coeff_a = -0.75f;
  /// Cubic: taps outside the input get weight 0 (the rest renormalized).
  int64_t exclude_outside = 0;
  /// tf_crop_and_resize: the value of outputs sampled outside the input.
  float extrapolation_value = 0.0f;
  /// Nearest: "round_prefer_floor", "round_prefer_ceil", "floor", "ceil".
  std::string nearest_mode = "round_prefer_floor";

  MG_FIELDS(roi, scales, sizes, mode, coordinate_transformation_mode,
            cubic_coeff_a, exclude_outside, extrapolation_value, nearest_mode);
};

/// One resized axis: output j along it is sum_t weight[j * taps + t] *
/// x[index[j * taps + t]] (1 tap for nearest, 2 linear, 4 cubic); outside[j]
/// marks tf_crop_and_resize's outputs sampled outside the input.
struct ResizeTaps {
  int axis = 0;
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> outside;
};

namespace decl {
/// ONNXResize's declaration.
inline constexpr FunctionDeclOf<ONNXResizeOptions> ONNXResize{
    {"ONNXResize", "onnx_resize", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x resized by ONNX's rules, one axis at a time from the last (the
/// order of NNabla's sums), in fp32; the grad (NNabla has none) adds dy back
/// to the taps with their weights.
class ONNXResize : public FunctionWith<ONNXResizeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }
  /// The resized axes, last first.
  const std::vector<ResizeTaps>& axes() const { return axes_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<ResizeTaps> axes_;
};

namespace functions {
/// x resized by ONNX Resize's rules to `sizes` (or by `scales`), one value
/// per axis.
VariablePtr onnx_resize(const VariablePtr& x, const ONNXResizeOptions& opts);
}  // namespace functions

}  // namespace mg
