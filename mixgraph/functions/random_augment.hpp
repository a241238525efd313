// Random data augmentation (NNabla's RandomFlip, RandomShift, RandomCrop and
// RandomErase): each sample (the axes from base_axis on) transformed by its
// own draws, new ones at each forward, from the generator RandomSource
// picks by `seed`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <mixgraph/functions/random_generators.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

/// RandomFlip's arguments (NNabla's, with its defaults).
struct RandomFlipOptions {
  /// The axes each flipped with probability 1/2 (negative counts from the
  /// end), all from base_axis on; empty: the last axis (NNabla's default).
  std::vector<int> axes;
  /// The first axis of a sample: the axes before it count the samples.
  int base_axis = 1;
  /// -1: the library's generator (see RandomSource).
  int seed = -1;

  MG_FIELDS(axes, base_axis, seed);
};

/// RandomShift's arguments (NNabla's, with its defaults).
struct RandomShiftOptions {
  /// The largest shift of each of the last shifts.size() axes: each sample
  /// is shifted by a draw from [-s, s] (0 for an axis before base_axis);
  /// empty: no shift (NNabla's default, zeros).
  std::vector<int> shifts;
  /// What fills the places shifted in: "nearest" (the edge value),
  /// "reflect" (x mirrored at its edges, the edge repeated: NNabla's rule)
  /// or "constant" (constant_value).
  std::string border_mode = "nearest";
  float constant_value = 0.0f;
  int base_axis = 1;
  int seed = -1;

  MG_FIELDS(shifts, border_mode, constant_value, base_axis, seed);
};

/// RandomCrop's arguments (NNabla's, with its defaults).
struct RandomCropOptions {
  /// The size of the last shape.size() axes after cropping, each at most
  /// x's; axes before base_axis may be named (NNabla's default is x's whole
  /// shape) but keep x's size. Empty: x's shape (nothing cropped, NNabla's
  /// default).
  Shape shape;
  int base_axis = 1;
  int seed = -1;

  MG_FIELDS(shape, base_axis, seed);
};

/// RandomErase's arguments (NNabla's, with its defaults).
struct RandomEraseOptions {
  /// The probability of erasing each patch, in [0, 1].
  float prob = 0.5f;
  /// The patch's area as a fraction of H * W, drawn from [low, high).
  std::vector<float> area_ratios = {0.02f, 0.4f};
  /// The patch's height / width, drawn from [low, high).
  std::vector<float> aspect_ratios = {0.3f, 3.3333f};
  /// The erased values are drawn from [low, high).
  std::vector<float> replacements = {0.0f, 255.0f};
  /// The number of patches per sample (per channel without share), 1 or
  /// more.
  int n = 1;
  /// One patch for every channel of a sample; false: one per channel.
  bool share = true;
  /// Obsolete in NNabla and ignored: y is never x's buffer.
  bool inplace = false;
  /// A sample is (C, H, W) from base_axis on ((H, W, C) with channel_last).
  int base_axis = 1;
  int seed = -1;
  bool channel_last = false;
  /// The grad is 0 where a patch erased x (true), or dy everywhere.
  bool ste_fine_grained = true;

  MG_FIELDS(prob, area_ratios, aspect_ratios, replacements, n, share, inplace,
            base_axis, seed, channel_last, ste_fine_grained);
};

/// ImageAugmentation's arguments (NNabla's, with its defaults).
struct ImageAugmentationOptions {
  /// y's shape: x's with the last two (H, W) replaced; empty: x's shape.
  Shape shape;
  /// Padding of H and W (the edge repeated) before the warp.
  Shape pad = {0, 0};
  /// The scale is drawn log-uniformly from [min_scale, max_scale].
  float min_scale = 1.0f;
  float max_scale = 1.0f;
  /// The rotation, drawn from [-angle, angle] radians.
  float angle = 0.0f;
  /// The aspect ratio, drawn log-uniformly from [1 / sqrt(a), sqrt(a)].
  float aspect_ratio = 1.0f;
  /// The radial lens distortion, drawn from exp([-d, d]) - 1.
  float distortion = 0.0f;
  /// Flip left-right / up-down, each with probability 1/2.
  bool flip_lr = false;
  bool flip_ud = false;
  /// Added brightness from [-b, b], per channel with brightness_each.
  float brightness = 0.0f;
  bool brightness_each = false;
  /// The contrast, drawn log-uniformly from [1 / c, c], around
  /// contrast_center; per channel with contrast_each.
  float contrast = 1.0f;
  float contrast_center = 0.0f;
  bool contrast_each = false;
  /// Gaussian noise of a standard deviation drawn from [0, noise].
  float noise = 0.0f;
  int seed = -1;

  MG_FIELDS(shape, pad, min_scale, max_scale, angle, aspect_ratio, distortion,
            flip_lr, flip_ud, brightness, brightness_each, contrast,
            contrast_center, contrast_each, noise, seed);
};

namespace decl {
/// ImageAugmentation's declaration: no grad (NNabla's has none: it
/// prepares input data).
inline constexpr FunctionDeclOf<ImageAugmentationOptions> ImageAugmentation{
    {"ImageAugmentation",
     "image_augmentation",
     {Port{"x", Port::floating, false}},
     {Port{"y"}}}};
/// RandomErase's declaration.
inline constexpr FunctionDeclOf<RandomEraseOptions> RandomErase{
    {"RandomErase", "random_erase", {Port{"x"}}, {Port{"y"}}}};
/// RandomFlip's declaration.
inline constexpr FunctionDeclOf<RandomFlipOptions> RandomFlip{
    {"RandomFlip", "random_flip", {Port{"x"}}, {Port{"y"}}}};
/// RandomShift's declaration.
inline constexpr FunctionDeclOf<RandomShiftOptions> RandomShift{
    {"RandomShift", "random_shift", {Port{"x"}}, {Port{"y"}}}};
/// RandomCrop's declaration.
inline constexpr FunctionDeclOf<RandomCropOptions> RandomCrop{
    {"RandomCrop", "random_crop", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The common part of RandomFlip, RandomShift and RandomCrop: each is a
/// gather that maps every axis of a sample on its own, y[..., i, ...] =
/// x[..., source(i), ...] (a constant where a source is -1), with the maps
/// drawn for each sample at each forward by draw_map; backward adds dy to
/// dx through the same maps. The maps are kept per axis (the sum of a
/// sample's sizes per sample), not per element. The draws follow NNabla's
/// (the same 32-bit draws per sample, in the same order), so a generator in
/// the same state gives the same flips, shifts and crops as NNabla's.
class RandomGather : public Function {
 public:
  /// The sample axes from base_axis on; seed as RandomSource's.
  RandomGather(int base_axis, int seed)
      : base_axis_arg_(base_axis), source_(seed) {}
  bool grad_depends_input_data(int) const override { return false; }
  /// Draws new maps from the generator (forward calls it).
  void draw_map();
  /// The value of the elements whose source is -1.
  virtual float fill_value() const { return 0.0f; }
  /// fn(e, src) for every element e of y, in order: src is the flat index
  /// of the element of x it holds under the last maps drawn, or -1.
  template <class Fn>
  void for_each_source(Fn&& fn) const;
  /// The whole map of for_each_source (for tests).
  std::vector<int64_t> source_map() const;

 protected:
  /// Checks base_axis against x and keeps the shapes and sample counts;
  /// the subclasses call it first in setup_impl.
  void set_shapes(const Shape& x, const Shape& y);
  /// Makes one sample's draws `d`.
  virtual void draw_sample(std::mt19937& g, std::vector<int64_t>& d) = 0;
  /// The coordinate along `axis` of x that coordinate c of y takes under
  /// the draws d, or -1 for the constant.
  virtual int64_t source_along(const std::vector<int64_t>& d, int axis,
                               int64_t c) const = 0;
  int base_axis_arg_;
  int base_axis_ = 1;
  Shape x_shape_, y_shape_;
  int64_t samples_ = 1, x_sample_ = 1, y_sample_ = 1;
  RandomSource source_;
  /// Per sample, the maps of its axes one after another.
  std::vector<int64_t> maps_;
  int64_t map_size_ = 0;  // per sample
};

template <class Fn>
void RandomGather::for_each_source(Fn&& fn) const {
  const int nd = static_cast<int>(y_shape_.size());
  const int ns = nd - base_axis_;
  std::vector<int64_t> yc(static_cast<size_t>(ns), 0), stride(ns, 1),
      start(ns, 0);
  for (int j = ns - 2; j >= 0; --j) {
    stride[j] = stride[j + 1] * x_shape_[base_axis_ + j + 1];
  }
  for (int j = 1; j < ns; ++j) {
    start[j] = start[j - 1] + y_shape_[base_axis_ + j - 1];
  }
  for (int64_t s = 0; s < samples_; ++s) {
    const int64_t* m = maps_.data() + s * map_size_;
    std::fill(yc.begin(), yc.end(), 0);
    for (int64_t e = 0; e < y_sample_; ++e) {
      int64_t src = s * x_sample_;
      for (int j = 0; j < ns && src >= 0; ++j) {
        const int64_t c = m[start[j] + yc[j]];
        src = c < 0 ? -1 : src + c * stride[j];
      }
      fn(s * y_sample_ + e, src);
      for (int j = ns - 1; j >= 0; --j) {  // the next coordinates
        if (++yc[j] < y_shape_[base_axis_ + j]) break;
        yc[j] = 0;
      }
    }
  }
}

/// Each sample's axes in `axes` reversed, each with probability 1/2 (per
/// sample, one draw per axis of x as NNabla's: the axis flips when the draw
/// is odd).
class RandomFlip : public FunctionWith<RandomFlipOptions, RandomGather> {
 public:
  explicit RandomFlip(const RandomFlipOptions& opts)
      : FunctionWith(opts, opts.base_axis, opts.seed) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  void draw_sample(std::mt19937& g, std::vector<int64_t>& d) override;
  int64_t source_along(const std::vector<int64_t>& d, int axis,
                       int64_t c) const override;
  std::vector<bool> flippable_;  // per axis of x
};

/// Each sample shifted along the last shifts.size() axes by its own draws
/// (y[i] = x[i - s], s = draw % (2 max + 1) - max), the places shifted in
/// filled by border_mode.
class RandomShift : public FunctionWith<RandomShiftOptions, RandomGather> {
 public:
  explicit RandomShift(const RandomShiftOptions& opts)
      : FunctionWith(opts, opts.base_axis, opts.seed) {}
  float fill_value() const override { return opts_.constant_value; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  void draw_sample(std::mt19937& g, std::vector<int64_t>& d) override;
  int64_t source_along(const std::vector<int64_t>& d, int axis,
                       int64_t c) const override;
  // border_mode, read once by setup (source_along runs per element).
  enum class Border { nearest, reflect, constant } border_ = Border::nearest;
};

/// Each sample cropped to `shape` at an offset drawn per cropped axis
/// (draw % (size - crop + 1), as NNabla's).
class RandomCrop : public FunctionWith<RandomCropOptions, RandomGather> {
 public:
  explicit RandomCrop(const RandomCropOptions& opts)
      : FunctionWith(opts, opts.base_axis, opts.seed) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  void draw_sample(std::mt19937& g, std::vector<int64_t>& d) override;
  int64_t source_along(const std::vector<int64_t>& d, int axis,
                       int64_t c) const override;
};

/// Random erasing (Zhong et al.), as NNabla's: for each of the n patches
/// and each sample (each channel too without share), in that order, the
/// draws are the area S_e = U(area_ratios) H W, the aspect r_e =
/// U(aspect_ratios), H_e = floor(sqrt(S_e r_e)) and W_e = floor(sqrt(S_e /
/// r_e)) (at most H and W), then u = U(0, 1) and the corner y_e in [0, H -
/// H_e], x_e in [0, W - W_e]; then, patch by patch and sample by sample,
/// where u <= prob every element with y_e <= h <= y_e + H_e and x_e <= w <=
/// x_e + W_e (NNabla's bounds, both included) takes a draw from
/// U(replacements), in memory order. All draws in fp32, rounded to T once.
/// dx = dy outside every erased patch and 0 inside (ste_fine_grained), or
/// dy everywhere.
class RandomErase : public FunctionWith<RandomEraseOptions> {
 public:
  explicit RandomErase(const RandomEraseOptions& opts)
      : FunctionWith(opts), source_(opts.seed) {}
  bool grad_depends_input_data(int) const override { return false; }
  /// x's values (in fp32) with the patches drawn now written in; marks the
  /// erased elements in erased().
  void erase(std::vector<float>& y);
  /// The last forward's erased elements (1), y's shape.
  const std::vector<uint8_t>& erased() const { return erased_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  RandomSource source_;
  int64_t samples_ = 1, c_ = 1, h_ = 1, w_ = 1;
  std::vector<uint8_t> erased_;
};

/// NNabla's ImageAugmentation: each image (the last two axes, with the
/// axis before them as channels) warped by a random scale, aspect ratio,
/// rotation, position, flips and lens distortion (bilinear sampling, the
/// edges repeated), then per channel (x + brightness - contrast_center) *
/// contrast + contrast_center, plus Gaussian noise. The draws are NNabla's
/// (each a 32-bit draw % 1001 / 1000, or % 2, in its order), made image by
/// image in order: NNabla draws them inside an OpenMP loop from one
/// generator, so its results vary with the threads; these do not. In fp32.
class ImageAugmentation : public FunctionWith<ImageAugmentationOptions> {
 public:
  explicit ImageAugmentation(const ImageAugmentationOptions& opts)
      : FunctionWith(opts), source_(opts.seed) {}
  /// y (fp32, y's shape) from x (fp32, x's shape) with new draws.
  void augment(const std::vector<float>& x, std::vector<float>& y);

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  RandomSource source_;
  int64_t images_ = 1, channels_ = 1, h_in_ = 1, w_in_ = 1, h_out_ = 1,
          w_out_ = 1;
};

namespace functions {
/// Random geometric and photometric augmentation of images (NNabla's
/// ImageAugmentation; the defaults change nothing).
VariablePtr image_augmentation(const VariablePtr& x,
                               const ImageAugmentationOptions& opts = {});
/// Erases random patches of each sample with random values (NNabla's
/// RandomErase; the defaults are its).
VariablePtr random_erase(const VariablePtr& x,
                         const RandomEraseOptions& opts = {});
/// Flips each sample along each of `axes` with probability 1/2 (NNabla's
/// RandomFlip; empty axes: the last).
VariablePtr random_flip(const VariablePtr& x, const std::vector<int>& axes = {},
                        int base_axis = 1, int seed = -1);
/// Shifts each sample by up to `shifts` along the last axes (NNabla's
/// RandomShift).
VariablePtr random_shift(const VariablePtr& x, const std::vector<int>& shifts,
                         const std::string& border_mode = "nearest",
                         float constant_value = 0.0f, int base_axis = 1,
                         int seed = -1);
/// Crops each sample's last axes to `shape` at a random place (NNabla's
/// RandomCrop).
VariablePtr random_crop(const VariablePtr& x, const Shape& shape,
                        int base_axis = 1, int seed = -1);
}  // namespace functions

}  // namespace mg
