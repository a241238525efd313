#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/detection.hpp>

#include <stdexcept>

namespace mg {

void RoiAlign::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& b = in[1]->shape();
  if (x.size() != 4) {
    throw std::invalid_argument(msg(tag(), "input with shape ", shape_str(x),
                                    " must be 4-D (N, C, H, W), or (N, H, W, "
                                    "C) with channel_last"));
  }
  if (b.size() != 2 || b[1] != 5) {
    throw std::invalid_argument(
        msg(tag(), "boxes with shape ", shape_str(b),
            " must be (K, 5): rows of (batch index, x1, y1, x2, y2)"));
  }
  const auto& os = opts_.output_size;
  if (os.size() != 2 || os[0] <= 0 || os[1] <= 0) {
    throw std::invalid_argument(msg(tag(), "output_size ", shape_str(os),
                                    " must be two positive sizes (height, "
                                    "width)"));
  }
  if (opts_.spatial_scale.size() != 2) {
    throw std::invalid_argument(
        msg(tag(), "spatial_scale must have 2 values (y, x), got ",
            opts_.spatial_scale.size()));
  }
  const int64_t c = opts_.channel_last ? x[3] : x[1];
  out[0]->reshape(opts_.channel_last ? Shape{b[0], os[0], os[1], c}
                                     : Shape{b[0], c, os[0], os[1]});
}

void NmsDetection2d::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x.size() != 3 || x[2] <= 5) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x),
            " must be (B, N, 5 + C) with at least one class: rows of (x, y, "
            "w, h, objectness, class probabilities...)"));
  }
  out[0]->reshape(x);
}

namespace functions {

VariablePtr roi_align(const VariablePtr& input, const VariablePtr& boxes,
                      const RoiAlignOptions& opts) {
  return apply_function1(decl::RoiAlign, opts, {input, boxes});
}

VariablePtr roi_align(const VariablePtr& input, const VariablePtr& boxes,
                      std::vector<int64_t> output_size,
                      std::vector<float> spatial_scale, int64_t sampling_ratio,
                      bool channel_last) {
  return roi_align(
      input, boxes,
      RoiAlignOptions{std::move(output_size), std::move(spatial_scale),
                      sampling_ratio, channel_last});
}

VariablePtr nms_detection2d(const VariablePtr& x,
                            const NmsDetection2dOptions& opts) {
  return apply_function1(decl::NmsDetection2d, opts, {x});
}

}  // namespace functions

}  // namespace mg
