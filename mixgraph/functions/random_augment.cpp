#include <mixgraph/functions/random_augment.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void RandomGather::set_shapes(const Shape& x, const Shape& y) {
  base_axis_ = axis_of_shape(base_axis_arg_, x, tag(), "base_axis");
  const int nd = static_cast<int>(x.size());
  x_shape_ = x;
  y_shape_ = y;
  samples_ = shape_size(x, 0, base_axis_);
  x_sample_ = shape_size(x, base_axis_, nd);
  y_sample_ = shape_size(y, base_axis_, nd);
}

void RandomGather::draw_map() {
  std::mt19937& g = source_.engine();
  const int nd = static_cast<int>(y_shape_.size());
  map_size_ = 0;
  for (int a = base_axis_; a < nd; ++a) map_size_ += y_shape_[a];
  maps_.resize(static_cast<size_t>(samples_ * map_size_));
  std::vector<int64_t> d;
  for (int64_t s = 0; s < samples_; ++s) {
    draw_sample(g, d);
    int64_t* m = maps_.data() + s * map_size_;
    for (int a = base_axis_; a < nd; ++a) {
      for (int64_t c = 0; c < y_shape_[a]; ++c) *m++ = source_along(d, a, c);
    }
  }
}

std::vector<int64_t> RandomGather::source_map() const {
  std::vector<int64_t> map(static_cast<size_t>(samples_ * y_sample_));
  for_each_source([&](int64_t e, int64_t src) { map[e] = src; });
  return map;
}

void RandomFlip::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  set_shapes(x, x);
  const int nd = static_cast<int>(x.size());
  flippable_.assign(static_cast<size_t>(nd), false);
  const std::vector<int> axes =
      opts_.axes.empty() ? std::vector<int>{nd - 1} : opts_.axes;
  for (int axis : axes) {
    const int a = axis_of_shape(axis, x, tag());
    if (a < base_axis_) {
      throw std::invalid_argument(
          msg(tag(), "axis ", axis, " of x with shape ", shape_str(x),
              " is before base_axis ", base_axis_,
              ": only the axes of a sample can be flipped"));
    }
    flippable_[a] = true;
  }
  out[0]->reshape(x);
}

void RandomFlip::draw_sample(std::mt19937& g, std::vector<int64_t>& d) {
  d.resize(flippable_.size());
  for (size_t a = 0; a < d.size(); ++a) d[a] = (g() % 2) && flippable_[a];
}

int64_t RandomFlip::source_along(const std::vector<int64_t>& d, int axis,
                                 int64_t c) const {
  return d[axis] ? x_shape_[axis] - 1 - c : c;
}

void RandomShift::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  set_shapes(x, x);
  const int nd = static_cast<int>(x.size());
  const int m = static_cast<int>(opts_.shifts.size());
  const std::string& mode = opts_.border_mode;
  if (mode == "nearest") {
    border_ = Border::nearest;
  } else if (mode == "reflect") {
    border_ = Border::reflect;
  } else if (mode == "constant") {
    border_ = Border::constant;
  } else {
    throw std::invalid_argument(
        msg(tag(), "border_mode \"", mode,
            "\" is not one of \"nearest\", \"reflect\" and \"constant\""));
  }
  if (m > nd) {
    throw std::invalid_argument(msg(tag(), m, " shifts for x with shape ",
                                    shape_str(x), " of ", nd, " axes"));
  }
  for (int k = 0; k < m; ++k) {
    const int axis = nd - m + k, s = opts_.shifts[k];
    if (s < 0 || (axis < base_axis_ && s != 0)) {
      throw std::invalid_argument(
          msg(tag(), "shift ", s, " of axis ", axis, " of x with shape ",
              shape_str(x), " must be 0 or more, and 0 before base_axis ",
              base_axis_));
    }
  }
  out[0]->reshape(x);
}

void RandomShift::draw_sample(std::mt19937& g, std::vector<int64_t>& d) {
  d.resize(opts_.shifts.size());
  for (size_t k = 0; k < d.size(); ++k) {
    const int64_t s = opts_.shifts[k];
    d[k] = static_cast<int64_t>(g() % static_cast<uint32_t>(2 * s + 1)) - s;
  }
}

int64_t RandomShift::source_along(const std::vector<int64_t>& d, int axis,
                                  int64_t c) const {
  const int nd = static_cast<int>(x_shape_.size());
  const int k = static_cast<int>(d.size()) - nd + axis;
  const int64_t size = x_shape_[axis];
  const int64_t i = c - (k >= 0 ? d[k] : 0);
  if (border_ == Border::nearest) return std::clamp<int64_t>(i, 0, size - 1);
  if (border_ == Border::reflect) {
    // NNabla's: x mirrored with its edge repeated, period 2 size.
    const int64_t r = size > 1 ? std::llabs(i + 2 * size) % (2 * size) : 0;
    return r >= size ? 2 * size - 1 - r : r;
  }
  return i < 0 || i >= size ? -1 : i;
}

void RandomCrop::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int m = static_cast<int>(opts_.shape.size());
  base_axis_ = axis_of_shape(base_axis_arg_, x, tag(), "base_axis");
  if (m > nd) {
    throw std::invalid_argument(msg(tag(), "shape ", shape_str(opts_.shape),
                                    " has more axes than x with shape ",
                                    shape_str(x)));
  }
  // NNabla's default shape is x's whole shape, batch axes included: an
  // axis before base_axis is never cropped, so it must keep x's size.
  for (int a = nd - m; a < base_axis_; ++a) {
    if (opts_.shape[a - (nd - m)] != x[a]) {
      throw std::invalid_argument(
          msg(tag(), "shape ", shape_str(opts_.shape), " would crop axis ", a,
              " of x with shape ", shape_str(x), ", which is before base_axis ",
              base_axis_, " (a batch axis): give it x's size ", x[a]));
    }
  }
  Shape y = x;
  for (int k = 0; k < m; ++k) {
    const int64_t s = opts_.shape[k], size = x[nd - m + k];
    if (s < 0 || s > size) {
      throw std::invalid_argument(msg(tag(), "shape ", shape_str(opts_.shape),
                                      " must fit in the last axes of x with "
                                      "shape ",
                                      shape_str(x)));
    }
    y[nd - m + k] = s;
  }
  set_shapes(x, y);
  out[0]->reshape(y);
}

void RandomCrop::draw_sample(std::mt19937& g, std::vector<int64_t>& d) {
  const int nd = static_cast<int>(x_shape_.size());
  const int m = static_cast<int>(opts_.shape.size());
  d.assign(static_cast<size_t>(nd), 0);
  // The axes before base_axis keep x's size (setup checks): no draw.
  for (int a = std::max(nd - m, base_axis_); a < nd; ++a) {
    d[a] = g() % static_cast<uint32_t>(x_shape_[a] - y_shape_[a] + 1);
  }
}

int64_t RandomCrop::source_along(const std::vector<int64_t>& d, int axis,
                                 int64_t c) const {
  return c + d[axis];
}

void RandomErase::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int base = axis_of_shape(opts_.base_axis, x, tag(), "base_axis");
  if (nd - base != 3) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " and base_axis ", base,
            " must have 3 axes from base_axis (C, H, W): images only"));
  }
  auto check_range = [&](const std::vector<float>& r, const char* what,
                         float min) {
    if (r.size() != 2 || !(r[0] >= min && r[0] <= r[1]) ||
        !std::isfinite(r[1])) {
      throw std::invalid_argument(msg(tag(), what,
                                      " must be (low, high), finite, with ",
                                      min, " <= low <= high"));
    }
  };
  if (!(opts_.prob >= 0.0f && opts_.prob <= 1.0f) || opts_.n < 1) {
    throw std::invalid_argument(msg(tag(), "prob ", opts_.prob,
                                    " must be in [0, 1] and n ", opts_.n,
                                    " 1 or more"));
  }
  check_range(opts_.area_ratios, "area_ratios", 0.0f);
  check_range(opts_.aspect_ratios, "aspect_ratios", 1e-30f);
  check_range(opts_.replacements, "replacements", -3.4e38f);
  samples_ = shape_size(x, 0, base);
  const int c = opts_.channel_last ? nd - 1 : base;
  c_ = x[c];
  h_ = x[opts_.channel_last ? base : base + 1];
  w_ = x[opts_.channel_last ? base + 1 : base + 2];
  out[0]->reshape(x);
}

void RandomErase::erase(std::vector<float>& y) {
  struct Patch {
    float u;
    int64_t y0, x0, y1, x1;
  };
  std::mt19937& g = source_.engine();
  const int64_t per = opts_.share ? 1 : c_;
  std::vector<Patch> patches(static_cast<size_t>(opts_.n * samples_ * per));
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_real_distribution<float> area(opts_.area_ratios[0],
                                             opts_.area_ratios[1]);
  std::uniform_real_distribution<float> aspect(opts_.aspect_ratios[0],
                                               opts_.aspect_ratios[1]);
  const float pixels = static_cast<float>(h_ * w_);
  for (Patch& p : patches) {
    const float se = area(g) * pixels, re = aspect(g);
    const int64_t he =
        std::min<int64_t>(static_cast<int64_t>(std::sqrt(se * re)), h_);
    const int64_t we =
        std::min<int64_t>(static_cast<int64_t>(std::sqrt(se / re)), w_);
    p.u = unit(g);
    p.y0 = std::uniform_int_distribution<int>(0, static_cast<int>(h_ - he))(g);
    p.x0 = std::uniform_int_distribution<int>(0, static_cast<int>(w_ - we))(g);
    p.y1 = p.y0 + he;
    p.x1 = p.x0 + we;
  }
  std::uniform_real_distribution<float> value(opts_.replacements[0],
                                              opts_.replacements[1]);
  erased_.assign(y.size(), 0);
  const bool last = opts_.channel_last;
  for (int64_t k = 0; k < opts_.n; ++k) {
    for (int64_t b = 0; b < samples_; ++b) {
      const Patch* pb = &patches[(k * samples_ + b) * per];
      // The values are drawn in memory order: (C, H, W), or (H, W, C) with
      // channel_last. Channel-first visits each patch's rows alone.
      if (!last) {
        for (int64_t c = 0; c < c_; ++c) {
          const Patch& p = pb[opts_.share ? 0 : c];
          if (!(p.u <= opts_.prob)) continue;
          for (int64_t h = p.y0; h <= std::min(p.y1, h_ - 1); ++h) {
            const int64_t row = ((b * c_ + c) * h_ + h) * w_;
            for (int64_t w = p.x0; w <= std::min(p.x1, w_ - 1); ++w) {
              y[row + w] = value(g);
              erased_[row + w] = 1;
            }
          }
        }
        continue;
      }
      for (int64_t i = 0; i < c_ * h_ * w_; ++i) {
        const int64_t c = i % c_, h = i / (w_ * c_), w = i / c_ % w_;
        const Patch& p = pb[opts_.share ? 0 : c];
        if (p.u <= opts_.prob && p.y0 <= h && h <= p.y1 && p.x0 <= w &&
            w <= p.x1) {
          const int64_t e = b * c_ * h_ * w_ + i;
          y[e] = value(g);
          erased_[e] = 1;
        }
      }
    }
  }
}

void ImageAugmentation::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const ImageAugmentationOptions& o = opts_;
  const int nd = static_cast<int>(x.size());
  if (nd < 2 || o.pad.size() != 2 || o.pad[0] < 0 || o.pad[1] < 0) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " must have 2 axes or more and pad ",
                                    shape_str(o.pad), " 2 sizes 0 or more"));
  }
  Shape y = x;
  if (!o.shape.empty()) {
    const int m = static_cast<int>(o.shape.size());
    bool ok = m >= 2 && m <= nd && o.shape[m - 1] > 0 && o.shape[m - 2] > 0;
    for (int k = 0; ok && k < m - 2; ++k) ok = o.shape[k] == x[nd - m + k];
    if (!ok) {
      throw std::invalid_argument(
          msg(tag(), "shape ", shape_str(o.shape), " must end in (H, W) above ",
              "0 and match x with shape ", shape_str(x), " before them"));
    }
    y[nd - 2] = o.shape[m - 2];
    y[nd - 1] = o.shape[m - 1];
  }
  if (!(o.min_scale > 0.0f && o.max_scale > 0.0f && o.aspect_ratio > 0.0f &&
        o.contrast > 0.0f)) {
    throw std::invalid_argument(
        msg(tag(), "min_scale ", o.min_scale, ", max_scale ", o.max_scale,
            ", aspect_ratio ", o.aspect_ratio, " and contrast ", o.contrast,
            " must be above 0"));
  }
  h_in_ = x[nd - 2];
  w_in_ = x[nd - 1];
  h_out_ = y[nd - 2];
  w_out_ = y[nd - 1];
  channels_ = nd >= 3 ? x[nd - 3] : 1;
  images_ = shape_size(x) / std::max<int64_t>(h_in_ * w_in_ * channels_, 1);
  out[0]->reshape(y);
}

void ImageAugmentation::augment(const std::vector<float>& x,
                                std::vector<float>& y) {
  const ImageAugmentationOptions& o = opts_;
  std::mt19937& g = source_.engine();
  std::normal_distribution<> norm(0.0, 1.0);
  auto unit = [&g] { return static_cast<float>(g() % 1001) * 0.001f; };
  const int64_t w_in = w_in_, h_in = h_in_, w_out = w_out_, h_out = h_out_;
  const float w_in_pad = static_cast<float>(w_in + o.pad[1] * 2);
  const float h_in_pad = static_cast<float>(h_in + o.pad[0] * 2);
  const float w_half = w_out * 0.5f, h_half = h_out * 0.5f;
  const int64_t nc = channels_;
  std::vector<float> ch_brightness(nc), ch_contrast(nc);
  for (int64_t im = 0; im < images_; ++im) {
    const float* xi = x.data() + im * nc * h_in * w_in;
    float* yi = y.data() + im * nc * h_out * w_out;
    const float scale =
        o.min_scale * std::exp(unit() * std::log(o.max_scale / o.min_scale));
    const float scale_x = static_cast<float>(std::exp(
        -std::log(o.aspect_ratio) * 0.5 + unit() * std::log(o.aspect_ratio)));
    const float scale_y = 1.0f / scale_x;
    const float i_scale_x = 1.0f / (scale * scale_x);
    const float i_scale_y = 1.0f / (scale * scale_y);
    const float angle = -o.angle + unit() * o.angle * 2;
    const float w_scaled = w_in_pad * scale * scale_x;
    const float h_scaled = h_in_pad * scale * scale_y;
    const float cx = (w_out - 1) * 0.5f, cy = (h_out - 1) * 0.5f;
    const float cx_scaled = unit() * (w_scaled - w_out) + cx;
    const float cy_scaled = unit() * (h_scaled - h_out) + cy;
    const bool flip_lr = (g() % 2) && o.flip_lr;
    const bool flip_ud = (g() % 2) && o.flip_ud;
    const float brightness = unit() * o.brightness * 2.0f - o.brightness;
    const float contrast =
        std::exp(unit() * std::log(o.contrast) * 2.0f) / o.contrast;
    for (int64_t c = 0; c < nc; ++c) {
      const float b = o.brightness_each
                          ? unit() * o.brightness * 2.0f - o.brightness
                          : brightness;
      ch_brightness[c] = b - o.contrast_center;
      ch_contrast[c] =
          o.contrast_each
              ? std::exp(unit() * std::log(o.contrast) * 2.0f) / o.contrast
              : contrast;
    }
    const float distortion =
        std::exp(unit() * 2.0f * o.distortion - o.distortion) - 1.0f;
    const float noise = unit() * o.noise;
    const float cos_t = std::cos(angle), sin_t = std::sin(angle);
    const float x_ax = (flip_lr ? -cos_t : cos_t) * i_scale_x;
    const float y_ax = (flip_lr ? sin_t : -sin_t) * i_scale_y;
    const float x_ay = (flip_ud ? -sin_t : sin_t) * i_scale_x;
    const float y_ay = (flip_ud ? -cos_t : cos_t) * i_scale_y;
    float x0 = cx_scaled * i_scale_x - (x_ax * cx + y_ax * cy) - o.pad[1];
    float y0 = cy_scaled * i_scale_y - (x_ay * cx + y_ay * cy) - o.pad[0];
    for (int64_t iy = 0; iy < h_out; ++iy) {
      float xl = x0, yl = y0;
      for (int64_t ix = 0; ix < w_out; ++ix) {
        float xs = xl, ys = yl;
        if (distortion != 0.0f) {
          float dx = (ix - w_half) / w_half, dy = (iy - h_half) / h_half;
          const float r2 = dx * dx + dy * dy;
          const float ds = 1.0f / (1.0f + distortion);
          dx = (dx + dx * distortion * r2) * w_half * ds + w_half;
          dy = (dy + dy * distortion * r2) * h_half * ds + h_half;
          xs = x0 + dx * x_ax + dy * y_ax;
          ys = y0 + dx * x_ay + dy * y_ay;
        }
        xs = std::clamp(xs, 0.0f, static_cast<float>(w_in - 1));
        ys = std::clamp(ys, 0.0f, static_cast<float>(h_in - 1));
        const int64_t ix0 = static_cast<int64_t>(xs);
        const int64_t iy0 = static_cast<int64_t>(ys);
        const float fx = xs - ix0, fy = ys - iy0;
        const int64_t ix1 = ix0 < w_in - 1 ? ix0 + 1 : ix0;
        const int64_t iy1 = iy0 < h_in - 1 ? iy0 + 1 : iy0;
        for (int64_t c = 0; c < nc; ++c) {
          const float* xc = xi + c * h_in * w_in;
          float v = xc[iy0 * w_in + ix0] * (1 - fx) * (1 - fy) +
                    xc[iy0 * w_in + ix1] * fx * (1 - fy) +
                    xc[iy1 * w_in + ix0] * (1 - fx) * fy +
                    xc[iy1 * w_in + ix1] * fx * fy;
          v = (v + ch_brightness[c]) * ch_contrast[c] + o.contrast_center;
          if (noise > 0.0f) v += static_cast<float>(norm(g)) * noise;
          yi[(c * h_out + iy) * w_out + ix] = v;
        }
        xl += x_ax;
        yl += x_ay;
      }
      if (distortion == 0.0f) {
        x0 += y_ax;
        y0 += y_ay;
      }
    }
  }
}

namespace functions {

VariablePtr image_augmentation(const VariablePtr& x,
                               const ImageAugmentationOptions& opts) {
  return apply_function1(decl::ImageAugmentation, opts, {x});
}

VariablePtr random_erase(const VariablePtr& x, const RandomEraseOptions& opts) {
  return apply_function1(decl::RandomErase, opts, {x});
}

VariablePtr random_flip(const VariablePtr& x, const std::vector<int>& axes,
                        int base_axis, int seed) {
  return apply_function1(decl::RandomFlip,
                         RandomFlipOptions{axes, base_axis, seed}, {x});
}

VariablePtr random_shift(const VariablePtr& x, const std::vector<int>& shifts,
                         const std::string& border_mode, float constant_value,
                         int base_axis, int seed) {
  return apply_function1(
      decl::RandomShift,
      RandomShiftOptions{shifts, border_mode, constant_value, base_axis, seed},
      {x});
}

VariablePtr random_crop(const VariablePtr& x, const Shape& shape, int base_axis,
                        int seed) {
  return apply_function1(decl::RandomCrop,
                         RandomCropOptions{shape, base_axis, seed}, {x});
}

}  // namespace functions

}  // namespace mg
