// RandomFlip, RandomShift and RandomCrop: harness cases with a fixed seed
// against a double reference that makes the same draws (NNabla's order),
// so values and grads are checked; what each does at a new batch size; the
// seed rule; hand-checked maps; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::random_augment_tests {
namespace {

constexpr int kSeed = 7;

// The draws of one sample and the x coordinates (-1: the constant) of y's
// coordinates; both over every axis of x (those before base_axis unused).
using SampleDraw = std::function<std::vector<int64_t>(std::mt19937&)>;
using SampleMap = std::function<std::vector<int64_t>(
    const std::vector<int64_t>& draws, const std::vector<int64_t>& yc)>;

// y of shape ys from x of shape xs, sample by sample (the axes before
// base_axis count the samples).
Doubles gather_samples(const Doubles& x, const Shape& xs, const Shape& ys,
                       int base_axis, const SampleDraw& draw,
                       const SampleMap& map, double fill) {
  const int nd = static_cast<int>(xs.size());
  const int64_t samples = shape_size(xs, 0, base_axis);
  const int64_t xn = shape_size(xs, base_axis, nd);
  const int64_t yn = shape_size(ys, base_axis, nd);
  std::mt19937 g(kSeed);
  Doubles y(static_cast<size_t>(samples * yn));
  for (int64_t s = 0; s < samples; ++s) {
    const auto d = draw(g);
    for (int64_t e = 0; e < yn; ++e) {
      std::vector<int64_t> yc(static_cast<size_t>(nd), 0);
      int64_t r = e;
      for (int a = nd - 1; a >= base_axis; --a) {
        yc[a] = r % ys[a];
        r /= ys[a];
      }
      const auto xc = map(d, yc);
      int64_t src = 0;
      bool constant = false;
      for (int a = base_axis; a < nd; ++a) {
        constant = constant || xc[a] < 0;
        src = src * xs[a] + xc[a];
      }
      y[s * yn + e] = constant ? fill : x[s * xn + src];
    }
  }
  return y;
}

const char* kNewDraws =
    "new draws at each forward, so no fresh graph draws the same "
    "(RandomAugment.ANewBatchSizeKeepsEachRule checks b -> b + 3 -> 1)";

harness::Case flip_case(Shape xs, std::vector<int> axes, int base_axis) {
  return {shape_str(xs) + " axes " + std::to_string(axes.size()),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::random_flip(in[0], axes, base_axis, kSeed);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(xs.size());
              std::vector<bool> flippable(nd, false);
              if (axes.empty()) flippable[nd - 1] = true;
              for (int a : axes) flippable[a < 0 ? a + nd : a] = true;
              return gather_samples(
                  in[0], xs, xs, base_axis,
                  [=](std::mt19937& g) {
                    std::vector<int64_t> d(nd);
                    for (int a = 0; a < nd; ++a)
                      d[a] = (g() % 2) && flippable[a];
                    return d;
                  },
                  [=](const std::vector<int64_t>& d,
                      const std::vector<int64_t>& yc) {
                    auto xc = yc;
                    for (int a = 0; a < nd; ++a) {
                      if (d[a]) xc[a] = xs[a] - 1 - yc[a];
                    }
                    return xc;
                  },
                  0.0);
            };
            return c;
          },
          false,
          true,
          {},
          kNewDraws};
}

harness::Case shift_case(Shape xs, std::vector<int> shifts, std::string mode) {
  return {shape_str(xs) + " " + mode,
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::random_shift(in[0], shifts, mode, 0.5f, 1, kSeed);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(xs.size());
              const int m = static_cast<int>(shifts.size());
              return gather_samples(
                  in[0], xs, xs, 1,
                  [=](std::mt19937& g) {
                    std::vector<int64_t> d(nd, 0);
                    for (int k = 0; k < m; ++k) {
                      d[nd - m + k] =
                          static_cast<int64_t>(g() % (2 * shifts[k] + 1)) -
                          shifts[k];
                    }
                    return d;
                  },
                  [=](const std::vector<int64_t>& d,
                      const std::vector<int64_t>& yc) {
                    auto xc = yc;
                    for (int a = 1; a < nd; ++a) {
                      const int64_t n = xs[a];
                      int64_t i = yc[a] - d[a];
                      if (mode == "nearest") {
                        i = std::clamp<int64_t>(i, 0, n - 1);
                      } else if (mode == "reflect") {
                        // Mirror with the edge repeated: ... 1 0 | 0 1 .. n-1
                        // | n-1 n-2 ...
                        while (i < 0 || i >= n)
                          i = i < 0 ? -1 - i : 2 * n - 1 - i;
                      } else if (i < 0 || i >= n) {
                        i = -1;
                      }
                      xc[a] = i;
                    }
                    return xc;
                  },
                  0.5);
            };
            return c;
          },
          false,
          true,
          {},
          kNewDraws};
}

harness::Case crop_case(Shape xs, Shape crop) {
  return {shape_str(xs) + " to " + shape_str(crop),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::random_crop(in[0], crop, 1, kSeed);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = static_cast<int>(xs.size());
              const int m = static_cast<int>(crop.size());
              Shape ys = xs;
              for (int k = 0; k < m; ++k) ys[nd - m + k] = crop[k];
              return gather_samples(
                  in[0], xs, ys, 1,
                  [=](std::mt19937& g) {
                    std::vector<int64_t> d(nd, 0);
                    for (int a = nd - m; a < nd; ++a) {
                      d[a] = g() % (xs[a] - ys[a] + 1);
                    }
                    return d;
                  },
                  [=](const std::vector<int64_t>& d,
                      const std::vector<int64_t>& yc) {
                    auto xc = yc;
                    for (int a = 0; a < nd; ++a) xc[a] += d[a];
                    return xc;
                  },
                  0.0);
            };
            return c;
          },
          false,
          true,
          {},
          kNewDraws};
}

// RandomErase's draws as documented in functions/random_augment.hpp, made
// here again: x (B, C, H, W) with the erased values written in; `erased`
// marks them.
Doubles erase_ref(const Doubles& x, const Shape& xs,
                  const RandomEraseOptions& o, std::vector<bool>* erased) {
  const int64_t B = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t per = o.share ? 1 : C;
  std::mt19937 g(static_cast<uint32_t>(o.seed));
  std::uniform_real_distribution<float> unit(0, 1);
  std::uniform_real_distribution<float> area(o.area_ratios[0],
                                             o.area_ratios[1]);
  std::uniform_real_distribution<float> aspect(o.aspect_ratios[0],
                                               o.aspect_ratios[1]);
  struct Patch {
    float u;
    int64_t y0, x0, he, we;
  };
  std::vector<Patch> patches;
  for (int64_t k = 0; k < o.n * B * per; ++k) {
    const float se = area(g) * static_cast<float>(H * W), re = aspect(g);
    Patch p;
    p.he = std::min<int64_t>(static_cast<int64_t>(std::sqrt(se * re)), H);
    p.we = std::min<int64_t>(static_cast<int64_t>(std::sqrt(se / re)), W);
    p.u = unit(g);
    p.y0 = std::uniform_int_distribution<int>(0, static_cast<int>(H - p.he))(g);
    p.x0 = std::uniform_int_distribution<int>(0, static_cast<int>(W - p.we))(g);
    patches.push_back(p);
  }
  std::uniform_real_distribution<float> value(o.replacements[0],
                                              o.replacements[1]);
  Doubles y = x;
  erased->assign(y.size(), false);
  for (int64_t k = 0; k < o.n; ++k) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t c = 0; c < C; ++c) {
        const Patch& p = patches[(k * B + b) * per + (o.share ? 0 : c)];
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t w = 0; w < W; ++w) {
            if (p.u <= o.prob && h >= p.y0 && h <= p.y0 + p.he && w >= p.x0 &&
                w <= p.x0 + p.we) {
              const int64_t e = ((b * C + c) * H + h) * W + w;
              y[e] = value(g);
              (*erased)[e] = true;
            }
          }
        }
      }
    }
  }
  return y;
}

RandomEraseOptions erase_options(bool share, int n) {
  RandomEraseOptions o;
  o.prob = 0.7f;
  o.area_ratios = {0.05f, 0.3f};
  o.replacements = {-1.0f, 1.0f};
  o.n = n;
  o.share = share;
  o.seed = kSeed;
  return o;
}

harness::Case erase_case(Shape xs, bool share, int n) {
  return {shape_str(xs) + (share ? " share" : " per channel") + " n " +
              std::to_string(n),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            const RandomEraseOptions o = erase_options(share, n);
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::random_erase(in[0], o);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              std::vector<bool> erased;
              return erase_ref(in[0], xs, o, &erased);
            };
            return c;
          },
          false,
          true,
          {},
          kNewDraws};
}

// ImageAugmentation with flips, brightness per channel and contrast (no
// warp: the pixels land on whole positions), from the same draws: x (N, C,
// H, W).
Doubles augment_ref(const Doubles& x, const Shape& xs,
                    const ImageAugmentationOptions& o) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  std::mt19937 g(static_cast<uint32_t>(o.seed));
  auto unit = [&g] { return static_cast<float>(g() % 1001) * 0.001f; };
  Doubles y(x.size());
  for (int64_t n = 0; n < N; ++n) {
    for (int k = 0; k < 5; ++k) unit();  // scale, aspect, angle, position
    const bool lr = (g() % 2) && o.flip_lr, ud = (g() % 2) && o.flip_ud;
    const float b = unit() * o.brightness * 2.0f - o.brightness;
    const float k = std::exp(unit() * std::log(o.contrast) * 2.0f) / o.contrast;
    std::vector<float> bc(C, b), kc(C, k);
    for (int64_t c = 0; c < C; ++c) {
      if (o.brightness_each)
        bc[c] = unit() * o.brightness * 2.0f - o.brightness;
      if (o.contrast_each) {
        kc[c] = std::exp(unit() * std::log(o.contrast) * 2.0f) / o.contrast;
      }
    }
    unit();  // distortion
    unit();  // noise
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t w = 0; w < W; ++w) {
          const double v = x[((n * C + c) * H + (ud ? H - 1 - h : h)) * W +
                             (lr ? W - 1 - w : w)];
          y[((n * C + c) * H + h) * W + w] =
              (v + bc[c] - o.contrast_center) * kc[c] + o.contrast_center;
        }
      }
    }
  }
  return y;
}

harness::Case augment_case(const char* label, Shape xs,
                           ImageAugmentationOptions o, bool reference) {
  o.seed = kSeed;
  return {label,
          [=] {
            FunctionCheck c;
            c.inputs = {InputSpec(xs, -1.0f, 1.0f, /*need_grad=*/false)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::image_augmentation(in[0], o);
            };
            // A warp with a random scale and angle has no reference here:
            // its half and bfloat16 runs are compared with float, and
            // ImageAugmentation's tests check the warp's properties.
            if (reference) {
              c.reference = [=](const std::vector<Doubles>& in) {
                return augment_ref(in[0], xs, o);
              };
            }
            c.check_grad = false;  // no grad, as NNabla's
            return c;
          },
          false,
          true,
          {},
          kNewDraws};
}

ImageAugmentationOptions photometric() {
  ImageAugmentationOptions o;
  o.flip_lr = o.flip_ud = true;
  o.brightness = 0.3f;
  o.brightness_each = true;
  o.contrast = 1.5f;
  o.contrast_center = 0.5f;
  return o;
}

ImageAugmentationOptions warp() {
  ImageAugmentationOptions o;
  o.shape = {5, 6};
  o.pad = {1, 2};
  o.min_scale = 0.8f;
  o.max_scale = 1.25f;
  o.angle = 0.3f;
  o.aspect_ratio = 1.3f;
  o.distortion = 0.2f;
  return o;
}

const bool kAugment =
    harness::add(
        decl::ImageAugmentation,
        {augment_case("defaults: the identity", {3, 2, 5, 6}, {}, true),
         augment_case("flips, brightness, contrast", {6, 3, 4, 5},
                      photometric(), true),
         augment_case("a warp", {3, 2, 7, 8}, warp(), false)}) &&
    harness::add(decl::RandomErase, {erase_case({4, 2, 6, 7}, true, 1),
                                     erase_case({3, 3, 5, 6}, false, 2)}) &&
    harness::add(decl::RandomFlip,
                 {flip_case({6, 2, 3, 4}, {2, 3}, 1), flip_case({5, 7}, {}, 1),
                  flip_case({2, 3, 4, 5}, {-1}, 2)}) &&
    harness::add(decl::RandomShift,
                 {shift_case({5, 2, 6, 7}, {2, 3}, "nearest"),
                  shift_case({5, 3, 4}, {1, 5}, "reflect"),
                  shift_case({5, 2, 6, 7}, {3, 2}, "constant")}) &&
    harness::add(decl::RandomCrop, {crop_case({5, 3, 8, 7}, {4, 5}),
                                    crop_case({4, 3, 6, 5}, {2, 4, 3})});

VariablePtr ramp(const Shape& shape, bool need_grad = false) {
  auto x = make_variable(shape, need_grad);
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) p[i] = static_cast<float>(i);
  return x;
}

TEST(RandomFlip, EachSampleIsXOrItsMirrorAndTheGradFollows) {
  auto x = ramp({200, 3}, true);
  auto y = F::random_flip(x, {1}, 1, 4);
  y->forward();
  x->grad()->zero();
  auto dy = make_ndarray({200, 3});
  float* w = dy->cast<float>(true);
  for (int i = 0; i < 600; ++i) w[i] = static_cast<float>(i % 3 + 1);
  y->backward(dy);
  const Doubles yd = to_doubles(y), gd = grad_doubles(x);
  int flipped = 0;
  for (int s = 0; s < 200; ++s) {
    const double b = 3 * s;
    const bool f = yd[3 * s] == b + 2;
    flipped += f;
    EXPECT_EQ(yd[3 * s + 1], b + 1);
    EXPECT_EQ(yd[3 * s + 2], f ? b : b + 2);
    if (!f) {
      EXPECT_EQ(yd[3 * s], b);
    }
    // dy = (1, 2, 3) goes back mirrored with the values.
    EXPECT_EQ(gd[3 * s], f ? 3 : 1);
    EXPECT_EQ(gd[3 * s + 2], f ? 1 : 3);
  }
  EXPECT_GT(flipped, 60);  // 100 expected
  EXPECT_LT(flipped, 140);
}

TEST(RandomShift, EachSampleIsAShiftWithinTheRange) {
  auto x = ramp({100, 9});
  auto y = F::random_shift(x, {2}, "constant", -1.0f, 1, 5);
  y->forward();
  const Doubles yd = to_doubles(y);
  std::vector<int> seen(5, 0);
  for (int s = 0; s < 100; ++s) {
    int found = 0;
    for (int t = -2; t <= 2; ++t) {
      bool match = true;
      for (int i = 0; i < 9; ++i) {
        const int src = i - t;
        const double want = src < 0 || src >= 9 ? -1.0 : 9.0 * s + src;
        match = match && yd[9 * s + i] == want;
      }
      if (match) ++seen[t + 2], ++found;
    }
    EXPECT_EQ(found, 1) << s;
  }
  for (int n : seen) EXPECT_GT(n, 5);  // 20 expected each
}

TEST(RandomCrop, EachSampleIsAWindowOfX) {
  auto x = ramp({50, 2, 6, 5}, true);
  auto y = F::random_crop(x, {3, 2}, 1, 6);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{50, 2, 3, 2}));
  const Doubles yd = to_doubles(y);
  for (int s = 0; s < 50; ++s) {
    const double* v = yd.data() + s * 12;
    const int64_t first = static_cast<int64_t>(v[0]) - s * 60;
    const int64_t top = first / 5, left = first % 5;
    ASSERT_LE(top, 3);
    ASSERT_LE(left, 3);
    for (int c = 0; c < 2; ++c) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) {
          EXPECT_EQ(v[c * 6 + i * 2 + j],
                    s * 60 + c * 30 + (top + i) * 5 + left + j);
        }
      }
    }
  }
  // Cropping nothing (NNabla's default shape) is the identity.
  auto same = F::random_crop(x, {}, 1, 6);
  same->forward();
  EXPECT_EQ(to_doubles(same), to_doubles(x));
}

// The harness's batch-change check, for functions whose draws are new at
// each forward: after b -> b + 3 -> 1 each sample still follows its rule
// (checked through the map the function shows, against x and dx).
TEST(RandomAugment, ANewBatchSizeKeepsEachRule) {
  struct Make {
    const char* what;
    std::function<VariablePtr(const VariablePtr&)> f;
  };
  const Make makes[] = {
      {"flip",
       [](const VariablePtr& x) {
         return F::random_flip(x, {2, 3}, 1, 3);
       }},
      {"shift",
       [](const VariablePtr& x) {
         return F::random_shift(x, {1, 2}, "reflect", 0, 1, 3);
       }},
      {"crop",
       [](const VariablePtr& x) {
         return F::random_crop(x, {3, 3}, 1, 3);
       }},
  };
  for (const Make& m : makes) {
    SCOPED_TRACE(m.what);
    auto x = ramp({4, 2, 5, 4}, true);
    auto y = m.f(x);
    y->forward();
    for (int64_t batch : {7, 1}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      x->reshape({batch, 2, 5, 4});
      float* p = x->data()->cast<float>(true);
      for (int64_t i = 0; i < x->size(); ++i) p[i] = static_cast<float>(i);
      x->grad()->zero();
      y->forward();
      y->backward();
      ASSERT_EQ(y->shape()[0], batch);
      const auto map =
          static_cast<RandomGather&>(y->parent()->function()).source_map();
      ASSERT_EQ(static_cast<int64_t>(map.size()), y->size());
      const Doubles yd = to_doubles(y), gd = grad_doubles(x);
      const int64_t yn = y->size() / batch, xn = x->size() / batch;
      Doubles count(gd.size(), 0.0);
      for (size_t e = 0; e < map.size(); ++e) {
        ASSERT_GE(map[e], 0);
        EXPECT_EQ(map[e] / xn, static_cast<int64_t>(e) / yn);  // same sample
        EXPECT_EQ(yd[e], static_cast<double>(map[e]));
        count[map[e]] += 1;
      }
      EXPECT_EQ(gd, count);
    }
  }
}

TEST(RandomAugment, MinusOneDrawsFromTheLibraryGenerator) {
  auto x = ramp({64, 8});
  auto y = F::random_flip(x);
  mg::seed(11);
  y->forward();
  const Doubles a = to_doubles(y);
  y->forward();
  EXPECT_NE(to_doubles(y), a);
  mg::seed(11);
  y->forward();
  EXPECT_EQ(to_doubles(y), a);
}

TEST(RandomErase, PatchesAndTheirGrads) {
  RandomEraseOptions o = erase_options(true, 2);
  o.replacements = {10.0f, 20.0f};  // apart from x's values in [0, 1)
  auto x = make_variable({8, 3, 9, 10}, true);
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) p[i] = (i % 97) / 97.0f;
  auto y = F::random_erase(x, o);
  y->forward();
  std::vector<bool> erased;
  const Doubles ref = erase_ref(to_doubles(x), x->shape(), o, &erased);
  expect_near(to_doubles(y), ref, 0, 1e-6, "y against the reference");
  int64_t count = 0;
  for (bool e : erased) count += e;
  EXPECT_GT(count, 0);
  EXPECT_LT(count, x->size());
  // With share every channel of a sample has the same patch.
  for (int64_t b = 0; b < 8; ++b) {
    for (int64_t i = 0; i < 90; ++i) {
      EXPECT_EQ(erased[b * 270 + i], erased[b * 270 + 180 + i]);
    }
  }
  x->grad()->zero();
  y->backward();
  const Doubles gd = grad_doubles(x);
  for (size_t e = 0; e < gd.size(); ++e) EXPECT_EQ(gd[e], erased[e] ? 0 : 1);
  // Without ste_fine_grained the grad passes everywhere.
  o.ste_fine_grained = false;
  auto y2 = F::random_erase(x, o);
  y2->forward();
  x->grad()->zero();
  y2->backward();
  EXPECT_EQ(grad_doubles(x), Doubles(gd.size(), 1.0));
}

TEST(RandomErase, ChannelLastErasesTheSamePixels) {
  RandomEraseOptions o = erase_options(true, 1);
  o.prob = 1.0f;
  auto x = make_variable({5, 2, 6, 7});
  auto xl = F::transpose(x, {0, 2, 3, 1});
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) p[i] = 0.5f;
  auto y = F::random_erase(x, o);
  o.channel_last = true;
  auto yl = F::transpose(F::random_erase(xl, o), {0, 3, 1, 2});
  y->forward();
  yl->forward();
  // The same patches (the same draws before the values): erased where y is.
  const Doubles a = to_doubles(y), b = to_doubles(yl);
  for (size_t e = 0; e < a.size(); ++e)
    EXPECT_EQ(a[e] == 0.5, b[e] == 0.5) << e;
}

TEST(ImageAugmentation, AWarpStaysWithinXsRangeAndTakesItsShape) {
  auto x = make_variable({4, 3, 12, 10});
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < x->size(); ++i) p[i] = static_cast<float>(i % 7);
  ImageAugmentationOptions o = warp();
  o.shape = {3, 8, 9};
  auto y = F::image_augmentation(x, o);
  EXPECT_EQ(y->shape(), (Shape{4, 3, 8, 9}));
  y->forward();
  // Bilinear sampling with the edges repeated: inside x's range.
  for (double v : to_doubles(y)) {
    EXPECT_GE(v, -1e-5);
    EXPECT_LE(v, 6 + 1e-5);
  }
  // The brightness alone shifts every pixel of an image by one draw.
  ImageAugmentationOptions b;
  b.brightness = 0.5f;
  auto yb = F::image_augmentation(x, b);
  yb->forward();
  const Doubles xd = to_doubles(x), bd = to_doubles(yb);
  for (int64_t n = 0; n < 4; ++n) {
    const double shift = bd[n * 360] - xd[n * 360];
    EXPECT_LE(std::abs(shift), 0.5 + 1e-6);
    for (int64_t i = 0; i < 360; ++i) {
      EXPECT_NEAR(bd[n * 360 + i] - xd[n * 360 + i], shift, 1e-5);
    }
  }
}

TEST(ImageAugmentation, NoiseAndTheLibraryGenerator) {
  auto x = make_variable({2, 1, 6, 6});
  x->data()->zero();
  ImageAugmentationOptions o;
  o.noise = 1.0f;
  auto y = F::image_augmentation(x, o);
  mg::seed(3);
  y->forward();
  const Doubles a = to_doubles(y);
  EXPECT_NE(a, Doubles(a.size(), 0.0));
  y->forward();
  EXPECT_NE(to_doubles(y), a);
  mg::seed(3);
  y->forward();
  EXPECT_EQ(to_doubles(y), a);
}

TEST(RandomAugment, BadArgumentsNameTheFunction) {
  expect_error(
      [] {
        ImageAugmentationOptions o;
        o.shape = {4, 5, 6};
        F::image_augmentation(make_variable({2, 3, 7, 7}), o);
      },
      {"shape (4, 5, 6) must end in (H, W)", "(2, 3, 7, 7)"},
      "[image_augmentation] ");
  expect_error(
      [] {
        ImageAugmentationOptions o;
        o.contrast = 0;
        F::image_augmentation(make_variable({2, 3, 7, 7}), o);
      },
      {"contrast 0 must be above 0"}, "[image_augmentation] ");
  expect_error(
      [] {
        F::random_erase(make_variable({2, 3, 4}));
      },
      {"x with shape (2, 3, 4) and base_axis 1 must have 3 axes"},
      "[random_erase] ");
  expect_error(
      [] {
        RandomEraseOptions o;
        o.area_ratios = {0.5f};
        F::random_erase(make_variable({2, 3, 4, 4}), o);
      },
      {"area_ratios must be (low, high)"}, "[random_erase] ");
  expect_error(
      [] {
        RandomEraseOptions o;
        o.prob = 2;
        F::random_erase(make_variable({2, 3, 4, 4}), o);
      },
      {"prob 2 must be in [0, 1]"}, "[random_erase] ");
  expect_error(
      [] {
        F::random_flip(make_variable({2, 3, 4}), {0});
      },
      {"axis 0 of x with shape (2, 3, 4) is before base_axis 1"},
      "[random_flip] ");
  expect_error(
      [] {
        F::random_flip(make_variable({2, 3}), {2});
      },
      {"axis 2 is out of range for x with shape (2, 3)"}, "[random_flip] ");
  expect_error(
      [] {
        F::random_shift(make_variable({2, 3}), {1}, "wrap");
      },
      {"border_mode \"wrap\" is not one of"}, "[random_shift] ");
  expect_error(
      [] {
        F::random_shift(make_variable({2, 3}), {1, 1});
      },
      {"shift 1 of axis 0", "0 before base_axis 1"}, "[random_shift] ");
  expect_error(
      [] {
        F::random_crop(make_variable({2, 3, 4}), {4, 4});
      },
      {"shape (4, 4) must fit in the last axes of x with shape (2, 3, "
       "4)"},
      "[random_crop] ");
  expect_error(
      [] {
        F::random_crop(make_variable({2, 3}), {1, 2});
      },
      {"shape (1, 2) would crop axis 0 of x with shape (2, 3), which is "
       "before base_axis 1 (a batch axis): give it x's size 2"},
      "[random_crop] ");
  expect_error(
      [] {
        F::random_crop(make_variable({2, 3}), {2, 2, 2});
      },
      {"shape (2, 2, 2) has more axes than x with shape (2, 3)"},
      "[random_crop] ");
}

// NNabla's default shape is x's whole shape, the batch axis included: it
// loads and crops nothing; a batch axis may be named but not cropped.
TEST(RandomCrop, NNablasDefaultShapeCropsNothing) {
  auto x = variable_from({2, 3}, {1, 2, 3, 4, 5, 6});
  const FunctionArgs nnabla = {{"shape", std::vector<int64_t>{2, 3}},
                               {"base_axis", int64_t{1}},
                               {"seed", int64_t{-1}}};
  for (const FunctionArgs& a : {nnabla, FunctionArgs{}}) {
    EXPECT_EQ(to_doubles(apply_from_args("RandomCrop", a, {x})[0]),
              to_doubles(x));
  }
  auto cropped = apply_from_args("RandomCrop",
                                 {{"shape", std::vector<int64_t>{2, 2}}}, {x});
  EXPECT_EQ(cropped[0]->shape(), (Shape{2, 2}));
  expect_error(
      [&] {
        apply_from_args("RandomCrop", {{"shape", std::vector<int64_t>{1, 3}}},
                        {x});
      },
      {"would crop axis 0 of x with shape (2, 3), which is before base_axis 1"},
      "[random_crop] ");
}

}  // namespace
}  // namespace mg::test::random_augment_tests
