// RoiAlign and NmsDetection2d on the CPU: computed in fp32 on converted
// values (boxes are fp32), sums in fp32.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/detection.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mg::cpu {

namespace {

// The bilinear samples of every output cell of one box: cell o owns
// pos/weight[first[o], first[o + 1]), pos a pixel index y * W + x.
struct BoxSamples {
  int64_t batch = 0;
  float scale = 1.0f;  // 1 / samples per cell
  std::vector<int64_t> first, pos;
  std::vector<float> weight;
};

BoxSamples box_samples(const float* box, const RoiAlignOptions& o, int64_t n,
                       int64_t h, int64_t w, const std::string& tag,
                       int64_t row) {
  BoxSamples s;
  const float bi = box[0];
  if (!(bi >= 0.0f && bi < static_cast<float>(n))) {
    throw std::invalid_argument(msg(tag, "boxes row ", row, " has batch index ",
                                    bi, ", outside the input's ", n,
                                    " samples"));
  }
  s.batch = static_cast<int64_t>(bi);
  const float x1 = box[1] * o.spatial_scale[1] - 0.5f;
  const float y1 = box[2] * o.spatial_scale[0] - 0.5f;
  const float x2 = box[3] * o.spatial_scale[1] - 0.5f;
  const float y2 = box[4] * o.spatial_scale[0] - 0.5f;
  const int64_t oh = o.output_size[0], ow = o.output_size[1];
  const float step_x = (x2 - x1) / static_cast<float>(ow);
  const float step_y = (y2 - y1) / static_cast<float>(oh);
  // NNabla's grid: sampling_ratio, else ceil(cell size); at least 1 here
  // (NNabla divides by zero for an empty or inverted box).
  auto grid = [&](float step) {
    const int64_t g = o.sampling_ratio > 0
                          ? o.sampling_ratio
                          : static_cast<int64_t>(std::ceil(step));
    return std::max<int64_t>(g, 1);
  };
  const int64_t gx = grid(step_x), gy = grid(step_y);
  const float sxx = step_x / static_cast<float>(gx);
  const float syy = step_y / static_cast<float>(gy);
  s.scale = 1.0f / static_cast<float>(gx * gy);
  s.first.reserve(oh * ow + 1);
  for (int64_t y = 0; y < oh; ++y) {
    const float yf = y1 + static_cast<float>(y) * step_y;
    for (int64_t x = 0; x < ow; ++x) {
      const float xf = x1 + static_cast<float>(x) * step_x;
      s.first.push_back(static_cast<int64_t>(s.pos.size()));
      for (int64_t yy = 0; yy < gy; ++yy) {
        float ys = yf + static_cast<float>(yy) * syy + 0.5f * syy;
        if (ys < -1.0f || ys > static_cast<float>(h)) continue;
        ys = std::clamp(ys, 0.0f, static_cast<float>(h - 1));
        const int64_t ylo = static_cast<int64_t>(ys);
        const int64_t yhi = std::min(ylo + 1, h - 1);
        const float ly = ys - std::floor(ys), hy = 1.0f - ly;
        for (int64_t xx = 0; xx < gx; ++xx) {
          float xs = xf + static_cast<float>(xx) * sxx + 0.5f * sxx;
          if (xs < -1.0f || xs > static_cast<float>(w)) continue;
          xs = std::clamp(xs, 0.0f, static_cast<float>(w - 1));
          const int64_t xlo = static_cast<int64_t>(xs);
          const int64_t xhi = std::min(xlo + 1, w - 1);
          const float lx = xs - std::floor(xs), hx = 1.0f - lx;
          const int64_t p[4] = {ylo * w + xlo, ylo * w + xhi, yhi * w + xlo,
                                yhi * w + xhi};
          const float wt[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
          for (int k = 0; k < 4; ++k) {
            s.pos.push_back(p[k]);
            s.weight.push_back(wt[k]);
          }
        }
      }
    }
  }
  s.first.push_back(static_cast<int64_t>(s.pos.size()));
  return s;
}

template <class T>
class RoiAlignCpu : public RoiAlign {
 public:
  using RoiAlign::RoiAlign;

 protected:
  // Calls fn(input index, output index, weight) for every sample of every
  // box, channel and cell.
  template <class Fn>
  void each_sample(const Variables& in, Fn&& fn) {
    const Shape& xs = in[0]->shape();
    const bool cl = opts_.channel_last;
    const int64_t n = xs[0], c = cl ? xs[3] : xs[1];
    const int64_t h = cl ? xs[1] : xs[2], w = cl ? xs[2] : xs[3];
    const int64_t k = in[1]->shape()[0];
    const int64_t cells = opts_.output_size[0] * opts_.output_size[1];
    const float* boxes = input<float>(in[1]);
    for (int64_t b = 0; b < k; ++b) {
      const BoxSamples s = box_samples(boxes + b * 5, opts_, n, h, w, tag(), b);
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t o = 0; o < cells; ++o) {
          const int64_t yi =
              cl ? (b * cells + o) * c + ch : (b * c + ch) * cells + o;
          for (int64_t i = s.first[o]; i < s.first[o + 1]; ++i) {
            const int64_t xi = cl ? (s.batch * h * w + s.pos[i]) * c + ch
                                  : (s.batch * c + ch) * h * w + s.pos[i];
            fn(xi, yi, s.weight[i] * s.scale);
          }
        }
      }
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(out[0]->size(), 0.0f);
    each_sample(in,
                [&](int64_t xi, int64_t yi, float wt) { y[yi] += wt * x[xi]; });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(in[0]->size(), 0.0f);
    each_sample(
        in, [&](int64_t xi, int64_t yi, float wt) { dx[xi] += wt * dy[yi]; });
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

// NNabla's IoU of two (center x, center y, w, h) boxes.
float iou(const float* a, const float* b) {
  auto overlap = [](float c1, float w1, float c2, float w2) {
    return std::min(c1 + w1 / 2, c2 + w2 / 2) -
           std::max(c1 - w1 / 2, c2 - w2 / 2);
  };
  const float w = overlap(a[0], a[2], b[0], b[2]);
  const float h = overlap(a[1], a[3], b[1], b[3]);
  if (w <= 0 || h <= 0) return 0.0f;
  const float inter = w * h;
  return inter / (a[2] * a[3] + b[2] * b[3] - inter);
}

template <class T>
class NmsDetection2dCpu : public NmsDetection2d {
 public:
  using NmsDetection2d::NmsDetection2d;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Shape& s = in[0]->shape();
    const int64_t batch = s[0], boxes = s[1], row = s[2], classes = row - 5;
    std::vector<float> y = floats_of<T>(in[0]);
    const float th = opts_.thresh;
    auto cut = [th](float v) { return v < th ? 0.0f : v; };
    for (int64_t i = 0; i < batch * boxes; ++i) {
      float* r = y.data() + i * row;
      r[4] = cut(r[4]);
      for (int64_t k = 0; k < classes; ++k) r[5 + k] = cut(r[4] * r[5 + k]);
    }
    std::vector<int64_t> order(static_cast<size_t>(boxes));
    for (int64_t b = 0; b < batch; ++b) {
      float* yb = y.data() + b * boxes * row;
      auto sort_by = [&](int64_t col) {
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
          return yb[i * row + col] > yb[j * row + col];
        });
      };
      if (opts_.nms_per_class) {
        for (int64_t k = 0; k < classes; ++k) {
          sort_by(5 + k);
          for (int64_t i = 0; i < boxes; ++i) {
            const float* bi = yb + order[i] * row;
            if (bi[5 + k] == 0.0f) continue;
            for (int64_t j = i + 1; j < boxes; ++j) {
              float* bj = yb + order[j] * row;
              if (bj[5 + k] == 0.0f) continue;
              if (iou(bi, bj) > opts_.nms) bj[5 + k] = 0.0f;
            }
          }
        }
      } else {
        // NNabla's order: from the lowest objectness up, a box is zeroed
        // when any box sorted before it (higher objectness, suppressed or
        // not) overlaps it.
        sort_by(4);
        for (int64_t i = boxes - 1; i >= 0; --i) {
          float* bi = yb + order[i] * row;
          if (bi[4] == 0.0f) continue;
          for (int64_t j = i - 1; j >= 0; --j) {
            if (iou(bi, yb + order[j] * row) > opts_.nms) {
              std::fill(bi + 4, bi + row, 0.0f);
              break;
            }
          }
        }
      }
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
  }
};

}  // namespace

void register_detection(FunctionRegistry& r) {
  register_float_types<RoiAlignCpu>(r, decl::RoiAlign, "cpu");
  register_float_types<NmsDetection2dCpu>(r, decl::NmsDetection2d, "cpu");
}

}  // namespace mg::cpu
