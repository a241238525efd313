// Interpolate: resizing the last axes of an array by nearest-neighbour or
// (multi)linear interpolation, as NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct InterpolateOptions {
  /// The new sizes of the resized axes: the last output_size.size() axes,
  /// or those before the last with channel_last.
  std::vector<int64_t> output_size;
  /// "nearest" or "linear".
  std::string mode = "linear";
  /// Corner pixels of x and y aligned: y's first and last positions sample
  /// x's first and last exactly. The default is NNabla's function default
  /// (what a file that omits the argument means); NNabla's Python wrapper
  /// passes false for "nearest".
  bool align_corners = true;
  /// Pixel centres: the source of output j is (j + 0.5) in / out - 0.5
  /// (clamped at 0); excludes align_corners.
  bool half_pixel = false;
  /// NNabla's old nearest rule, kept for files that use it: source (j +
  /// 0.5) in / out, whatever align_corners and half_pixel say.
  bool half_pixel_for_nn = false;
  /// Whether the last axis holds the channels (NHWC), left as it is.
  bool channel_last = false;

  MG_FIELDS(output_size, mode, align_corners, half_pixel, half_pixel_for_nn,
            channel_last);
};

/// One resized axis: output j along it is (1 - w[j]) x[i0[j]] + w[j]
/// x[i1[j]] (w = 0 and i1 = i0 for nearest). Linear interpolation of
/// several axes is the product of their weights, so the axes are resized
/// one after another.
///
/// The grad reads the same weights from the sources' side: the (output,
/// weight) pairs that read source a are pair_j[p], pair_w[p] for p in
/// [ptr[a], ptr[a + 1]), j ascending, i0's pair before i1's (one pair of
/// weight 1 where w[j] is 0). Summed in that order from 0 they give the
/// bits of adding each output's two shares to its sources in turn, with
/// no read-modify-write of a source an output.
struct ResizedAxis {
  int axis = 0;
  int64_t in = 0, out = 0;
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
  std::vector<int64_t> ptr, pair_j;
  std::vector<float> pair_w;
};

namespace decl {
/// Interpolate's declaration.
inline constexpr FunctionDeclOf<InterpolateOptions> Interpolate{
    {"Interpolate", "interpolate", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x resized on its last axes. The sources and weights are NNabla's
/// (the same float arithmetic picks the same neighbours); the sums are in
/// fp32 under half and bfloat16, and the grad adds dy back to the sources
/// with the same weights in fp32.
class Interpolate : public FunctionWith<InterpolateOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }
  /// The resized axes, in the order the forward pass resizes them.
  const std::vector<ResizedAxis>& axes() const { return axes_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<ResizedAxis> axes_;
};

namespace functions {
/// x resized to output_size on its last axes (before the last with
/// channel_last) by "nearest" or "linear" interpolation.
VariablePtr interpolate(const VariablePtr& x, std::vector<int64_t> output_size,
                        const std::string& mode = "linear",
                        bool align_corners = true, bool half_pixel = false,
                        bool half_pixel_for_nn = false,
                        bool channel_last = false);
}  // namespace functions

}  // namespace mg
