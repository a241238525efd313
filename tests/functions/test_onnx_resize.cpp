// ONNXResize: harness cases against a double reference (each output the
// weighted sum over the product of the axes' taps, with the source
// coordinates in float as ONNX Runtime and NNabla compute them), ONNX's own
// examples and the argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::onnx_resize_tests {
namespace {

// One axis's taps for output j: (index, weight) pairs, and whether
// tf_crop_and_resize samples outside.
struct AxisTaps {
  std::vector<std::pair<int64_t, double>> taps;
  bool outside = false;
};

AxisTaps axis_taps(const ONNXResizeOptions& o, int a, int nd, float scale,
                   int64_t in, int64_t out, int64_t j) {
  const std::string& m = o.coordinate_transformation_mode;
  const float x = static_cast<float>(j), lo = static_cast<float>(out),
              li = static_cast<float>(in);
  float f;
  if (scale == 1.0f && m != "tf_crop_and_resize") {
    f = x;
  } else if (m == "half_pixel") {
    f = (x + 0.5f) / scale - 0.5f;
  } else if (m == "pytorch_half_pixel") {
    f = lo > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
  } else if (m == "align_corners") {
    f = lo == 1 ? 0.0f : x * (li - 1) / (lo - 1);
  } else if (m == "asymmetric") {
    f = x / scale;
  } else if (m == "tf_half_pixel_for_nn") {
    f = (x + 0.5f) / scale;
  } else {
    const float s = o.roi[a], e = o.roi[nd + a];
    f = lo > 1 ? s * (li - 1) + x * (e - s) * (li - 1) / (lo - 1)
               : 0.5f * (s + e) * (li - 1);
  }
  AxisTaps t;
  t.outside = m == "tf_crop_and_resize" && (f < 0 || f > li - 1);
  const auto clampi = [&](int64_t i) {
    return std::min<int64_t>(std::max<int64_t>(i, 0), in - 1);
  };
  const int64_t fl = static_cast<int64_t>(std::floor(f));
  if (o.mode == "nearest") {
    int64_t i;
    if (o.nearest_mode == "floor") {
      i = fl;
    } else if (o.nearest_mode == "ceil") {
      i = static_cast<int64_t>(std::ceil(f));
    } else if (o.nearest_mode == "round_prefer_ceil") {
      i = static_cast<int64_t>(std::round(f));
    } else {
      i = f == fl + 0.5f ? fl : static_cast<int64_t>(std::round(f));
    }
    t.taps = {{clampi(i), 1.0}};
  } else if (o.mode == "linear") {
    const int64_t i0 = clampi(fl);
    const double w = static_cast<double>(f) - i0;
    t.taps = {{i0, 1 - w}, {clampi(fl + 1), w}};
  } else {
    const double a_ = o.cubic_coeff_a,
                 l = f - std::floor(static_cast<double>(f));
    const auto k = [&](double s) {
      s = std::abs(s);
      return s <= 1 ? (a_ + 2) * s * s * s - (a_ + 3) * s * s + 1
                    : a_ * s * s * s - 5 * a_ * s * s + 8 * a_ * s - 4 * a_;
    };
    double sum = 0;
    for (int q = 0; q < 4; ++q) {
      const int64_t i = fl - 1 + q;
      double w = k(l + 1 - q);
      if (o.exclude_outside && (i < 0 || i >= in)) w = 0;
      t.taps.push_back({clampi(i), w});
      sum += w;
    }
    if (o.exclude_outside) {
      for (auto& p : t.taps) p.second /= sum;
    }
  }
  return t;
}

Doubles resize_ref(const Doubles& x, const Shape& xs,
                   const ONNXResizeOptions& o) {
  const int nd = static_cast<int>(xs.size());
  Shape ys(nd);
  std::vector<float> sc(nd);
  for (int a = 0; a < nd; ++a) {
    if (o.sizes.empty()) {
      sc[a] = o.scales[a];
      ys[a] = static_cast<int64_t>(std::floor(xs[a] * o.scales[a]));
    } else {
      ys[a] = o.sizes[a];
      sc[a] = static_cast<float>(ys[a]) / static_cast<float>(xs[a]);
    }
  }
  Doubles y(static_cast<size_t>(shape_size(ys)));
  for (int64_t e = 0; e < static_cast<int64_t>(y.size()); ++e) {
    std::vector<AxisTaps> per(nd);
    int64_t r = e;
    bool outside = false;
    for (int a = nd - 1; a >= 0; --a) {
      per[a] = axis_taps(o, a, nd, sc[a], xs[a], ys[a], r % ys[a]);
      outside = outside || per[a].outside;
      r /= ys[a];
    }
    if (outside) {
      y[e] = o.extrapolation_value;
      continue;
    }
    // The sum over every combination of taps.
    std::vector<size_t> k(nd, 0);
    double sum = 0;
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (int a = 0; a < nd; ++a) {
        w *= per[a].taps[k[a]].second;
        off = off * xs[a] + per[a].taps[k[a]].first;
      }
      sum += w * x[off];
      int a = nd - 1;
      while (a >= 0 && ++k[a] == per[a].taps.size()) k[a--] = 0;
      if (a < 0) break;
    }
    y[e] = sum;
  }
  return y;
}

harness::Case resize_case(const std::string& label, Shape xs,
                          ONNXResizeOptions o) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::onnx_resize(in[0], o);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return resize_ref(in[0], xs, o);
            };
            return c;
          }};
}

ONNXResizeOptions by_scales(std::vector<float> scales, const std::string& mode,
                            const std::string& coord,
                            const std::string& nearest = "round_prefer_floor") {
  ONNXResizeOptions o;
  o.scales = std::move(scales);
  o.mode = mode;
  o.coordinate_transformation_mode = coord;
  o.nearest_mode = nearest;
  return o;
}

ONNXResizeOptions cubic_exclude() {
  auto o = by_scales({1, 1, 1.5f, 0.75f}, "cubic", "half_pixel");
  o.exclude_outside = 1;
  o.cubic_coeff_a = -0.5f;
  return o;
}

ONNXResizeOptions crop() {
  auto o = by_scales({1, 1, 1.5f, 2}, "linear", "tf_crop_and_resize");
  o.roi = {0, 0, 0.2f, -0.3f, 1, 1, 0.9f, 1.2f};
  o.extrapolation_value = 7.5f;
  return o;
}

// Cropped on axes that keep their size: the batch axis (nearest) and the
// last one, after a resized axis.
ONNXResizeOptions crop_same_size() {
  auto o = by_scales({1, 1, 1.5f, 1}, "nearest", "tf_crop_and_resize");
  o.roi = {0.5f, 0, 0.2f, -0.1f, 1, 1, 0.9f, 1.1f};
  o.extrapolation_value = -2.0f;
  return o;
}

ONNXResizeOptions sizes_linear() {
  ONNXResizeOptions o;
  o.sizes = {2, 3, 5, 3};
  o.mode = "linear";
  o.coordinate_transformation_mode = "align_corners";
  return o;
}

const bool kONNXResize = harness::add(
    decl::ONNXResize,
    {resize_case("nearest half_pixel x2 x1.5", {2, 2, 3, 4},
                 by_scales({1, 1, 2, 1.5f}, "nearest", "half_pixel")),
     resize_case(
         "nearest asymmetric floor down", {2, 2, 6, 5},
         by_scales({1, 1, 0.5f, 0.6f}, "nearest", "asymmetric", "floor")),
     resize_case(
         "nearest tf_half_pixel_for_nn ceil", {2, 3, 5},
         by_scales({1, 1, 1.8f}, "nearest", "tf_half_pixel_for_nn", "ceil")),
     resize_case("nearest align_corners round_prefer_ceil", {2, 1, 4, 3},
                 by_scales({1, 1, 1.75f, 2}, "nearest", "align_corners",
                           "round_prefer_ceil")),
     resize_case("linear pytorch_half_pixel", {2, 2, 3, 4},
                 by_scales({1, 1, 2, 0.5f}, "linear", "pytorch_half_pixel")),
     resize_case("linear 3-D asymmetric", {2, 2, 3, 2, 3},
                 by_scales({1, 1, 1.5f, 2, 1}, "linear", "asymmetric")),
     resize_case("cubic half_pixel", {2, 1, 4, 4},
                 by_scales({1, 1, 2, 1.5f}, "cubic", "half_pixel")),
     resize_case("cubic exclude_outside", {2, 2, 4, 4}, cubic_exclude()),
     resize_case("linear tf_crop_and_resize", {2, 2, 3, 4}, crop()),
     resize_case("nearest tf_crop_and_resize, scale 1 axes cropped",
                 {3, 2, 3, 4}, crop_same_size()),
     resize_case("linear by sizes", {2, 3, 4, 2}, sizes_linear())});

Doubles run(const Shape& s, const Doubles& v, const ONNXResizeOptions& o) {
  std::vector<float> f(v.begin(), v.end());
  auto y = F::onnx_resize(variable_from(s, f), o);
  y->forward();
  return to_doubles(y);
}

// The examples of ONNX's Resize documentation (onnx/backend/test/case/node/
// resize.py).
TEST(ONNXResize, OnnxExamples) {
  EXPECT_EQ(run({1, 1, 2, 2}, {1, 2, 3, 4},
                by_scales({1, 1, 2, 3}, "nearest", "half_pixel")),
            (Doubles{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                     3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  expect_near(run({1, 1, 2, 2}, {1, 2, 3, 4},
                  by_scales({1, 1, 2, 2}, "linear", "half_pixel")),
              {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3,
               3.25, 3.75, 4},
              1e-6, 0, "linear");
  Doubles x16(16);
  for (int i = 0; i < 16; ++i) x16[i] = i + 1;
  expect_near(run({1, 1, 4, 4}, x16,
                  by_scales({1, 1, 0.8f, 0.8f}, "cubic", "half_pixel")),
              {1.47119141, 2.78125, 4.08251953, 6.71142578, 8.02148438,
               9.32275391, 11.91650391, 13.2265625, 14.52783203},
              1e-5, 0, "cubic");
}

TEST(ONNXResize, TheGradAddsBackWithTheWeights) {
  // Linear x2 on one axis, half_pixel: outputs sample 0, 0.25, 0.75, 1
  // (clamped), so x0 collects 1 + 0.75 + 0.25 and x1 the rest.
  auto x = variable_from({1, 2}, {1, 2}, true);
  auto y = F::onnx_resize(x, by_scales({1, 2}, "linear", "half_pixel"));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 1.25, 1.75, 2}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{2, 2}));
}

TEST(ONNXResize, Errors) {
  auto x = make_variable({1, 2, 3, 4});
  const auto err = [&](ONNXResizeOptions o, const std::string& what) {
    expect_error([&] { F::onnx_resize(x, o); }, {"[onnx_resize] " + what});
  };
  err(by_scales({1, 1, 2, 2}, "area", "half_pixel"),
      "mode 'area' is not one of nearest, linear, cubic");
  err(by_scales({1, 1, 2, 2}, "linear", "corners"),
      "coordinate_transformation_mode 'corners' is not one of");
  err(by_scales({1, 1, 2, 2}, "nearest", "half_pixel", "round"),
      "nearest_mode 'round' is not one of");
  err(ONNXResizeOptions{}, "exactly one of sizes () and scales (0 values)");
  err(by_scales({2, 2}, "linear", "half_pixel"),
      "scales has 2 values but x with shape (1, 2, 3, 4) has 4 axes");
  err(by_scales({1, 1, 0.1f, 2}, "linear", "half_pixel"),
      "x with shape (1, 2, 3, 4) resized to (1, 2, 0, 8) (axis 2)");
  auto c = crop();
  c.roi = {0, 0, 0};
  err(c, "roi has 3 values but tf_crop_and_resize needs 8");
}

}  // namespace
}  // namespace mg::test::onnx_resize_tests
