// cpu/conv_dnnl, the oneDNN convolutions under Convolution and
// Deconvolution, on batches large enough to be cut into chunks (with a
// shorter last one): forward, backward data and backward weights with the
// fused bias grad, accumulation, fp32 weights for half, fp32 weight grads,
// in float, half and bfloat16, against a double reference; and the weight
// grad of small maps as one matrix product (conv_weights_product.cpp).
#include <gtest/gtest.h>

#include <mixgraph/contexts/cpu/channel_blocks.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/conv_direct.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/conv_winograd.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>

#include <omp.h>

#include <cmath>
#include <memory>
#include <random>

#include "../support/function_tester.hpp"

namespace mg::test::conv_dnnl_tests {
namespace {

// Values k / 16 with |k| <= 16: exact in half, bfloat16 and float, and so
// are their products and the fp32 sums of this test's sizes: what differs
// between the paths is the rounding of each result alone.
std::vector<float> grid_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-16, 16);
  std::vector<float> v(n);
  for (float& x : v) x = k(rng) / 16.0f;
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  std::vector<T> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = T(v[i]);
  return r;
}

template <class T>
Doubles doubles(const std::vector<T>& v) {
  Doubles d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = static_cast<float>(v[i]);
  return d;
}

// A 2-D geometry: 37 images of 16 x 14 x 14, 8 x 3 x 3 kernels, stride 1,
// pad 1 (or stride 2, pad 0, groups 2). An image's activations are about
// 19 KB in fp32, so with 512 KB chunks (ChunkBytes below) the batch runs
// in two chunks (19 and 18 images).
ConvGeometry geometry(bool strided) {
  ConvGeometry g;
  g.batch = 37, g.in_channels = 16, g.out_channels = 8;
  g.group = strided ? 2 : 1;
  g.in_spatial = {14, 14};
  g.kernel = {3, 3};
  g.pad = strided ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{1, 1};
  g.stride = strided ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{1, 1};
  g.dilation = {1, 1};
  g.out_spatial =
      strided ? std::vector<int64_t>{6, 6} : std::vector<int64_t>{14, 14};
  return g;
}

// Calls fn(n, o, c, y index, x index, w index) for every product of the
// convolution.
template <class Fn>
void for_each_tap(const ConvGeometry& g, Fn&& fn) {
  const int64_t cg = g.in_channels / g.group, og = g.out_channels / g.group;
  const int64_t ih = g.in_spatial[0], iw = g.in_spatial[1];
  const int64_t oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t o = 0; o < g.out_channels; ++o)
      for (int64_t ci = 0; ci < cg; ++ci) {
        const int64_t c = (o / og) * cg + ci;
        for (int64_t p = 0; p < oh; ++p)
          for (int64_t q = 0; q < ow; ++q)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t r =
                    p * g.stride[0] - g.pad[0] + i * g.dilation[0];
                const int64_t s =
                    q * g.stride[1] - g.pad[1] + j * g.dilation[1];
                if (r < 0 || r >= ih || s < 0 || s >= iw) continue;
                fn(((n * g.out_channels + o) * oh + p) * ow + q,
                   ((n * g.in_channels + c) * ih + r) * iw + s,
                   ((o * cg + ci) * kh + i) * kw + j);
              }
      }
}

struct Reference {
  Doubles y, dx, dw, db;
};

// y = conv(x, w) + b, dx and dw for dy, db = sums of dy, plus `base` added
// to each (accumulation).
Reference reference(const ConvGeometry& g, const std::vector<float>& x,
                    const std::vector<float>& w, const std::vector<float>& b,
                    const std::vector<float>& dy, double base) {
  Reference r;
  r.y.assign(g.y_size(), base);
  r.dx.assign(g.x_size(), base);
  r.dw.assign(g.w_size(), base);
  r.db.assign(g.out_channels, 0.0);
  const int64_t spatial = g.out_spatial[0] * g.out_spatial[1];
  for (int64_t i = 0; i < g.y_size(); ++i) {
    r.y[i] += b[(i / spatial) % g.out_channels];
    r.db[(i / spatial) % g.out_channels] += dy[i];
  }
  for_each_tap(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    r.y[yi] += static_cast<double>(x[xi]) * w[wi];
    r.dx[xi] += static_cast<double>(dy[yi]) * w[wi];
    r.dw[wi] += static_cast<double>(dy[yi]) * x[xi];
  });
  return r;
}

// Fixes the chunk size for a scope (the automatic one follows the L3 cache
// and could hold the whole batch).
struct ChunkBytes {
  explicit ChunkBytes(int64_t bytes) { cpu::set_conv_chunk_bytes(bytes); }
  ~ChunkBytes() { cpu::set_conv_chunk_bytes(0); }
};

// Grid values for x, w, b and dy of g (seeds seed .. seed + 3) and the
// reference for them, `base` added to each result.
struct Problem {
  std::vector<float> x, w, b, dy;
  Reference ref;
};
Problem problem(const ConvGeometry& g, uint32_t seed, double base) {
  Problem p{grid_values(g.x_size(), seed),
            grid_values(g.w_size(), seed + 1),
            grid_values(g.out_channels, seed + 2),
            grid_values(g.y_size(), seed + 3),
            {}};
  p.ref = reference(g, p.x, p.w, p.b, p.dy, base);
  return p;
}

// Output maps of 4 x 3 (12 positions), from 7 x 5 inputs, a 3 x 2 kernel,
// stride (2, 1), pad (1, 0), dilation (1, 2): cpu::weights_by_product()
// takes the weight grad as one matrix product there.
ConvGeometry small_maps() {
  ConvGeometry g;
  g.batch = 5, g.in_channels = 6, g.out_channels = 4;
  g.in_spatial = {7, 5};
  g.kernel = {3, 2};
  g.pad = {1, 0};
  g.stride = {2, 1};
  g.dilation = {1, 2};
  g.out_spatial = {4, 3};
  return g;
}

// How check_weight_grad takes the weight grad: as conv_backward_weights
// chooses, or by one of our two products whatever the maps.
enum class Way { chosen, im2col, taps };

// The weight grad alone (with the bias grad) against the reference.
template <class T, class GT>
void check_weight_grad(const ConvGeometry& g, bool accum, double rtol,
                       Way way = Way::chosen) {
  const float base = accum ? 0.5f : 0.0f;
  const Problem p = problem(g, 5, base);
  const Reference& ref = p.ref;
  const auto xt = as<T>(p.x), dyt = as<T>(p.dy);
  auto dw = as<GT>(std::vector<float>(g.w_size(), base));
  std::vector<float> db(g.out_channels, 99.0f);
  if (way == Way::im2col) {
    cpu::conv_backward_weights_im2col<T>(g, xt.data(), dyt.data(), dw.data(),
                                         accum, db.data());
  } else if (way == Way::taps) {
    cpu::conv_backward_weights_taps<T>(g, xt.data(), dyt.data(), dw.data(),
                                       accum, db.data());
  } else {
    cpu::conv_backward_weights<T>(g, xt.data(), dyt.data(), dw.data(), accum,
                                  db.data());
  }
  expect_near(doubles(dw), ref.dw, 1e-6, rtol, "dw");
  expect_near(doubles(db), ref.db, 1e-6, 0, "db");
}

// Runs the three passes on T (weights given as WT, weight grad written as
// GT, by check_weight_grad on values of its own) and compares with the
// reference; rtol is one rounding of a result.
template <class T, class WT, class GT>
void check_conv(const ConvGeometry& g, bool accum, double rtol,
                double grad_rtol, int64_t chunk_bytes = int64_t{512} << 10) {
  const ChunkBytes chunks(chunk_bytes);
  const float base = accum ? 0.5f : 0.0f;
  const Problem p = problem(g, 1, base);
  const Reference& ref = p.ref;
  const auto xt = as<T>(p.x), dyt = as<T>(p.dy);
  const auto wt = as<WT>(p.w);
  const cpu::Operand wo{wt.data(), dtype_of<WT>};
  auto y = as<T>(std::vector<float>(g.y_size(), base));
  cpu::conv_forward<T>(g, xt.data(), wo, p.b.data(), y.data(), accum);
  expect_near(doubles(y), ref.y, 1e-6, rtol, "y");
  auto dx = as<T>(std::vector<float>(g.x_size(), base));
  cpu::conv_backward_data<T>(g, dyt.data(), wo, dx.data(), accum);
  expect_near(doubles(dx), ref.dx, 1e-6, rtol, "dx");
  check_weight_grad<T, GT>(g, accum, grad_rtol);
}

template <class T, class WT, class GT>
void check_conv(bool strided, bool accum, double rtol, double grad_rtol) {
  check_conv<T, WT, GT>(geometry(strided), accum, rtol, grad_rtol);
}

TEST(ConvDnnl, FloatChunkedBatch) {
  check_conv<float, float, float>(false, false, 0, 0);
}
TEST(ConvDnnl, FloatStridedGroupsAccumulate) {
  check_conv<float, float, float>(true, true, 0, 0);
}

// Half runs oneDNN's fp32 kernels: fp32 master weights are taken as they
// are, and a weight grad can be written in fp32 with no rounding at all.
TEST(ConvDnnl, HalfWithFloatWeightsAndFloatWeightGrad) {
  check_conv<Half, float, float>(false, false, 1e-3, 0);
}
TEST(ConvDnnl, HalfAccumulates) {
  check_conv<Half, Half, Half>(true, true, 1e-3, 1e-3);
}

TEST(ConvDnnl, BFloat16) {
  check_conv<BFloat16, BFloat16, BFloat16>(false, false, 8e-3, 8e-3);
}
TEST(ConvDnnl, BFloat16WithFloatWeightsAccumulates) {
  check_conv<BFloat16, float, float>(true, true, 8e-3, 0);
}

// Channels in blocks of 16 and one group: fp32 master weights go into
// oneDNN's blocked layouts (bf16's pairs of channels, fp32's plain blocks),
// here with padded blocks (20 and 33 channels) too.
ConvGeometry sixteen_blocks(int64_t in_channels, int64_t out_channels) {
  ConvGeometry g = geometry(false);
  g.batch = 6, g.in_channels = in_channels, g.out_channels = out_channels;
  g.in_spatial = g.out_spatial = {10, 10};
  return g;
}
TEST(ConvDnnl, FloatWeightsInChannelBlocks) {
  for (const ConvGeometry& g :
       {sixteen_blocks(32, 48), sixteen_blocks(20, 33)}) {
    SCOPED_TRACE(std::to_string(g.in_channels) + " -> " +
                 std::to_string(g.out_channels) + " channels");
    check_conv<BFloat16, float, float>(g, false, 8e-3, 0);
    check_conv<BFloat16, float, float>(g, true, 8e-3, 0);
    check_conv<Half, float, float>(g, false, 1e-3, 0);
    check_conv<float, float, float>(g, true, 0, 0);
  }
}

// A convolution's backward with a ConvStaging: the weight pass takes the
// dy its data pass brought into oneDNN's layout (a deconvolution's weight
// pass, the array its forward pass brought in), and computes what the
// passes compute apart, to the bit; never a copy of another array, nor of
// a chunk of the batch. `taken`: how many copies the weight pass should
// take (0 where the batch runs in chunks; -1: not checked).
template <class T>
void check_staged_backward(const ConvGeometry& g, int64_t chunk_bytes,
                           int taken) {
  const ChunkBytes chunks(chunk_bytes);
  const Problem p = problem(g, 7, 0.0);
  const auto x = as<T>(p.x), dy = as<T>(p.dy);
  const auto other_dy = as<T>(grid_values(g.y_size(), 99));
  const cpu::Operand w{p.w.data(), Dtype::f32};
  std::vector<T> dx(g.x_size()), dx_staged(g.x_size());
  std::vector<T> y(g.y_size()), y_staged(g.y_size());
  std::vector<float> dw(g.w_size()), dw_staged(g.w_size());
  std::vector<float> dw_other(g.w_size()), dw_other_staged(g.w_size());
  cpu::conv_backward_data<T>(g, dy.data(), w, dx.data());
  cpu::conv_backward_weights<T, float>(g, x.data(), dy.data(), dw.data());
  cpu::conv_backward_weights<T, float>(g, x.data(), other_dy.data(),
                                       dw_other.data());
  cpu::conv_forward<T>(g, x.data(), w, nullptr, y.data());
  {
    cpu::ConvStaging staging;  // Convolution's backward
    cpu::conv_backward_data<T>(g, dy.data(), w, dx_staged.data(), false,
                               nullptr, &staging);
    cpu::conv_backward_weights<T, float>(
        g, x.data(), dy.data(), dw_staged.data(), false, nullptr, &staging);
    if (taken >= 0) {
      EXPECT_EQ(staging.reused(), taken) << "dy";
    }
  }
  {
    cpu::ConvStaging staging;  // another dy: its own copy
    cpu::conv_backward_data<T>(g, dy.data(), w, dx_staged.data(), false,
                               nullptr, &staging);
    cpu::conv_backward_weights<T, float>(g, x.data(), other_dy.data(),
                                         dw_other_staged.data(), false, nullptr,
                                         &staging);
    EXPECT_EQ(staging.reused(), 0) << "another dy";
  }
  {
    cpu::ConvStaging staging;  // Deconvolution's: x read by both passes
    cpu::conv_forward<T>(g, x.data(), w, nullptr, y_staged.data(), false,
                         &staging);
    cpu::conv_backward_weights<T, float>(g, x.data(), other_dy.data(),
                                         dw_other_staged.data(), true, nullptr,
                                         &staging);
    if (taken >= 0) {
      EXPECT_EQ(staging.reused(), taken) << "x";
    }
  }
  EXPECT_EQ(dx_staged, dx);
  EXPECT_EQ(dw_staged, dw);
  EXPECT_EQ(y_staged, y);
  for (float& v : dw_other) v += v;  // written, then added once more
  EXPECT_EQ(dw_other_staged, dw_other);
}

TEST(ConvDnnl, BackwardBringsDyIntoItsLayoutOnce) {
  // 32 -> 48 channels of 10 x 10 (oneDNN's kernels, not the small maps'
  // product, nor Winograd): one chunk of 6 images, or six of one.
  const ConvGeometry g = sixteen_blocks(32, 48);
  // Both passes read the same layout on AVX2 and AVX-512 (blocks of 8 or
  // 16 channels); AMX's bf16 kernels may pick another for each.
  const bool amx = cpu::cpu_features().amx_bf16;
  for (int64_t chunk : {int64_t{8} << 20, int64_t{1}}) {
    SCOPED_TRACE(chunk == 1 ? "one image a chunk" : "one chunk");
    const int taken = chunk == 1 ? 0 : 1;
    check_staged_backward<float>(g, chunk, taken);
    check_staged_backward<Half>(g, chunk, taken);
    check_staged_backward<BFloat16>(g, chunk, amx && taken ? -1 : taken);
  }
}

// A pass of a few flops runs on the calling thread (oneDNN's primitive
// made and run with one thread), a big one on the team; either way the
// sums are the reference's and the thread count is the caller's after.
TEST(ConvDnnl, SmallPassesRunOnOneThreadAndLeaveTheTeamAsItWas) {
  ConvGeometry small = geometry(false);
  small.batch = 3, small.in_channels = 4, small.out_channels = 5;
  small.in_spatial = small.out_spatial = {6, 6};  // 39K flops a pass
  const int threads = omp_get_max_threads();
  for (const ConvGeometry& g : {small, geometry(false)}) {
    const Problem p = problem(g, 21, 0.0);
    const cpu::Operand w{p.w.data(), Dtype::f32};
    std::vector<float> y(g.y_size()), dx(g.x_size()), dw(g.w_size());
    std::vector<float> db(g.out_channels);
    cpu::conv_forward<float>(g, p.x.data(), w, p.b.data(), y.data());
    EXPECT_EQ(omp_get_max_threads(), threads);
    cpu::conv_backward_data<float>(g, p.dy.data(), w, dx.data());
    EXPECT_EQ(omp_get_max_threads(), threads);
    cpu::conv_backward_weights_dnnl<float, float>(g, p.x.data(), p.dy.data(),
                                                  dw.data(), false, db.data());
    EXPECT_EQ(omp_get_max_threads(), threads);
    expect_near(doubles(y), p.ref.y, 0, 0, "y");
    expect_near(doubles(dx), p.ref.dx, 0, 0, "dx");
    expect_near(doubles(dw), p.ref.dw, 0, 0, "dw");
    expect_near(doubles(db), p.ref.db, 0, 0, "db");
  }
}

// The grid values make every fp32 sum exact: an fp32 weight grad matches
// the reference exactly in every type, a 16-bit one within its rounding.
// 4x4 maps, 3x3 kernels, pad 1 (ResNet-18's last layers): the taps read
// 100 of the windows' 144 positions, the rest is padding.
ConvGeometry padded_small_maps() {
  ConvGeometry g = small_maps();
  g.in_spatial = g.out_spatial = {4, 4};
  g.kernel = {3, 3};
  g.pad = {1, 1};
  g.stride = g.dilation = {1, 1};
  return g;
}

// 1x1 inputs, 3x3 kernels, pad 1, stride 2: one output position, which
// reads x at the centre tap alone (the other eight taps have no rows).
ConvGeometry one_position() {
  ConvGeometry g = padded_small_maps();
  g.in_spatial = {1, 1};
  g.out_spatial = {1, 1};
  g.stride = {2, 2};
  return g;
}

TEST(ConvDnnl, AnUnknownPassIsNamed) {
  const ConvGeometry g = small_maps();
  for (const char* pass : {"backward", "Forward", ""}) {
    try {
      cpu::conv_implementation<float>(g, pass);
      ADD_FAILURE() << "no error for '" << pass << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + pass + "'"),
                std::string::npos)
          << e.what();
    }
    EXPECT_THROW(cpu::conv_activation_blocks<float>(g, pass, false),
                 std::invalid_argument);
  }
}

TEST(ConvDnnl, SmallMapsTakeTheWeightGradAsProducts) {
  const ConvGeometry g = small_maps();
  EXPECT_TRUE(cpu::weights_by_product(g));
  EXPECT_FALSE(cpu::weights_by_taps(g));  // 36 of 72 positions: padding
  EXPECT_EQ(cpu::conv_implementation<float>(g, "backward_weights"),
            "mixgraph:im2col_gemm");
  for (const ConvGeometry& t : {padded_small_maps(), one_position()}) {
    EXPECT_TRUE(cpu::weights_by_taps(t));
    EXPECT_EQ(cpu::conv_implementation<BFloat16>(t, "backward_weights"),
              "mixgraph:tap_gemm");
  }
  EXPECT_FALSE(cpu::weights_by_product(geometry(false)));  // 14 x 14 maps
  EXPECT_FALSE(cpu::weights_by_taps(geometry(false)));
  EXPECT_FALSE(cpu::weights_by_product(geometry(true)));  // two groups
  ConvGeometry pointwise = g;
  pointwise.kernel = {1, 1};
  EXPECT_FALSE(cpu::weights_by_product(pointwise));
  EXPECT_FALSE(cpu::weights_by_taps(pointwise));
  for (const ConvGeometry& m : {g, padded_small_maps(), one_position()}) {
    for (bool accum : {false, true}) {
      SCOPED_TRACE(accum ? "accumulated" : "written");
      check_weight_grad<float, float>(m, accum, 0);
      check_weight_grad<Half, float>(m, accum, 0);
      check_weight_grad<Half, Half>(m, accum, 1e-3);
      check_weight_grad<BFloat16, float>(m, accum, 0);
      check_weight_grad<BFloat16, BFloat16>(m, accum, 8e-3);
    }
    // One image per round of products (bounded by the chunk size): the
    // rounds add up, and a 16-bit grad is rounded once.
    const ChunkBytes one_image(1);
    check_weight_grad<float, float>(m, true, 0);
    check_weight_grad<Half, Half>(m, true, 1e-3);
    check_weight_grad<BFloat16, float>(m, false, 0);
  }
  // Each way on the others' maps and on maps oneDNN takes: the same sums.
  for (const ConvGeometry& m : {g, geometry(false)}) {
    check_weight_grad<float, float>(m, true, 0, Way::taps);
    check_weight_grad<BFloat16, float>(m, false, 0, Way::taps);
  }
  for (const ConvGeometry& m : {padded_small_maps(), geometry(false)}) {
    check_weight_grad<float, float>(m, true, 0, Way::im2col);
    check_weight_grad<Half, float>(m, false, 0, Way::im2col);
  }
}

// 8 images of 64 x 12 x 10 and 64 kernels of 3 x 3, stride 1, pad 1: 72
// tiles of 4 x 4 outputs, 5/6 of them used, where cpu::winograd_pays().
ConvGeometry winograd_maps() {
  ConvGeometry g = geometry(false);
  g.batch = 8, g.in_channels = 64, g.out_channels = 64;
  g.in_spatial = g.out_spatial = {12, 10};
  return g;
}

// Forbids Winograd for a scope.
struct NoWinograd {
  NoWinograd() { cpu::set_conv_winograd(false); }
  ~NoWinograd() { cpu::set_conv_winograd(true); }
};

TEST(ConvDnnl, WinogradWhereItPays) {
  const ConvGeometry g = winograd_maps();
  EXPECT_TRUE(cpu::winograd_pays(g));
  auto changed = [&](auto&& edit) {
    ConvGeometry c = g;
    edit(c);
    return cpu::winograd_pays(c);
  };
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.batch = 7; }));  // 63 tiles
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.in_channels = 48; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.out_channels = 32; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.group = 2; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.stride = {1, 2}; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.dilation = {2, 1}; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) { c.kernel = {3, 1}; }));
  EXPECT_FALSE(changed([](ConvGeometry& c) {  // 5 x 5: 25 of 64 used
    c.batch = 64, c.out_spatial = c.in_spatial = {5, 5};
  }));
  EXPECT_TRUE(changed([](ConvGeometry& c) {  // ResNet-18's 256 x 8 x 8
    c.batch = 32, c.in_channels = c.out_channels = 256;
    c.out_spatial = c.in_spatial = {8, 8};
  }));
  EXPECT_FALSE(changed([](ConvGeometry& c) {  // its 512 x 4 x 4: 32 tiles
    c.batch = 32, c.in_channels = c.out_channels = 512;
    c.out_spatial = c.in_spatial = {4, 4};
  }));
}

// On AMX, a bfloat16 weight grad with fewer than 16 input channels a group
// runs oneDNN's fp32 kernel on the values converted (its AMX kernel pads
// them to 16), and stays exact: the grad against the reference, written
// and added to, in fp32 and in bfloat16. The forward pass (of one
// channel in) and a weight grad of 16 channels in stay on AMX.
TEST(ConvDnnl, OnAmxAWeightGradOfFewInputChannelsComputesInFp32) {
  if (!cpu::cpu_features().amx_bf16 || !cpu::bf16_kernels_pay()) {
    GTEST_SKIP() << "needs AMX-BF16 (LeNet's first layer on AMX)";
  }
  ConvGeometry few;  // LeNet's first layer, smaller: 1 channel in, 5 x 5
  few.batch = 6, few.in_channels = 1, few.out_channels = 32;
  few.in_spatial = {12, 12};
  few.kernel = {5, 5};
  few.pad = {0, 0};
  few.stride = few.dilation = {1, 1};
  few.out_spatial = {8, 8};
  ConvGeometry grouped = few;  // 8 a group
  grouped.in_channels = 16, grouped.group = 2;
  ConvGeometry many = few;
  many.in_channels = 16;
  for (const ConvGeometry& g : {few, grouped}) {
    const std::string impl =
        cpu::conv_implementation<BFloat16>(g, "backward_weights");
    EXPECT_EQ(impl.find("amx"), std::string::npos) << impl;
    EXPECT_EQ(impl.find("ref"), std::string::npos) << impl;
    for (bool accum : {false, true}) {
      SCOPED_TRACE(accum ? "accumulated" : "written");
      check_weight_grad<BFloat16, float>(g, accum, 0);
      check_weight_grad<BFloat16, BFloat16>(g, accum, 8e-3);
    }
  }
  EXPECT_NE(cpu::conv_implementation<BFloat16>(few, "forward").find("amx"),
            std::string::npos);
  EXPECT_NE(
      cpu::conv_implementation<BFloat16>(many, "backward_weights").find("amx"),
      std::string::npos);
}

// Winograd's sums round differently from the direct ones (the grid values
// keep those exact: the tolerance is Winograd's own error) and every pass
// still computes the convolution, with the bias, the bias grad,
// accumulation and fp32 weights for half. Forbidden, the direct kernel
// runs and is exact again.
TEST(ConvDnnl, WinogradComputesTheConvolution) {
  const ConvGeometry g = winograd_maps();
  const std::string impl = cpu::conv_implementation<float>(g, "forward");
  if (impl.find("wino") == std::string::npos) {
    ASSERT_FALSE(cpu::cpu_features().avx512f) << impl;
    GTEST_SKIP() << "oneDNN has Winograd kernels for AVX-512 only; got "
                 << impl;
  }
  for (const char* op : {"backward_data", "backward_weights"}) {
    EXPECT_NE(cpu::conv_implementation<float>(g, op).find("wino"),
              std::string::npos)
        << op;
    EXPECT_NE(cpu::conv_implementation<Half>(g, op).find("wino"),
              std::string::npos)
        << op;
  }
  if (cpu::bf16_kernels_pay()) {
    EXPECT_NE(cpu::conv_implementation<BFloat16>(g, "forward").find("bf16"),
              std::string::npos);
  }
  // 576 terms of at most 1 a result: Winograd's error measured below 1e-6
  // of their magnitudes' sum; a wrong tap or tile is off by 1/256 or more.
  const double atol = 2e-4;
  for (bool accum : {false, true}) {
    SCOPED_TRACE(accum ? "accumulated" : "written");
    const float base = accum ? 0.5f : 0.0f;
    const Problem p = problem(g, 11, base);
    std::vector<float> y(g.y_size(), base), dx(g.x_size(), base);
    std::vector<float> dw(g.w_size(), base), db(g.out_channels, 99.0f);
    const cpu::Operand w{p.w.data(), Dtype::f32};
    cpu::conv_forward<float>(g, p.x.data(), w, p.b.data(), y.data(), accum);
    expect_near(doubles(y), p.ref.y, atol, 0, "y");
    cpu::conv_backward_data<float>(g, p.dy.data(), w, dx.data(), accum);
    expect_near(doubles(dx), p.ref.dx, atol, 0, "dx");
    cpu::conv_backward_weights<float>(g, p.x.data(), p.dy.data(), dw.data(),
                                      accum, db.data());
    expect_near(doubles(dw), p.ref.dw, atol, 0, "dw");
    expect_near(doubles(db), p.ref.db, 1e-6, 0, "db");
    // Half: fp32 weights in, an fp32 weight grad out.
    const auto xh = as<Half>(p.x), dyh = as<Half>(p.dy);
    auto yh = as<Half>(std::vector<float>(g.y_size(), base));
    cpu::conv_forward<Half>(g, xh.data(), w, nullptr, yh.data(), accum);
    Doubles yref = p.ref.y;
    int64_t spatial = 1;  // y is (batch, out_channels, spatial...)
    for (const int64_t d : g.out_spatial) spatial *= d;
    for (size_t i = 0; i < yref.size(); ++i) {
      yref[i] -= p.b[(i / spatial) % g.out_channels];
    }
    expect_near(doubles(yh), yref, atol, 1e-3, "half y");
    std::vector<float> dwh(g.w_size(), base);
    cpu::conv_backward_weights<Half, float>(g, xh.data(), dyh.data(),
                                            dwh.data(), accum, nullptr);
    expect_near(doubles(dwh), p.ref.dw, atol, 0, "half dw");
  }
  const NoWinograd direct;
  for (const char* op : {"forward", "backward_data", "backward_weights"}) {
    EXPECT_EQ(cpu::conv_implementation<float>(g, op).find("wino"),
              std::string::npos)
        << op;
  }
  const Problem p = problem(g, 11, 0.0);
  std::vector<float> y(g.y_size());
  cpu::conv_forward<float>(g, p.x.data(), cpu::Operand{p.w.data(), Dtype::f32},
                           p.b.data(), y.data());
  expect_near(doubles(y), p.ref.y, 0, 0, "direct y");
}

// The features of an AVX2 CPU (as `--isa avx2` runs the benchmarks), where
// our Winograd F(2x2, 3x3) takes the data passes; null where this CPU
// lacks them.
std::unique_ptr<cpu::ScopedCpuFeatures> avx2_only() {
  const cpu::CpuFeatures& cpu = cpu::detected_cpu_features();
  if (!cpu.avx2 || !cpu.f16c) return nullptr;
  cpu::CpuFeatures f;
  f.avx2 = f.f16c = true;
  f.intel = cpu.intel;
  return std::make_unique<cpu::ScopedCpuFeatures>(f);
}

// 5 images of 48 x 9 x 7 (odd maps: the last row and column of tiles half
// outside), 64 kernels, pad 1.
ConvGeometry winograd_f2_maps(int64_t pad = 1) {
  ConvGeometry g = geometry(false);
  g.batch = 5, g.in_channels = 48, g.out_channels = 64;
  g.in_spatial = {9, 7};
  g.pad = {pad, pad};
  g.out_spatial = {9 + 2 * pad - 2, 7 + 2 * pad - 2};
  return g;
}

TEST(ConvWinograd, RunsWhereOneDnnHasNone) {
  const auto avx2 = avx2_only();
  if (!avx2) GTEST_SKIP() << "the CPU lacks AVX2 or F16C";
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no FMA";
  const ConvGeometry g = winograd_f2_maps();
  EXPECT_TRUE(cpu::winograd_f2_runs<float>(g));
  EXPECT_TRUE(cpu::winograd_f2_runs<Half>(g));
  EXPECT_TRUE(cpu::winograd_f2_runs<BFloat16>(g));
  for (const char* op : {"forward", "backward_data", "backward_weights"}) {
    EXPECT_EQ(cpu::conv_implementation<float>(g, op), "mixgraph:winograd_f2x2")
        << op;
  }
  {  // 4x4 maps' weight grad too; 2x2 maps keep our products (by taps:
     // 20 of 36 window positions are padding)
    ConvGeometry small = g;
    small.in_spatial = small.out_spatial = {4, 4};
    EXPECT_EQ(cpu::conv_implementation<float>(small, "backward_weights"),
              "mixgraph:winograd_f2x2");
    small.in_spatial = small.out_spatial = {2, 2};
    EXPECT_EQ(cpu::conv_implementation<float>(small, "backward_weights"),
              "mixgraph:tap_gemm");
  }
  auto runs = [&](auto&& edit) {
    ConvGeometry c = g;
    edit(c);
    return cpu::winograd_f2_runs<float>(c);
  };
  EXPECT_TRUE(runs([](ConvGeometry& c) { c.pad = {0, 2}; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.pad = {3, 1}; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.in_channels = 24; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.out_channels = 36; }));
  EXPECT_FALSE(
      runs([](ConvGeometry& c) { c.out_channels = 40; }));  // 2.5 panels
  {  // 32 channels: the data passes ours, the weight grad oneDNN's
    ConvGeometry narrow = g;
    narrow.in_channels = 32;
    EXPECT_EQ(cpu::conv_implementation<float>(narrow, "forward"),
              "mixgraph:winograd_f2x2");
    EXPECT_EQ(cpu::conv_implementation<float>(narrow, "backward_weights")
                  .find("winograd"),
              std::string::npos);
  }
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.group = 2; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.stride = {1, 2}; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.dilation = {2, 1}; }));
  EXPECT_FALSE(runs([](ConvGeometry& c) { c.kernel = {3, 1}; }));
  {
    const NoWinograd forbidden;
    EXPECT_FALSE(cpu::winograd_f2_runs<float>(g));
    EXPECT_NE(cpu::conv_implementation<float>(g, "forward"),
              "mixgraph:winograd_f2x2");
  }
}

TEST(ConvWinograd, NotWhereOneDnnHasItsOwn) {
  if (!cpu::cpu_features().avx512f) GTEST_SKIP() << "no AVX-512 here";
  EXPECT_FALSE(cpu::winograd_f2_runs<float>(winograd_f2_maps()));
}

// Both data passes by Winograd on T (weights given as WT) against the
// double reference, with the bias, accumulation and chunks of the batch.
// On the grid values every transformed value, product and sum is exact in
// fp32 (multiples of 1/1024 far below 2^24 of them), so float's results
// are exact too: any wrong tap, sign, tile or pad is off by 1/256 or more.
// rtol is one rounding of a result to T.
template <class T, class WT>
void check_winograd(const ConvGeometry& g, double rtol) {
  for (const int64_t chunk : {int64_t{64} << 20, int64_t{20} << 10}) {
    const ChunkBytes chunks(chunk);  // one chunk, or one or two images each
    for (bool accum : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "chunk " << chunk << (accum ? ", accumulated" : ""));
      const float base = accum ? 0.5f : 0.0f;
      const Problem p = problem(g, 21, base);
      const auto xt = as<T>(p.x), dyt = as<T>(p.dy);
      const auto wt = as<WT>(p.w);
      const cpu::Operand w{wt.data(), dtype_of<WT>};
      auto y = as<T>(std::vector<float>(g.y_size(), base));
      cpu::conv_forward<T>(g, xt.data(), w, p.b.data(), y.data(), accum);
      expect_near(doubles(y), p.ref.y, 0, rtol, "y");
      auto dx = as<T>(std::vector<float>(g.x_size(), base));
      cpu::conv_backward_data<T>(g, dyt.data(), w, dx.data(), accum);
      expect_near(doubles(dx), p.ref.dx, 0, rtol, "dx");
    }
  }
}

// The weight grad by Winograd on T (written as GT) with the bias grad,
// against the reference: exact in fp32 on the grid values as the data
// passes are (the products' sums over tiles stay multiples of 1/1024
// far below 2^24 of them).
template <class T, class GT>
void check_winograd_weights(const ConvGeometry& g, double rtol) {
  for (const int64_t chunk : {int64_t{64} << 20, int64_t{20} << 10}) {
    const ChunkBytes chunks(chunk);
    for (bool accum : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "chunk " << chunk << (accum ? ", accumulated" : ""));
      const float base = accum ? 0.5f : 0.0f;
      const Problem p = problem(g, 23, base);
      const auto xt = as<T>(p.x), dyt = as<T>(p.dy);
      auto dw = as<GT>(std::vector<float>(g.w_size(), base));
      std::vector<float> db(g.out_channels, 99.0f);
      cpu::conv_backward_weights<T, GT>(g, xt.data(), dyt.data(), dw.data(),
                                        accum, db.data());
      expect_near(doubles(dw), p.ref.dw, 0, rtol, "dw");
      expect_near(doubles(db), p.ref.db, 0, 0, "db");
    }
  }
}

TEST(ConvWinograd, ComputesEveryPass) {
  const auto avx2 = avx2_only();
  if (!avx2 || !cpu::gemm_packed_available()) {
    GTEST_SKIP() << "the CPU lacks AVX2, FMA or F16C";
  }
  for (const int64_t pad : {1, 0, 2}) {
    SCOPED_TRACE(testing::Message() << "pad " << pad);
    const ConvGeometry g = winograd_f2_maps(pad);
    ASSERT_EQ(cpu::conv_implementation<float>(g, "forward"),
              "mixgraph:winograd_f2x2");
    check_winograd<float, float>(g, 0);
    check_winograd<Half, float>(g, 1.0 / 2048);
    check_winograd<Half, Half>(g, 1.0 / 2048);
    check_winograd<BFloat16, BFloat16>(g, 1.0 / 256);
    ASSERT_EQ(cpu::conv_implementation<float>(g, "backward_weights"),
              "mixgraph:winograd_f2x2");
    check_winograd_weights<float, float>(g, 0);
    check_winograd_weights<Half, float>(g, 0);  // an fp32 master's grad
    check_winograd_weights<Half, Half>(g, 1.0 / 2048);
    check_winograd_weights<BFloat16, BFloat16>(g, 1.0 / 256);
  }
  // 128 channels in, 144 out: a weight grad whose sums over tiles (16 x
  // 144 x 128 floats) the threads share out by point instead of keeping a
  // set each (100 tiles: two blocks, so two threads share them).
  ConvGeometry wide = winograd_f2_maps();
  wide.in_channels = 128, wide.out_channels = 144;
  check_winograd_weights<float, float>(wide, 0);
}

// On values that round (uniform in [-1, 1]), Winograd's error against the
// double sum, over the sum of the terms' magnitudes: the transforms add up
// to 4 inputs (and 9 taps) before the products, yet it measured 7.5e-8 for
// y, 9.4e-8 for dx and 1.8e-7 for dW, where oneDNN's direct kernels gave
// 7.4e-8, 6.9e-8 and 2.6e-7 (its F(4x4, 3x3) 6.5e-7,
// ConvDnnl.WinogradComputesTheConvolution). A tap or tile wrong by one term
// is off by about 1e-3 of the magnitudes here.
TEST(ConvWinograd, ErrorWithinAFewUlps) {
  const auto avx2 = avx2_only();
  if (!avx2 || !cpu::gemm_packed_available()) {
    GTEST_SKIP() << "the CPU lacks AVX2, FMA or F16C";
  }
  ConvGeometry g = winograd_f2_maps();
  g.in_channels = g.out_channels = 64;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto random = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const auto x = random(g.x_size()), w = random(g.w_size()),
             dy = random(g.y_size());
  Doubles y_ref(g.y_size()), y_mag(g.y_size());
  Doubles dx_ref(g.x_size()), dx_mag(g.x_size());
  Doubles dw_ref(g.w_size()), dw_mag(g.w_size());
  for_each_tap(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    y_ref[yi] += static_cast<double>(x[xi]) * w[wi];
    y_mag[yi] += std::abs(static_cast<double>(x[xi]) * w[wi]);
    dx_ref[xi] += static_cast<double>(dy[yi]) * w[wi];
    dx_mag[xi] += std::abs(static_cast<double>(dy[yi]) * w[wi]);
    dw_ref[wi] += static_cast<double>(dy[yi]) * x[xi];
    dw_mag[wi] += std::abs(static_cast<double>(dy[yi]) * x[xi]);
  });
  std::vector<float> y(g.y_size()), dx(g.x_size()), dw(g.w_size());
  const cpu::Operand wo{w.data(), Dtype::f32};
  cpu::conv_forward<float>(g, x.data(), wo, nullptr, y.data());
  cpu::conv_backward_data<float>(g, dy.data(), wo, dx.data());
  cpu::conv_backward_weights<float, float>(g, x.data(), dy.data(), dw.data());
  auto worst = [](const std::vector<float>& got, const Doubles& ref,
                  const Doubles& mag) {
    double e = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      e = std::max(e, std::abs(got[i] - ref[i]) / mag[i]);
    }
    return e;
  };
  const double ey = worst(y, y_ref, y_mag), edx = worst(dx, dx_ref, dx_mag);
  const double edw = worst(dw, dw_ref, dw_mag);
  EXPECT_LT(ey, 3e-7);
  EXPECT_LT(edx, 3e-7);
  EXPECT_LT(edw, 4e-7);
}

// The automatic chunk is the L3 cache, within its bounds; a fixed one holds
// until it is given back.
TEST(ConvDnnl, ChunkSizeFollowsTheCacheOrWhatWasSet) {
  const int64_t automatic = cpu::conv_chunk_bytes();
  EXPECT_GE(automatic, int64_t{16} << 20);
  EXPECT_LE(automatic, int64_t{64} << 20);
  {
    const ChunkBytes fixed(12345);
    EXPECT_EQ(cpu::conv_chunk_bytes(), 12345);
  }
  EXPECT_EQ(cpu::conv_chunk_bytes(), automatic);
  // One image per chunk, or the whole batch in one, computes the same.
  check_conv<float, float, float>(geometry(false), false, 0, 0, 1);
  check_conv<float, float, float>(geometry(false), true, 0, 0,
                                  int64_t{8} << 20);
}

// oneDNN picks optimized kernels (blocked layouts), and bf16 ones where
// they pay (cpu::bf16_kernels_pay()); never the reference loops.
TEST(ConvDnnl, RunsOptimizedKernels) {
  const ConvGeometry g = geometry(false);
  for (const char* op : {"forward", "backward_data", "backward_weights"}) {
    const std::string f32 = cpu::conv_implementation<float>(g, op);
    EXPECT_NE(f32.rfind("ref", 0), 0u) << op << ": " << f32;
    const std::string bf16 = cpu::conv_implementation<BFloat16>(g, op);
    if (cpu::bf16_kernels_pay()) {
      EXPECT_NE(bf16.find("bf16"), std::string::npos) << op << ": " << bf16;
    } else {
      EXPECT_EQ(bf16.find("bf16"), std::string::npos) << op << ": " << bf16;
    }
  }
}

// ---- The direct kernel of a network's first layer (conv_direct.hpp) ----

// A first layer: `in` channels (at most 4), `out` (a multiple of 16).
ConvGeometry first_layer(int64_t batch, int64_t in, int64_t out,
                         std::vector<int64_t> size, std::vector<int64_t> kernel,
                         std::vector<int64_t> pad, std::vector<int64_t> stride,
                         std::vector<int64_t> dilation) {
  ConvGeometry g;
  g.batch = batch, g.in_channels = in, g.out_channels = out;
  g.in_spatial = size;
  g.kernel = kernel, g.pad = pad, g.stride = stride, g.dilation = dilation;
  for (size_t i = 0; i < 2; ++i) {
    g.out_spatial.push_back(
        (size[i] + 2 * pad[i] - dilation[i] * (kernel[i] - 1) - 1) / stride[i] +
        1);
  }
  return g;
}

// LeNet's 5x5 (a register tile of all 25 taps), RGB 3x3 with padding
// (16 out: one block on AVX-512; 32 out: tiles of two blocks, ResNet's
// stem's), a stride and a dilation with a kernel width of 2 (the kernels'
// one-column fallback), a 7x7 stem with stride 2, and maps narrower than 4
// (one position a tile).
std::vector<ConvGeometry> first_layers() {
  return {first_layer(3, 1, 32, {12, 12}, {5, 5}, {0, 0}, {1, 1}, {1, 1}),
          first_layer(2, 3, 16, {9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}),
          first_layer(2, 3, 32, {8, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}),
          first_layer(2, 2, 48, {15, 13}, {3, 2}, {2, 1}, {2, 3}, {2, 1}),
          first_layer(2, 3, 16, {11, 11}, {7, 7}, {3, 3}, {2, 2}, {1, 1}),
          first_layer(2, 1, 16, {4, 3}, {2, 2}, {0, 0}, {1, 1}, {1, 1})};
}

// a (batch, channels, spatial) in blocks of `block` channels, and back:
// the library's one-element-at-a-time conversions (channel_blocks.hpp,
// held to its vector passes by test_channel_blocks.cpp).
template <class T>
std::vector<T> to_blocks(const std::vector<T>& a, int64_t batch,
                         int64_t channels, int64_t block) {
  std::vector<T> b(a.size());
  cpu::to_channel_blocks_scalar(
      a.data(), dtype_of<T>, b.data(), dtype_of<T>, block, batch, channels,
      static_cast<int64_t>(a.size()) / (batch * channels));
  return b;
}
template <class T>
std::vector<T> from_blocks(const std::vector<T>& b, int64_t batch,
                           int64_t channels, int64_t block) {
  std::vector<T> a(b.size());
  cpu::from_channel_blocks_scalar(
      b.data(), dtype_of<T>, a.data(), dtype_of<T>, block, batch, channels,
      static_cast<int64_t>(b.size()) / (batch * channels), false, nullptr);
  return a;
}

// The forward pass and the weight grad (with the bias grad) on T, weights
// given as WT and the grad written as GT, y and dy in the kernel's blocks
// or row-major, against the double reference; grid values make every
// product and fp32 sum exact, so rtol is one rounding of a result in T.
template <class T, class WT, class GT>
void check_direct(const ConvGeometry& g, bool blocked, bool accum, double rtol,
                  double grad_rtol) {
  const float base = accum ? 0.5f : 0.0f;
  const Problem p = problem(g, 9, base);
  const int64_t block = cpu::conv_direct_block();
  const auto xt = as<T>(p.x), wt = as<WT>(p.w);
  auto dyt = as<T>(p.dy);
  if (blocked) dyt = to_blocks(dyt, g.batch, g.out_channels, block);
  auto y = as<T>(std::vector<float>(g.y_size(), base));
  cpu::conv_direct_forward<T>(g, xt.data(), {wt.data(), dtype_of<WT>},
                              p.b.data(), y.data(), accum, blocked);
  if (blocked) y = from_blocks(y, g.batch, g.out_channels, block);
  expect_near(doubles(y), p.ref.y, 1e-6, rtol, "y");
  auto dw = as<GT>(std::vector<float>(g.w_size(), base));
  std::vector<float> db(g.out_channels, 99.0f);
  cpu::conv_direct_backward_weights<T, GT>(g, xt.data(), dyt.data(), blocked,
                                           dw.data(), accum, db.data());
  expect_near(doubles(dw), p.ref.dw, 1e-6, grad_rtol, "dw");
  expect_near(doubles(db), p.ref.db, 1e-6, 0, "db");
}

template <class T, class WT, class GT>
void check_direct_all(double rtol, double grad_rtol) {
  for (const ConvGeometry& g : first_layers()) {
    for (const bool blocked : {true, false}) {
      for (const bool accum : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << g.in_channels << " -> " << g.out_channels << ", "
                     << g.kernel[0] << "x" << g.kernel[1] << " stride "
                     << g.stride[1] << (blocked ? ", blocked" : ", row-major")
                     << (accum ? ", accumulating" : ""));
        check_direct<T, WT, GT>(g, blocked, accum, rtol, grad_rtol);
      }
    }
  }
}

// Every geometry, type, layout and accumulation on the CPU's widest
// kernels and on the AVX2 ones (blocks of 8; avx2_only() above).
TEST(ConvDirect, ComputesTheForwardPassAndTheWeightGrad) {
  if (cpu::conv_direct_block() == 0) GTEST_SKIP() << "no AVX2 with FMA here";
  for (const bool narrow : {false, true}) {
    if (narrow && !cpu::cpu_features().avx512f) continue;
    const auto held = narrow ? avx2_only() : nullptr;
    SCOPED_TRACE(narrow ? "AVX2 kernels" : "the CPU's widest kernels");
    EXPECT_EQ(cpu::conv_direct_block(), cpu::cpu_features().avx512f ? 16 : 8);
    check_direct_all<float, float, float>(0, 0);
    check_direct_all<Half, Half, Half>(1e-3, 1e-3);
    check_direct_all<Half, float, float>(1e-3, 0);
    check_direct_all<BFloat16, float, BFloat16>(8e-3, 8e-3);
  }
}

// The weight grads of first layers run here in every type that computes
// in fp32, their forward passes in the 16-bit ones (half; bfloat16 where it
// computes in fp32), y and dy in the kernel's blocks; float's forward,
// other layers, other ranks and the data pass stay oneDNN's, as does
// everything with the kernel turned off.
TEST(ConvDirect, TakesTheFirstLayers) {
  const int64_t block = cpu::conv_direct_block();
  if (block == 0) GTEST_SKIP() << "no AVX2 with FMA here";
  const ConvGeometry g = first_layers()[0];
  EXPECT_TRUE(cpu::conv_direct_forward_runs<Half>(g));
  EXPECT_TRUE(cpu::conv_direct_weights_runs<Half>(g));
  // float's weight grad where oneDNN has no AVX-512 kernels.
  const bool wide = cpu::cpu_features().avx512f;
  EXPECT_EQ(cpu::conv_direct_weights_runs<float>(g), !wide);
  EXPECT_FALSE(cpu::conv_direct_forward_runs<float>(g));
  EXPECT_EQ(cpu::conv_direct_forward_runs<BFloat16>(g),
            !cpu::bf16_kernels_pay());
  EXPECT_EQ(cpu::conv_implementation<Half>(g, "forward"), "mixgraph:direct");
  EXPECT_EQ(cpu::conv_implementation<Half>(g, "backward_weights"),
            "mixgraph:direct");
  EXPECT_EQ(cpu::conv_implementation<float>(g, "backward_weights") ==
                "mixgraph:direct",
            !wide);
  EXPECT_NE(cpu::conv_implementation<float>(g, "forward"), "mixgraph:direct");
  EXPECT_NE(cpu::conv_implementation<Half>(g, "backward_data"),
            "mixgraph:direct");
  const cpu::ConvBlocks fwd =
      cpu::conv_activation_blocks<Half>(g, "forward", true);
  EXPECT_EQ(fwd.in, 0);
  EXPECT_EQ(fwd.out, block);
  const cpu::ConvBlocks wgt =
      cpu::conv_activation_blocks<Half>(g, "backward_weights", true);
  EXPECT_EQ(wgt.in, 0);
  EXPECT_EQ(wgt.in2, block);
  {
    // On AVX2 (where the CPU has it), float's weight grad too.
    const auto held = avx2_only();
    if (held) {
      // and there the forward pass of one channel in only.
      EXPECT_TRUE(cpu::conv_direct_forward_runs<Half>(g));
      EXPECT_FALSE(cpu::conv_direct_forward_runs<Half>(first_layers()[1]));
      EXPECT_TRUE(cpu::conv_direct_weights_runs<Half>(first_layers()[1]));
      EXPECT_TRUE(cpu::conv_direct_weights_runs<float>(g));
      EXPECT_EQ(
          cpu::conv_activation_blocks<float>(g, "backward_weights", true).in2,
          8);
    }
  }
  ConvGeometry more = g;
  more.in_channels = 5;
  EXPECT_FALSE(cpu::conv_direct_weights_runs<Half>(more));
  ConvGeometry odd = g;
  odd.out_channels = block + 4;
  EXPECT_FALSE(cpu::conv_direct_weights_runs<Half>(odd));
  ConvGeometry grouped =
      first_layer(3, 2, 32, {12, 12}, {5, 5}, {0, 0}, {1, 1}, {1, 1});
  grouped.group = 2;
  EXPECT_FALSE(cpu::conv_direct_weights_runs<Half>(grouped));
  ConvGeometry line = geometry(false);
  line.in_channels = 1, line.out_channels = 16, line.group = 1;
  line.in_spatial = {14}, line.out_spatial = {14}, line.kernel = {3};
  line.pad = {1}, line.stride = {1}, line.dilation = {1};
  EXPECT_FALSE(cpu::conv_direct_weights_runs<Half>(line));
  cpu::set_conv_direct(false);
  EXPECT_FALSE(cpu::conv_direct_forward_runs<Half>(g));
  EXPECT_FALSE(cpu::conv_direct_weights_runs<Half>(g));
  EXPECT_NE(cpu::conv_implementation<Half>(g, "forward"), "mixgraph:direct");
  cpu::set_conv_direct(true);
  EXPECT_TRUE(cpu::conv_direct()) << "set back for the tests after";
}

// Through conv_forward and conv_backward_weights as Convolution calls
// them: y written in the blocks conv_activation_blocks() named (staging
// says so), dy read in them, the same values as the kernel called alone,
// which the reference checks above.
TEST(ConvDirect, RunsUnderConvolutionsPasses) {
  const int64_t block = cpu::conv_direct_block();
  if (block == 0) GTEST_SKIP() << "no AVX2 with FMA here";
  const ConvGeometry g = first_layers()[0];
  const Problem p = problem(g, 3, 0.0);
  const auto xt = as<Half>(p.x);
  const auto dyt = to_blocks(as<Half>(p.dy), g.batch, g.out_channels, block);
  const cpu::Operand w{p.w.data(), Dtype::f32};
  std::vector<Half> y(g.y_size());
  {
    cpu::ConvStaging st;
    st.write_blocked();
    cpu::conv_forward<Half>(g, xt.data(), w, p.b.data(), y.data(), false, &st);
  }
  expect_near(doubles(from_blocks(y, g.batch, g.out_channels, block)), p.ref.y,
              1e-6, 1e-3, "y");
  std::vector<float> dw(g.w_size()), db(g.out_channels);
  {
    cpu::ConvStaging st;
    st.hold_blocked(dyt.data());
    cpu::conv_backward_weights<Half, float>(g, xt.data(), dyt.data(), dw.data(),
                                            false, db.data(), &st);
  }
  expect_near(doubles(dw), p.ref.dw, 1e-6, 0, "dw");
  expect_near(doubles(db), p.ref.db, 1e-6, 0, "db");
}

}  // namespace
}  // namespace mg::test::conv_dnnl_tests
