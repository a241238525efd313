// RoiAlign and NmsDetection2d: against double references of NNabla's
// rules, NNabla's documented RoiAlign examples, a hand-worked suppression,
// errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::detection_tests {
namespace {

// NNabla's RoiAlign in double (input NCHW or NHWC).
Doubles roi_align_ref(const Doubles& x, const Shape& xs, const Doubles& boxes,
                      const RoiAlignOptions& o) {
  const bool cl = o.channel_last;
  const int64_t c = cl ? xs[3] : xs[1], h = cl ? xs[1] : xs[2],
                w = cl ? xs[2] : xs[3];
  const int64_t k = static_cast<int64_t>(boxes.size()) / 5;
  const int64_t oh = o.output_size[0], ow = o.output_size[1];
  Doubles y(k * c * oh * ow, 0.0);
  for (int64_t n = 0; n < k; ++n) {
    const double* b = boxes.data() + n * 5;
    const int64_t bi = static_cast<int64_t>(b[0]);
    const double x1 = b[1] * o.spatial_scale[1] - 0.5,
                 y1 = b[2] * o.spatial_scale[0] - 0.5,
                 x2 = b[3] * o.spatial_scale[1] - 0.5,
                 y2 = b[4] * o.spatial_scale[0] - 0.5;
    const double sx = (x2 - x1) / ow, sy = (y2 - y1) / oh;
    const int64_t gx = o.sampling_ratio > 0
                           ? o.sampling_ratio
                           : static_cast<int64_t>(std::ceil(sx));
    const int64_t gy = o.sampling_ratio > 0
                           ? o.sampling_ratio
                           : static_cast<int64_t>(std::ceil(sy));
    auto at = [&](int64_t ch, int64_t yy, int64_t xx) {
      return cl ? x[((bi * h + yy) * w + xx) * c + ch]
                : x[((bi * c + ch) * h + yy) * w + xx];
    };
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = 0;
          for (int64_t iy = 0; iy < gy; ++iy) {
            double ys = y1 + oy * sy + (iy + 0.5) * sy / gy;
            if (ys < -1 || ys > h) continue;
            ys = std::clamp(ys, 0.0, static_cast<double>(h - 1));
            const int64_t ylo = static_cast<int64_t>(ys),
                          yhi = std::min(ylo + 1, h - 1);
            const double ly = ys - ylo;
            for (int64_t ix = 0; ix < gx; ++ix) {
              double xq = x1 + ox * sx + (ix + 0.5) * sx / gx;
              if (xq < -1 || xq > w) continue;
              xq = std::clamp(xq, 0.0, static_cast<double>(w - 1));
              const int64_t xlo = static_cast<int64_t>(xq),
                            xhi = std::min(xlo + 1, w - 1);
              const double lx = xq - xlo;
              sum += (1 - ly) * (1 - lx) * at(ch, ylo, xlo) +
                     (1 - ly) * lx * at(ch, ylo, xhi) +
                     ly * (1 - lx) * at(ch, yhi, xlo) +
                     ly * lx * at(ch, yhi, xhi);
            }
          }
          const int64_t yi = cl ? ((n * oh + oy) * ow + ox) * c + ch
                                : ((n * c + ch) * oh + oy) * ow + ox;
          y[yi] = sum / static_cast<double>(gx * gy);
        }
  }
  return y;
}

harness::Case roi_case(const std::string& label, Shape xs,
                       std::vector<float> boxes, RoiAlignOptions o) {
  return {label,
          [=] {
            FunctionCheck c;
            const int64_t k = static_cast<int64_t>(boxes.size()) / 5;
            c.inputs = {{xs}, InputSpec::fixed({k, 5}, boxes)};
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::roi_align(in[0], in[1], o);
            };
            c.reference = [xs, o](const std::vector<Doubles>& in) {
              return roi_align_ref(in[0], xs, in[1], o);
            };
            return c;
          },
          false,
          true,
          {1}};
}

// Boxes inside, across the border and past it, over both samples; sample
// points off the pixel grid's integers (no floor decided by rounding).
const std::vector<float> kBoxes = {0, 0.3f,  0.6f, 4.1f, 3.7f,  //
                                   1, -1.2f, 0.2f, 2.3f, 5.9f,  //
                                   0, 2.2f,  1.1f, 7.3f, 4.4f,  //
                                   1, 1.4f,  2.6f, 2.9f, 3.3f};

RoiAlignOptions roi_opts(std::vector<int64_t> size, std::vector<float> scale,
                         int64_t ratio, bool cl) {
  RoiAlignOptions o;
  o.output_size = std::move(size);
  o.spatial_scale = std::move(scale);
  o.sampling_ratio = ratio;
  o.channel_last = cl;
  return o;
}

const bool kRoiAlign =
    harness::add(decl::RoiAlign,
                 {roi_case("2x3 adaptive grid", {2, 3, 5, 6}, kBoxes,
                           roi_opts({2, 3}, {1, 1}, -1, false)),
                  roi_case("channel_last ratio 2 scaled", {2, 5, 6, 3}, kBoxes,
                           roi_opts({3, 2}, {0.75f, 1.25f}, 2, true))});

// NNabla's NmsDetection2d in double.
Doubles nms_ref(const Doubles& x, const Shape& s,
                const NmsDetection2dOptions& o) {
  const int64_t batch = s[0], n = s[1], row = s[2], classes = row - 5;
  Doubles y = x;
  auto cut = [&](double v) { return v < o.thresh ? 0.0 : v; };
  for (int64_t i = 0; i < batch * n; ++i) {
    double* r = y.data() + i * row;
    r[4] = cut(r[4]);
    for (int64_t k = 0; k < classes; ++k) r[5 + k] = cut(r[4] * r[5 + k]);
  }
  auto iou = [](const double* a, const double* b) {
    auto ov = [](double c1, double w1, double c2, double w2) {
      return std::min(c1 + w1 / 2, c2 + w2 / 2) -
             std::max(c1 - w1 / 2, c2 - w2 / 2);
    };
    const double w = ov(a[0], a[2], b[0], b[2]), h = ov(a[1], a[3], b[1], b[3]);
    if (w <= 0 || h <= 0) return 0.0;
    return w * h / (a[2] * a[3] + b[2] * b[3] - w * h);
  };
  std::vector<int64_t> ord(n);
  for (int64_t b = 0; b < batch; ++b) {
    double* yb = y.data() + b * n * row;
    auto sort_by = [&](int64_t col) {
      std::iota(ord.begin(), ord.end(), 0);
      std::stable_sort(ord.begin(), ord.end(), [&](int64_t i, int64_t j) {
        return yb[i * row + col] > yb[j * row + col];
      });
    };
    if (o.nms_per_class) {
      for (int64_t k = 0; k < classes; ++k) {
        sort_by(5 + k);
        for (int64_t i = 0; i < n; ++i) {
          if (yb[ord[i] * row + 5 + k] == 0) continue;
          for (int64_t j = i + 1; j < n; ++j) {
            double& p = yb[ord[j] * row + 5 + k];
            if (p != 0 && iou(yb + ord[i] * row, yb + ord[j] * row) > o.nms)
              p = 0;
          }
        }
      }
    } else {
      sort_by(4);
      for (int64_t i = n - 1; i >= 0; --i) {
        double* bi = yb + ord[i] * row;
        if (bi[4] == 0) continue;
        for (int64_t j = i - 1; j >= 0; --j) {
          if (iou(bi, yb + ord[j] * row) > o.nms) {
            std::fill(bi + 4, bi + row, 0.0);
            break;
          }
        }
      }
    }
  }
  return y;
}

// 6 boxes of 2 classes per sample, every value a multiple of 1/16 (exact in
// bfloat16, so every type takes the same decisions), IoUs away from nms.
const std::vector<float> kDetections = {
    0.25f,   0.25f,   0.25f,  0.25f,  0.875f,  0.75f,   0.5f,     //
    0.3125f, 0.25f,   0.25f,  0.25f,  0.75f,   0.875f,  0.25f,    //
    0.75f,   0.75f,   0.25f,  0.25f,  0.9375f, 0.25f,   0.875f,   //
    0.75f,   0.6875f, 0.25f,  0.25f,  0.625f,  0.5f,    0.9375f,  //
    0.5f,    0.5f,    0.125f, 0.125f, 0.375f,  1.0f,    1.0f,     //
    0.25f,   0.75f,   0.25f,  0.25f,  0.8125f, 0.6875f, 0.75f};

harness::Case nms_case(const std::string& label, NmsDetection2dOptions o) {
  return {label, [=] {
            FunctionCheck c;
            const Shape s{1, 6, 7};
            c.inputs = {InputSpec::fixed(s, kDetections)};
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::nms_detection2d(in[0], o);
            };
            c.reference = [s, o](const std::vector<Doubles>& in) {
              return nms_ref(in[0], s, o);
            };
            c.check_grad = false;  // no grad, as NNabla's
            return c;
          }};
}

NmsDetection2dOptions nms_opts(float thresh, float nms, bool per_class) {
  NmsDetection2dOptions o;
  o.thresh = thresh, o.nms = nms, o.nms_per_class = per_class;
  return o;
}

const bool kNmsDetection2d =
    harness::add(decl::NmsDetection2d,
                 {nms_case("per class", nms_opts(0.5f, 0.45f, true)),
                  nms_case("by objectness", nms_opts(0.5f, 0.3f, false)),
                  nms_case("low thresh high nms", nms_opts(0.1f, 0.7f, true))});

// One cell of 48 x 48 samples (4 terms each) of values in [0, 1): sums near
// 4600 before the mean, where an fp16 accumulator's spacing is 4: against
// double in half and bfloat16.
const bool kRoiAlignLong =
    harness::add(decl::RoiAlign,
                 {{"2304-sample cells",
                   [] {
                     FunctionCheck c =
                         roi_case("", {1, 2, 8, 8}, {0, 0.5f, 0.5f, 7.5f, 7.5f},
                                  roi_opts({1, 1}, {1, 1}, 48, false))
                             .make();
                     c.inputs[0].low = 0.0f;
                     c.half_atol = c.bf16_atol = 0.0;
                     c.half_rtol = 2e-3, c.bf16_rtol = 1e-2;
                     c.check_grad = false;
                     return c;
                   },
                   /*long_sum=*/true,
                   true,
                   {1}}});

TEST(RoiAlign, NnablasDocumentedExamples) {
  // F.pad(F.constant(1, (1, 1, 2, 2)) * 2, (1, 1, 1, 1), "constant", 1).
  auto input = variable_from({1, 1, 4, 4}, {1, 1, 1, 1, 1, 2, 2, 1,  //
                                            1, 2, 2, 1, 1, 1, 1, 1});
  auto boxes = variable_from({2, 5}, {0, 0, 0, 4, 4, 0, 1, 1, 3, 3});
  auto y = F::roi_align(input, boxes, {2, 2});
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(to_doubles(y), (Doubles{1.25, 1.25, 1.25, 1.25, 2, 2, 2, 2}));
  // spatial_scale maps normalised boxes to the 3 x 4 input.
  std::vector<float> v(12);
  std::iota(v.begin(), v.end(), 1.0f);
  auto ramp = variable_from({1, 1, 3, 4}, v);
  auto nb = variable_from({1, 5}, {0, 1 / 4.f, 1 / 3.f, 3 / 4.f, 2 / 3.f});
  auto z = F::roi_align(ramp, nb, {1, 2}, {3, 4});
  z->forward();
  expect_near(to_doubles(z), {6, 7}, 1e-5, 0, "scaled box");
}

TEST(RoiAlign, GradGoesToTheSampledPixels) {
  auto input = variable_from({1, 1, 4, 4}, std::vector<float>(16, 0.0f), true);
  auto boxes = variable_from({1, 5}, {0, 1, 1, 3, 3});
  auto y = F::roi_align(input, boxes, {1, 1}, {1, 1}, 1);
  auto loss = F::sum(y);
  loss->forward();
  input->grad()->zero();
  loss->backward(1.0f);
  // The one sample at (1.5, 1.5): a quarter to each of its 4 pixels.
  Doubles g(16, 0.0);
  g[5] = g[6] = g[9] = g[10] = 0.25;
  EXPECT_EQ(grad_doubles(input), g);
}

TEST(NmsDetection2d, SuppressesTheLowerScoredOverlappingBox) {
  // Two overlapping boxes (IoU 0.82) and a distant one, one class.
  auto x = variable_from({1, 3, 6}, {0.5f, 0.5f, 0.4f, 0.4f, 0.9f, 1.0f,   //
                                     0.54f, 0.5f, 0.4f, 0.4f, 0.8f, 1.0f,  //
                                     0.1f, 0.1f, 0.1f, 0.1f, 0.7f, 0.5f});
  auto y = F::nms_detection2d(x);
  y->forward();
  expect_near(to_doubles(y),
              {0.5, 0.5, 0.4, 0.4, 0.9, 0.9,   //
               0.54, 0.5, 0.4, 0.4, 0.8, 0,    //
               0.1, 0.1, 0.1, 0.1, 0.7, 0.0},  // 0.7 x 0.5 < 0.5: cut
              1e-6, 0, "per class");
  NmsDetection2dOptions o;
  o.nms_per_class = false;
  auto z = F::nms_detection2d(x, o);
  z->forward();
  expect_near(to_doubles(z),
              {0.5, 0.5, 0.4, 0.4, 0.9, 0.9,  //
               0.54, 0.5, 0.4, 0.4, 0, 0,     //
               0.1, 0.1, 0.1, 0.1, 0.7, 0.0},
              1e-6, 0, "by objectness");
}

TEST(Detection, ErrorsNameTheFunctionAndTheProblem) {
  expect_error(
      [] {
        F::roi_align(make_variable({1, 2, 4}), make_variable({1, 5}), {2, 2});
      },
      {"[roi_align] input with shape (1, 2, 4) must be 4-D"});
  expect_error(
      [] {
        F::roi_align(make_variable({1, 2, 4, 4}), make_variable({1, 4}),
                     {2, 2});
      },
      {"[roi_align] boxes with shape (1, 4) must be (K, 5)"});
  expect_error(
      [] {
        F::roi_align(make_variable({1, 2, 4, 4}), make_variable({1, 5}),
                     {2, 0});
      },
      {"[roi_align] output_size (2, 0) must be two positive sizes"});
  expect_error(
      [] {
        F::roi_align(make_variable({1, 2, 4, 4}), make_variable({1, 5}), {2, 2},
                     {1});
      },
      {"[roi_align] spatial_scale must have 2 values (y, x), got 1"});
  expect_error(
      [] {
        auto y = F::roi_align(make_variable({1, 2, 4, 4}),
                              variable_from({1, 5}, {1, 0, 0, 2, 2}), {2, 2});
        y->forward();
      },
      {"[roi_align] boxes row 0 has batch index 1, outside the input's 1 "
       "samples"});
  expect_error(
      [] {
        F::nms_detection2d(make_variable({2, 5, 5}));
      },
      {"[nms_detection2d] x with shape (2, 5, 5) must be (B, N, 5 + "
       "C) with at least one class"});
}

}  // namespace
}  // namespace mg::test::detection_tests
