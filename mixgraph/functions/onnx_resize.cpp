#include <mixgraph/functions/onnx_resize.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

namespace {

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

// ONNX's (and NNabla's onnx_resize.cpp's) source coordinate of output j, in
// float as they compute it: x / scale, not x * (1 / scale), whose rounding
// can pick another nearest neighbour.
float source_of(const ONNXResizeOptions& o, float scale, int64_t j, int64_t out,
                int64_t in, float roi_start, float roi_end) {
  const std::string& m = o.coordinate_transformation_mode;
  // Scale 1 is the identity, except where a region is cropped (with roi
  // (0, 1) tf_crop_and_resize's rule gives the identity exactly).
  if (scale == 1.0f && m != "tf_crop_and_resize") return static_cast<float>(j);
  const float x = static_cast<float>(j);
  const float lo = static_cast<float>(out), li = static_cast<float>(in);
  if (m == "half_pixel") return (x + 0.5f) / scale - 0.5f;
  if (m == "pytorch_half_pixel") {
    return lo > 1.0f ? (x + 0.5f) / scale - 0.5f : 0.0f;
  }
  if (m == "align_corners") {
    return lo == 1.0f ? 0.0f : x * (li - 1.0f) / (lo - 1.0f);
  }
  if (m == "asymmetric") return x / scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5f) / scale;
  // tf_crop_and_resize
  return lo > 1.0f ? roi_start * (li - 1.0f) +
                         x * (roi_end - roi_start) * (li - 1.0f) / (lo - 1.0f)
                   : 0.5f * (roi_start + roi_end) * (li - 1.0f);
}

int64_t nearest_of(float f, const std::string& mode) {
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::round(f));
  if (mode == "floor") return static_cast<int64_t>(std::floor(f));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(f));
  // round_prefer_floor
  if (f == std::floor(f) + 0.5f) return static_cast<int64_t>(std::floor(f));
  return static_cast<int64_t>(std::round(f));
}

int64_t clamp(int64_t i, int64_t n) {
  return std::min(std::max<int64_t>(i, 0), n - 1);
}

// The cubic kernel's four weights at fraction l (NNabla's
// CubicInterpolation::compute_coeffs).
std::array<float, 4> cubic_weights(float f, int64_t in, float a,
                                   bool exclude_outside) {
  const auto near = [a](float x) {
    return (a + 2.0f) * x * x * x - (a + 3.0f) * x * x + 1.0f;
  };
  const auto far = [a](float x) {
    return a * x * x * x - 5.0f * a * x * x + 8.0f * a * x - 4.0f * a;
  };
  const float l = f - std::floor(f);
  std::array<float, 4> c{far(1.0f + l), near(l), near(1.0f - l), far(2.0f - l)};
  if (exclude_outside) {
    const int64_t i = static_cast<int64_t>(std::floor(f));
    float sum = 0.0f;
    for (int t = 0; t < 4; ++t) {
      const int64_t k = i - 1 + t;
      if (k < 0 || k >= in) c[t] = 0.0f;
      sum += c[t];
    }
    for (float& v : c) v /= sum;
  }
  return c;
}

}  // namespace

void ONNXResize::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const ONNXResizeOptions& o = opts_;
  if (!one_of(o.mode, {"nearest", "linear", "cubic"})) {
    throw std::invalid_argument(
        msg(tag(), "mode '", o.mode, "' is not one of nearest, linear, cubic"));
  }
  if (!one_of(o.coordinate_transformation_mode,
              {"half_pixel", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"})) {
    throw std::invalid_argument(
        msg(tag(), "coordinate_transformation_mode '",
            o.coordinate_transformation_mode,
            "' is not one of half_pixel, pytorch_half_pixel, align_corners, "
            "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize"));
  }
  if (!one_of(o.nearest_mode,
              {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})) {
    throw std::invalid_argument(
        msg(tag(), "nearest_mode '", o.nearest_mode,
            "' is not one of round_prefer_floor, round_prefer_ceil, floor, "
            "ceil"));
  }
  if (o.sizes.empty() == o.scales.empty()) {
    throw std::invalid_argument(msg(tag(), "exactly one of sizes ",
                                    shape_str(o.sizes), " and scales (",
                                    o.scales.size(), " values) must be given"));
  }
  const size_t given = o.sizes.empty() ? o.scales.size() : o.sizes.size();
  if (given != static_cast<size_t>(nd)) {
    throw std::invalid_argument(msg(tag(), o.sizes.empty() ? "scales" : "sizes",
                                    " has ", given, " values but x with shape ",
                                    shape_str(x), " has ", nd, " axes"));
  }
  Shape y(nd);
  std::vector<float> scale(nd);
  for (int a = 0; a < nd; ++a) {
    if (o.sizes.empty()) {
      scale[a] = o.scales[a];
      y[a] = static_cast<int64_t>(
          std::floor(static_cast<float>(x[a]) * o.scales[a]));
    } else {
      y[a] = o.sizes[a];
      scale[a] = static_cast<float>(y[a]) / static_cast<float>(x[a]);
    }
  }
  for (int a = 0; a < nd; ++a) {
    if (y[a] <= 0 || x[a] <= 0 || !(scale[a] > 0.0f)) {
      throw std::invalid_argument(
          msg(tag(), "x with shape ", shape_str(x), " resized to ",
              shape_str(y), " (axis ", a,
              "): every axis of x and of the output must be non-empty and "
              "every scale positive"));
    }
  }
  const bool crop = o.coordinate_transformation_mode == "tf_crop_and_resize";
  if (crop && o.roi.size() != static_cast<size_t>(2 * nd)) {
    throw std::invalid_argument(
        msg(tag(), "roi has ", o.roi.size(),
            " values but tf_crop_and_resize needs ", 2 * nd,
            " (starts then ends) for x with shape ", shape_str(x)));
  }
  // Leading axes with scale 1 (and, cropping, the whole region) are copied,
  // not resized.
  const auto copied = [&](int a) {
    return scale[a] == 1.0f &&
           (!crop || (o.roi[a] == 0.0f && o.roi[nd + a] == 1.0f));
  };
  int outer = 0;
  while (outer < nd && copied(outer)) ++outer;
  axes_.clear();
  const int taps = o.mode == "nearest" ? 1 : o.mode == "linear" ? 2 : 4;
  for (int a = nd - 1; a >= outer; --a) {
    ResizeTaps r;
    r.axis = a, r.in = x[a], r.out = y[a], r.taps = taps;
    r.index.resize(r.out * taps), r.weight.resize(r.out * taps);
    r.outside.assign(r.out, 0);
    for (int64_t j = 0; j < r.out; ++j) {
      const float f =
          source_of(o, scale[a], j, r.out, r.in, crop ? o.roi[a] : 0.0f,
                    crop ? o.roi[nd + a] : 0.0f);
      r.outside[j] =
          crop && (f < 0.0f || f > static_cast<float>(r.in - 1)) ? 1 : 0;
      int64_t* idx = r.index.data() + j * taps;
      float* w = r.weight.data() + j * taps;
      const int64_t i = static_cast<int64_t>(std::floor(f));
      if (taps == 1) {
        idx[0] = clamp(nearest_of(f, o.nearest_mode), r.in);
        w[0] = 1.0f;
      } else if (taps == 2) {
        idx[0] = clamp(i, r.in), idx[1] = clamp(i + 1, r.in);
        w[1] = f - static_cast<float>(idx[0]);
        w[0] = 1.0f - w[1];
      } else {
        const auto c =
            cubic_weights(f, r.in, o.cubic_coeff_a, o.exclude_outside != 0);
        for (int t = 0; t < 4; ++t) {
          idx[t] = clamp(i - 1 + t, r.in);
          w[t] = c[t];
        }
      }
    }
    axes_.push_back(std::move(r));
  }
  out[0]->reshape(y);
}

namespace functions {

VariablePtr onnx_resize(const VariablePtr& x, const ONNXResizeOptions& opts) {
  return apply_function1(decl::ONNXResize, opts, {x});
}

}  // namespace functions

}  // namespace mg
