// Activations held in oneDNN's channel-blocked layout between functions
// (SyncedArray's Layout): a convolution writes y (and dx) so where its
// kernel does, batch normalization and the elementwise functions keep the
// layout, and every other reader gets the plain copy converted. A residual
// block trained with and without it computes the same numbers.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/conv_direct.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>

#include "../support/function_tester.hpp"

namespace mg::test::blocked_activations_tests {
namespace {

namespace F = mg::functions;

VariablePtr random_variable(const Shape& shape, float scale, uint32_t seed,
                            bool need_grad) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(shape_size(shape));
  for (float& e : v) e = u(rng);
  return variable_from(shape, v, need_grad);
}

// Restores the default (blocked allowed) when the test ends.
struct BlockedActivations {
  explicit BlockedActivations(bool on) { cpu::set_blocked_activations(on); }
  ~BlockedActivations() { cpu::set_blocked_activations(true); }
};

struct BlockRun {
  Doubles y, dx, dw1, dw2, dbeta, dgamma, mean;
  Layout y_layout, bn_layout, dx_layout;
};

// A ResNet basic block on x (4, 32, 5, 5): conv, BN, ReLU, conv, BN, the
// shortcut added, ReLU; loss sum(y^2); one forward and backward.
BlockRun residual_block(const std::string& type, bool blocked) {
  ContextGuard g(context("cpu", type));
  BlockedActivations on(blocked);
  const Shape xs{4, 32, 5, 5}, ws{32, 32, 3, 3}, ps{1, 32, 1, 1};
  auto x = random_variable(xs, 1.0f, 1, true);
  auto w1 = random_variable(ws, 0.1f, 2, true);
  auto w2 = random_variable(ws, 0.1f, 3, true);
  auto beta = random_variable(ps, 0.5f, 4, true);
  auto gamma = random_variable(ps, 0.5f, 5, true);
  auto m1 = variable_from(ps, std::vector<float>(32, 0.0f));
  auto v1 = variable_from(ps, std::vector<float>(32, 1.0f));
  auto m2 = variable_from(ps, std::vector<float>(32, 0.0f));
  auto v2 = variable_from(ps, std::vector<float>(32, 1.0f));
  ConvolutionOptions o;
  o.pad = {1, 1};
  // The block's input as a ReLU's output, as inside a network.
  auto in = F::relu(x);
  auto h = F::batch_normalization(F::convolution(in, w1, nullptr, o), beta,
                                  gamma, m1, v1);
  auto bn2 = F::batch_normalization(F::convolution(F::relu(h), w2, nullptr, o),
                                    beta, gamma, m2, v2);
  auto y = F::relu(F::add2(bn2, in));
  auto loss = F::sum(F::mul2(y, y));
  loss->forward(/*clear_buffer=*/false);
  BlockRun r;
  r.y_layout = y->data()->array().layout();
  r.bn_layout = h->data()->array().layout();
  loss->backward(1.0f);
  r.dx_layout = in->grad()->array().layout();
  r.y = to_doubles(y);
  r.dx = grad_doubles(x);
  r.dw1 = grad_doubles(w1);
  r.dw2 = grad_doubles(w2);
  r.dbeta = grad_doubles(beta);
  r.dgamma = grad_doubles(gamma);
  r.mean = to_doubles(m2);
  return r;
}

// Whether the block's convolutions hand their activations over blocked on
// this CPU in `type` (AVX-512; half held in half, converted to the fp32 the
// kernels compute in element by element).
bool blocks_here(const std::string& type) {
  ConvGeometry g;
  g.batch = 4, g.in_channels = g.out_channels = 32, g.group = 1;
  g.in_spatial = g.out_spatial = {5, 5};
  g.kernel = {3, 3}, g.pad = {1, 1}, g.stride = {1, 1}, g.dilation = {1, 1};
  if (type == "float") {
    return cpu::conv_activation_blocks<float>(g, "forward", false).out != 0;
  }
  if (type == "bfloat16") {
    return cpu::conv_activation_blocks<BFloat16>(g, "forward", false).out != 0;
  }
  return cpu::conv_activation_blocks<Half>(g, "forward", false).out != 0;
}

TEST(BlockedActivations, ResidualBlockComputesWhatPlainArraysDo) {
  for (const char* type : {"float", "bfloat16", "half"}) {
    SCOPED_TRACE(type);
    const bool expect_blocks = blocks_here(type);
    const BlockRun b = residual_block(type, true);
    const BlockRun p = residual_block(type, false);
    // Held so from the first convolution to the last ReLU, and back.
    EXPECT_EQ(b.bn_layout.plain(), !expect_blocks);
    EXPECT_EQ(b.y_layout.plain(), !expect_blocks);
    EXPECT_EQ(b.dx_layout.plain(), !expect_blocks);
    if (expect_blocks) {
      EXPECT_EQ(b.y_layout.block % 16, 0);
    }
    EXPECT_TRUE(p.y_layout.plain());
    EXPECT_TRUE(p.dx_layout.plain());
    // The same sums in another order: fp32's last bits in float; in half
    // and bfloat16 a rounding of a 16-bit value may fall the other way.
    const bool f = std::string(type) == "float";
    const double atol = f ? 1e-4 : 0.05, rtol = f ? 1e-4 : 0.02;
    expect_near(b.y, p.y, atol, rtol, "y");
    expect_near(b.dx, p.dx, atol, rtol, "dx");
    expect_near(b.dw1, p.dw1, f ? 1e-3 : 0.5, rtol, "dW1");
    expect_near(b.dw2, p.dw2, f ? 1e-3 : 0.5, rtol, "dW2");
    expect_near(b.dbeta, p.dbeta, f ? 1e-3 : 0.5, rtol, "dbeta");
    expect_near(b.dgamma, p.dgamma, f ? 1e-3 : 0.5, rtol, "dgamma");
    expect_near(b.mean, p.mean, 1e-5, 1e-4, "running mean");
  }
}

// Batch normalization on x held blocked: y in x's layout, every value as
// the plain loops give it (one multiply and add from the same statistics),
// the statistics from sums over 7 x 3 maps (a tail in each row of four).
TEST(BlockedActivations, BatchNormalizationKeepsTheLayout) {
  if (!cpu::cpu_features().avx512f) GTEST_SKIP() << "no AVX-512 here";
  for (const char* type : {"float", "bfloat16"}) {
    SCOPED_TRACE(type);
    ContextGuard g(context("cpu", type));
    const bool f = std::string(type) == "float";
    const Shape xs{3, 48, 7, 3}, ps{1, 48, 1, 1};
    auto run = [&](bool blocked) {
      auto x = random_variable(xs, 2.0f, 7, true);
      if (blocked) {
        // x's values, held blocked: the plain copy read, then cast.
        const std::vector<float> v(x->data()->get<const float>(),
                                   x->data()->get<const float>() + x->size());
        const Layout l{16, 3, 48, 21};
        float* p = x->data()->cast<float>(true, l);
        for (int64_t n = 0; n < 3; ++n)
          for (int64_t c = 0; c < 48; ++c)
            for (int64_t s = 0; s < 21; ++s)
              p[((n * 3 + c / 16) * 21 + s) * 16 + c % 16] =
                  v[(n * 48 + c) * 21 + s];
        // ... in the type the function computes in (a head in another
        // type is read plain).
        x->data()->array().cast(f ? Dtype::f32 : Dtype::bf16, l, false);
      }
      auto beta = random_variable(ps, 0.5f, 8, true);
      auto gamma = random_variable(ps, 0.5f, 9, true);
      auto m = variable_from(ps, std::vector<float>(48, 0.0f));
      auto v = variable_from(ps, std::vector<float>(48, 1.0f));
      auto y = F::batch_normalization(x, beta, gamma, m, v);
      auto w = random_variable(xs, 1.0f, 10, false);
      auto loss = F::sum(F::mul2(y, w));
      loss->forward(false);
      const Layout yl = y->data()->array().layout();
      loss->backward(1.0f);
      return std::make_tuple(yl, to_doubles(y), grad_doubles(x),
                             grad_doubles(gamma), to_doubles(v));
    };
    const auto [bl, by, bdx, bdg, bv] = run(true);
    const auto [pl, py, pdx, pdg, pv] = run(false);
    EXPECT_EQ(bl, (Layout{16, 3, 48, 21}));
    EXPECT_TRUE(pl.plain());
    expect_near(by, py, f ? 1e-5 : 0.02, f ? 1e-5 : 0.01, "y");
    expect_near(bdx, pdx, f ? 1e-5 : 0.02, f ? 1e-5 : 0.01, "dx");
    expect_near(bdg, pdg, f ? 1e-4 : 0.05, f ? 1e-5 : 0.01, "dgamma");
    expect_near(bv, pv, 1e-5, 1e-5, "running variance");
  }
}

// FusedBatchNormalization (z added, ReLU) on x held blocked: y, dz and dx
// in x's layout, with the numbers of plain arrays; z held blocked or
// plain (then read through a converted copy), or not given.
TEST(BlockedActivations, FusedBatchNormalizationKeepsTheLayout) {
  if (!cpu::cpu_features().avx512f) GTEST_SKIP() << "no AVX-512 here";
  const Shape xs{3, 32, 7, 3}, ps{1, 32, 1, 1};  // 21 positions: odd
  const Layout l{16, 3, 32, 21};
  for (const char* type : {"float", "bfloat16", "half"}) {
    for (const char* z_held : {"blocked", "plain", "none"}) {
      SCOPED_TRACE(std::string(type) + ", z " + z_held);
      ContextGuard g(context("cpu", type));
      const Dtype dt = std::string(type) == "float"      ? Dtype::f32
                       : std::string(type) == "bfloat16" ? Dtype::bf16
                                                         : Dtype::f16;
      const bool with_z = std::string(z_held) != "none";
      auto run = [&](bool blocked) {
        auto x = random_variable(xs, 2.0f, 21, true);
        auto z = with_z ? random_variable(xs, 1.0f, 22, true) : nullptr;
        if (blocked) {
          x->data()->array().cast(dt, l, false);
          if (std::string(z_held) == "blocked") {
            z->data()->array().cast(dt, l, false);
          }
        }
        auto beta = random_variable(ps, 0.5f, 23, true);
        auto gamma = random_variable(ps, 0.5f, 24, true);
        auto m = variable_from(ps, std::vector<float>(32, 0.0f));
        auto v = variable_from(ps, std::vector<float>(32, 1.0f));
        auto y = F::fused_batch_normalization(x, beta, gamma, m, v, z);
        auto w = random_variable(xs, 1.0f, 25, false);
        auto loss = F::sum(F::mul2(y, w));
        loss->forward(false);
        const Layout yl = y->data()->array().layout();
        // Twice: the second backward adds into the grads the first wrote
        // (dx, dz, dgamma and dbeta with accum).
        loss->backward(1.0f);
        loss->backward(1.0f);
        // dx and dz were written in x's layout (the blocked passes ran).
        EXPECT_EQ(x->grad()->array().layout(), yl);
        if (with_z) {
          EXPECT_EQ(z->grad()->array().layout(), yl);
        }
        return std::make_tuple(yl, to_doubles(y), grad_doubles(x),
                               with_z ? grad_doubles(z) : Doubles{},
                               grad_doubles(gamma), grad_doubles(beta));
      };
      const auto [bl, by, bdx, bdz, bdg, bdb] = run(true);
      const auto [pl, py, pdx, pdz, pdg, pdb] = run(false);
      EXPECT_EQ(bl, l);
      EXPECT_TRUE(pl.plain());
      const bool f = dt == Dtype::f32;
      const double atol = f ? 1e-5 : 0.02, rtol = f ? 1e-5 : 0.01;
      // y and dz are the same values in 16 bits (one rounding of the same
      // fp32 sum; the ReLU's grad is dy or 0); in float y differs by the
      // order of the statistics' sums.
      if (f) {
        expect_near(by, py, atol, rtol, "y");
      } else {
        EXPECT_EQ(by, py);
      }
      expect_near(bdx, pdx, atol, rtol, "dx");
      EXPECT_EQ(bdz, pdz);
      expect_near(bdg, pdg, f ? 1e-4 : 0.05, rtol, "dgamma");
      expect_near(bdb, pdb, f ? 1e-4 : 0.05, rtol, "dbeta");
      // The ReLU ran: y has zeros and no negative values.
      EXPECT_EQ(*std::min_element(by.begin(), by.end()), 0.0);
    }
  }
}

// FusedBatchNormalization on a plain x whose z is held in another layout
// and type: z must be converted before the threads start (a conversion
// inside the threaded loop, from every thread at once, crashed ResNet-18
// with fused normalizations one run in three). z's head is made blocked
// bfloat16 again before every forward, so each one converts; with the
// conversion back inside the loop this test read wrong values and then
// segfaulted, though a race may also stay hidden on a given run.
TEST(BlockedActivations, FusedBatchNormalizationConvertsZBeforeItsThreads) {
  const Shape xs{8, 32, 32, 32}, ps{1, 32, 1, 1};
  const Layout l{16, 8, 32, 1024};
  auto x = random_variable(xs, 2.0f, 31, false);
  auto z = random_variable(xs, 1.0f, 32, false);
  const Doubles zv = to_doubles(z);
  auto beta = random_variable(ps, 0.5f, 33, false);
  auto gamma = random_variable(ps, 0.5f, 34, false);
  auto m = variable_from(ps, std::vector<float>(32, 0.0f));
  auto v = variable_from(ps, std::vector<float>(32, 1.0f));
  FusedBatchNormalizationOptions o;
  o.batch_stat = false;  // y = gamma x / sqrt(1 + eps) + beta + z, relu
  auto y = F::fused_batch_normalization(x, beta, gamma, m, v, z, o);
  y->forward(false);
  const Doubles expect = to_doubles(y);
  for (int i = 0; i < 40; ++i) {
    z->data()->array().cast(Dtype::bf16, l, false);
    ASSERT_EQ(z->data()->array().layout(), l);
    y->forward(false);
    // z's values went through bfloat16: within its rounding of z.
    const Doubles got = to_doubles(y);
    for (size_t j = 0; j < got.size(); j += 97) {
      ASSERT_NEAR(got[j], expect[j], 0.01 * std::abs(zv[j]) + 1e-6) << j;
    }
  }
}

// An elementwise function reads all of its arrays in the first blocked
// layout among them: a blocked a plus a plain b is a blocked y, each
// element the sum of the elements that stand for the same (n, c, s).
TEST(BlockedActivations, ElementwiseFunctionsReadEveryArrayInOneLayout) {
  const Shape s{2, 32, 3};
  const Layout l{16, 2, 32, 3};
  auto a = random_variable(s, 1.0f, 11, true);
  auto b = random_variable(s, 1.0f, 12, true);
  const Doubles av = to_doubles(a), bv = to_doubles(b);
  a->data()->get<const float>(l);
  a->data()->cast<float>(false, l);  // the blocked copy becomes the head
  ASSERT_EQ(a->data()->array().layout(), l);
  auto y = F::add2(a, b);
  auto r = F::relu(y);
  auto loss = F::sum(F::mul2(r, r));
  loss->forward(false);
  EXPECT_EQ(y->data()->array().layout(), l);
  EXPECT_EQ(r->data()->array().layout(), l);
  const Doubles yv = to_doubles(y), rv = to_doubles(r);
  for (size_t i = 0; i < yv.size(); ++i) {
    EXPECT_FLOAT_EQ(yv[i], av[i] + bv[i]) << i;
    EXPECT_FLOAT_EQ(rv[i], std::max(0.0, av[i] + bv[i])) << i;
  }
  loss->backward(1.0f);
  const Doubles da = grad_doubles(a), db = grad_doubles(b);
  for (size_t i = 0; i < da.size(); ++i) {
    const double expect = 2.0 * std::max(0.0, av[i] + bv[i]);
    EXPECT_NEAR(da[i], expect, 1e-5) << i;
    EXPECT_NEAR(db[i], expect, 1e-5) << i;
  }
}

// Concatenate along the channel axis of inputs held blocked (a U-Net's
// skip connection: a convolution's output joined with an upsampled map)
// joins them blocked: y, and the inputs' grads, in the block of the first
// blocked input, the same values as plain arrays (a copy, so exactly),
// with a plain input blocked by its read, the same variable given twice,
// and a second backward adding into the grads. Where an input's channels
// are no multiple of the block, or the axis is not the channel axis, the
// join stays plain. An input held channels-last (bfloat16's activations
// on AMX: a block of all its 32 channels) is joined channels-last, each
// array in a block of its own channels, whatever their count.
TEST(BlockedActivations, ConcatenateJoinsChannelsInTheirBlocks) {
  enum Join { plain, blocked, last };
  struct Case {
    const char* name;
    int64_t c1, axis, block;  // block: x0's
    Join join;
  } cases[] = {{"blocked", 16, 1, 16, blocked},
               {"8 channels", 8, 1, 16, plain},
               {"axis 2", 32, 2, 16, plain},
               {"channels-last", 16, 1, 32, last},
               {"channels-last, 8 channels", 8, 1, 32, last},
               {"channels-last, axis 2", 32, 2, 32, plain}};
  for (const char* type : {"float", "bfloat16", "half"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(type) + ", " + c.name);
      ContextGuard g(context("cpu", type));
      const Dtype dt = std::string(type) == "float"      ? Dtype::f32
                       : std::string(type) == "bfloat16" ? Dtype::bf16
                                                         : Dtype::f16;
      const Shape s0{2, 32, 3, 5}, s1{2, c.c1, 3, 5};
      const Layout l0{c.block, 2, 32, 15};
      auto run = [&](bool blocked) {
        auto x0 = random_variable(s0, 1.0f, 41, true);
        auto x1 = random_variable(s1, 1.0f, 42, true);
        if (blocked) x0->data()->array().cast(dt, l0, false);
        auto y = F::concatenate({x1, x0, x0}, c.axis);
        const Shape ys = y->shape();
        auto w = random_variable(ys, 1.0f, 43, false);
        auto loss = F::sum(F::mul2(y, w));
        loss->forward(false);
        const Layout yl = y->data()->array().layout();
        loss->backward(1.0f);
        loss->backward(1.0f);
        return std::make_tuple(yl, x0->grad()->array().layout(),
                               x1->grad()->array().layout(), to_doubles(y),
                               grad_doubles(x0), grad_doubles(x1));
      };
      const auto [yl, dx0l, dx1l, y, dx0, dx1] = run(true);
      const auto [pyl, pdx0l, pdx1l, py, pdx0, pdx1] = run(false);
      EXPECT_TRUE(pyl.plain());
      const int64_t yc = 2 * 32 + c.c1;
      if (c.join == blocked) {
        EXPECT_EQ(yl, (Layout{16, 2, yc, 15}));
        EXPECT_EQ(dx0l, l0);
        EXPECT_EQ(dx1l, (Layout{16, 2, c.c1, 15}));
      } else if (c.join == last) {
        EXPECT_EQ(yl, (Layout{yc, 2, yc, 15}));
        EXPECT_EQ(dx0l, l0);
        EXPECT_EQ(dx1l, (Layout{c.c1, 2, c.c1, 15}));
      } else {
        EXPECT_TRUE(yl.plain());
      }
      EXPECT_EQ(y, py);
      EXPECT_EQ(dx0, pdx0);
      EXPECT_EQ(dx1, pdx1);
    }
  }
}

// The functions that move values within each image's spatial axes alone,
// the same for every channel (resizing, unpooling, max pooling), run on
// x held blocked as on a plain x: y and dy in x's blocks, dx in dy's, the
// same values bit for bit (the same fp32 sums in the same order per
// element), and a second backward adding into dx. dy comes blocked (from
// the loss's product with y) and then plain (through a Reshape, whose
// backward writes plain grads): a function whose backward reads x
// (MaxPooling) then blocks dy, the smaller array, instead of unblocking x.
struct SpatialCase {
  const char* name;
  Shape x;
  std::function<VariablePtr(const VariablePtr&)> f;
  // 16: as our convolutions hand their outputs over; 8: a block a caller
  // may hold (oneDNN's AVX2 layout), which MaxPooling also runs on.
  int64_t block = 16;
  bool grad_in_x_blocks = false;
};

void expect_spatial_blocks(const SpatialCase& c) {
  const Layout xl{c.block, c.x[0], c.x[1],
                  shape_size(c.x, 2, static_cast<int>(c.x.size()))};
  for (const char* type : {"float", "bfloat16", "half"}) {
    for (const bool plain_dy : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + ", " + type +
                   (plain_dy ? ", dy plain" : ""));
      ContextGuard g(context("cpu", type));
      const Dtype dt = std::string(type) == "float"      ? Dtype::f32
                       : std::string(type) == "bfloat16" ? Dtype::bf16
                                                         : Dtype::f16;
      auto run = [&](bool blocked) {
        // Held in the type either way (a plain fp32 x would be read
        // unrounded).
        auto x = random_variable(c.x, 2.0f, 51, true);
        x->data()->array().cast(dt, blocked ? xl : Layout{}, false);
        auto y = c.f(x);
        auto w = random_variable(y->shape(), 1.0f, 52, false);
        auto loss =
            F::sum(F::mul2(plain_dy ? F::reshape(y, y->shape(), false) : y, w));
        loss->forward(false);
        const Layout yl = y->data()->array().layout();
        loss->backward(1.0f);
        loss->backward(1.0f);
        return std::make_tuple(yl, x->grad()->array().layout(), to_doubles(y),
                               grad_doubles(x));
      };
      const auto [yl, dxl, y, dx] = run(true);
      const auto [pyl, pdxl, py, pdx] = run(false);
      EXPECT_TRUE(pyl.plain());
      EXPECT_EQ(yl.block, c.block);
      if (!plain_dy || c.grad_in_x_blocks) {
        EXPECT_EQ(dxl, xl);
      } else {
        EXPECT_TRUE(dxl.plain());
      }
      EXPECT_EQ(y, py);
      EXPECT_EQ(dx, pdx);
    }
  }
}

TEST(BlockedActivations, InterpolateResizesInTheBlocks) {
  expect_spatial_blocks(
      {"linear, half pixel", {2, 32, 7, 5}, [](auto x) {
         return F::interpolate(x, {14, 9}, "linear", false, true);
       }});
  expect_spatial_blocks({"linear, corners aligned", {2, 32, 5, 6}, [](auto x) {
                           return F::interpolate(x, {3, 11}, "linear", true);
                         }});
  expect_spatial_blocks({"the last axis only", {2, 16, 5, 6}, [](auto x) {
                           return F::interpolate(x, {13}, "linear", false,
                                                 true);
                         }});
  expect_spatial_blocks({"nearest", {2, 16, 5, 6}, [](auto x) {
                           return F::interpolate(x, {10, 13}, "nearest");
                         }});
}

// In half, an fp32 map (a function computed in float wrote it) is read as
// it is, blocked or plain: rounded to half only once, in y.
TEST(BlockedActivations, InterpolateReadsAnFp32MapUnrounded) {
  ContextGuard g(context("cpu", "half"));
  const Shape xs{2, 16, 5, 6};
  auto run = [&](bool blocked) {
    auto x = random_variable(xs, 2.0f, 71, false);
    if (blocked) x->data()->cast<float>(false, Layout{16, 2, 16, 30});
    auto y = F::interpolate(x, {9, 11}, "linear", false, true);
    y->forward();
    return to_doubles(y);
  };
  EXPECT_EQ(run(true), run(false));
}

TEST(BlockedActivations, UnpoolingRepeatsTheBlocks) {
  expect_spatial_blocks({"2 x 2", {2, 32, 7, 5}, [](auto x) {
                           return F::unpooling(x, {2, 2});
                         }});
  expect_spatial_blocks({"3 x 1", {3, 16, 4, 5}, [](auto x) {
                           return F::unpooling(x, {3, 1});
                         }});
  expect_spatial_blocks({"the last axis only", {2, 16, 3, 5}, [](auto x) {
                           return F::unpooling(x, {3});
                         }});
  expect_spatial_blocks({"one spatial axis", {2, 32, 6}, [](auto x) {
                           return F::unpooling(x, {2});
                         }});
}

// Ties (16-bit values of x round onto each other) go to the first
// maximum, and overlapping windows add their grads in the windows' order,
// as on plain maps.
// The windows' loops are compiled per vector ISA (each path this CPU has
// runs) and for blocks of 16 and 8; half and bfloat16 maps pool as they
// are where the ISA converts a block in registers (blocks of 16 on
// AVX-512, 8 on AVX2 with F16C), else through fp32 copies: both paths
// run here, and give the plain maps' bits.
TEST(BlockedActivations, MaxPoolingPoolsTheBlocks) {
  const cpu::CpuFeatures all = cpu::cpu_features();
  cpu::CpuFeatures avx2, avx512;
  avx2.avx2 = all.avx2, avx2.f16c = all.f16c, avx512.avx512f = all.avx512f;
  PoolingOptions stem;  // a ResNet's stem: overlapping, padded windows
  stem.stride = {2, 2}, stem.pad = {1, 1};
  PoolingOptions past;
  past.ignore_border = false;
  for (const auto& [path, features] :
       {std::pair{"baseline", cpu::CpuFeatures{}}, std::pair{"AVX2", avx2},
        std::pair{"AVX-512", avx512}}) {
    if (std::string(path) != "baseline" && !features.avx2 &&
        !features.avx512f) {
      continue;  // not on this CPU
    }
    cpu::ScopedCpuFeatures scoped(features);
    for (const int64_t block : {16, 8}) {
      SCOPED_TRACE(std::string(path) + ", blocks of " + std::to_string(block));
      expect_spatial_blocks({"2 x 2",
                             {2, 32, 6, 8},
                             [](auto x) {
                               return F::max_pooling(x, {2, 2});
                             },
                             block,
                             true});
      expect_spatial_blocks(
          {"2 x 2, odd sides (a row and a column in no "
           "window)",
           {2, 16, 5, 7},
           [](auto x) {
             return F::max_pooling(x, {2, 2});
           },
           block,
           true});
      expect_spatial_blocks({"3 x 3, stride 2, pad 1",
                             {2, 16, 7, 9},
                             [&](auto x) {
                               return F::max_pooling(x, {3, 3}, stem);
                             },
                             block,
                             true});
      expect_spatial_blocks({"2 x 2 past the end",
                             {2, 16, 5, 7},
                             [&](auto x) {
                               return F::max_pooling(x, {2, 2}, past);
                             },
                             block,
                             true});
      expect_spatial_blocks({"3 on one axis",
                             {2, 16, 11},
                             [](auto x) { return F::max_pooling(x, {3}); },
                             block,
                             true});
    }
    // Channels-last (bfloat16's maps on AMX): a block of all the channels,
    // pooled a vector of 16 (or 8) at a time.
    for (const int64_t channels : {32, 24}) {
      SCOPED_TRACE(std::string(path) + ", channels-last, " +
                   std::to_string(channels) + " channels");
      expect_spatial_blocks({"2 x 2, odd sides",
                             {2, channels, 5, 7},
                             [](auto x) {
                               return F::max_pooling(x, {2, 2});
                             },
                             channels,
                             true});
      expect_spatial_blocks({"3 x 3, stride 2, pad 1",
                             {2, channels, 7, 9},
                             [&](auto x) {
                               return F::max_pooling(x, {3, 3}, stem);
                             },
                             channels,
                             true});
    }
  }
  // A nan wins its window (for the loss scaler's check) and takes its
  // grad; -0 and +0 are equal (the first wins). In each type: half and
  // bfloat16 compare their bits.
  for (const auto& [type, dt] :
       {std::pair{"float", Dtype::f32}, std::pair{"half", Dtype::f16},
        std::pair{"bfloat16", Dtype::bf16}}) {
    SCOPED_TRACE(type);
    ContextGuard g(context("cpu", type));
    const Layout l{16, 1, 16, 4};
    std::vector<float> v(64, 1.0f);
    // Plain order (channel, element): channel 5's second element a nan,
    // its fourth larger than every other; channel 7 -0 then +0, the rest
    // below.
    v[5 * 4 + 1] = -std::nanf("");  // its sign set: bits below -inf's
    v[5 * 4 + 3] = 2.0f;
    v[7 * 4 + 0] = -0.0f, v[7 * 4 + 1] = 0.0f;
    v[7 * 4 + 2] = v[7 * 4 + 3] = -1.0f;
    auto x = variable_from({1, 16, 2, 2}, v, true);
    x->data()->array().cast(dt, l, false);
    auto y = F::max_pooling(x, {2, 2});
    auto loss = F::sum(y);
    loss->forward(false);
    loss->backward(1.0f);
    ASSERT_EQ(y->data()->array().layout().block, 16);
    const Doubles yv = to_doubles(y), dx = grad_doubles(x);
    EXPECT_TRUE(std::isnan(yv[5]));
    EXPECT_EQ(yv[6], 1.0);
    EXPECT_EQ(dx[5 * 4 + 1], 1.0);
    EXPECT_EQ(dx[5 * 4 + 3], 0.0);
    EXPECT_EQ(dx[6 * 4 + 0], 1.0);  // ties: the first
    EXPECT_EQ(dx[7 * 4 + 0], 1.0);  // the first of -0 and +0
    EXPECT_EQ(dx[7 * 4 + 1], 0.0);
  }
}

// Under clearing a Reshape takes the buffer of its input in forward (and
// of dy in backward), which may be held blocked: it must read the plain
// copy before it makes its output the head. Taking the output first
// dropped the blocked copy unread (a LeNet read from ONNX, whose Flatten
// follows a pooled map, scored 10%). Forward with clearing gives the loss
// only (it frees what backward would read), so backward runs apart, with
// its own clearing: there the second Reshape takes the convolution's dx,
// blocked where the kernel writes blocks, as its own.
TEST(BlockedActivations, ReshapeInPlaceReadsABlockedBuffer) {
  const Shape xs{2, 16, 3, 5}, flat{2, 240}, ws{16, 16, 3, 3};
  const Layout l{16, 2, 16, 15};
  ConvolutionOptions o;
  o.pad = {1, 1};
  auto run = [&](bool blocked, bool clear_forward) {
    BlockedActivations on(blocked);
    auto x = random_variable(xs, 1.0f, 61, true);
    auto w = random_variable(ws, 0.2f, 62, true);
    if (blocked) x->data()->cast<float>(false, l);
    // relu(x) (held as x is) flattened in place, made a map again and
    // convolved.
    auto h = F::relu(F::reshape(F::relu(x), flat));
    auto y = F::convolution(F::reshape(h, xs), w, nullptr, o);
    auto loss = F::sum(F::mul2(y, y));
    loss->forward(clear_forward);
    const Doubles lv = to_doubles(loss);
    if (clear_forward) return std::make_pair(lv, Doubles{});
    loss->backward(1.0f, /*clear_buffer=*/true);
    return std::make_pair(lv, grad_doubles(x));
  };
  const double plain_loss = run(false, true).first[0];
  EXPECT_NEAR(run(true, true).first[0], plain_loss, 1e-4 * plain_loss);
  const auto [loss, dx] = run(true, false);
  const auto [ploss, pdx] = run(false, false);
  EXPECT_NEAR(loss[0], plain_loss, 1e-4 * plain_loss);
  // Not all zero: the grads flowed.
  EXPECT_GT(*std::max_element(pdx.begin(), pdx.end()), 0.1);
  expect_near(dx, pdx, 1e-4, 1e-4, "dx");
}

// A network's first convolution (3 channels in, read plain) still writes
// its 32 channels out blocked where the kernel does, with the same values.
TEST(BlockedActivations, FirstConvolutionWritesItsOutputBlocked) {
  ConvGeometry g;
  g.batch = 2, g.in_channels = 3, g.out_channels = 32, g.group = 1;
  g.in_spatial = g.out_spatial = {8, 8};
  g.kernel = {3, 3}, g.pad = {1, 1}, g.stride = {1, 1}, g.dilation = {1, 1};
  const bool blocks =
      cpu::conv_activation_blocks<float>(g, "forward", false).out != 0;
  EXPECT_EQ(cpu::conv_activation_blocks<float>(g, "forward", false).in, 0);
  ConvolutionOptions o;
  o.pad = {1, 1};
  auto run = [&](bool on) {
    BlockedActivations b(on);
    auto x = random_variable({2, 3, 8, 8}, 1.0f, 13, false);
    auto w = random_variable({32, 3, 3, 3}, 0.5f, 14, false);
    auto y = F::convolution(x, w, nullptr, o);
    y->forward();
    return std::make_pair(y->data()->array().layout(), to_doubles(y));
  };
  const auto [bl, by] = run(true);
  const auto [pl, py] = run(false);
  EXPECT_EQ(bl.plain(), !blocks);
  EXPECT_TRUE(pl.plain());
  expect_near(by, py, 1e-6, 1e-6, "y");
}

// Restores passes by thread (allowed) when the test ends.
struct ConvByThread {
  explicit ConvByThread(bool on) { cpu::set_conv_by_thread(on); }
  ~ConvByThread() { cpu::set_conv_by_thread(true); }
};

// 7 images (on two threads shares of 4 and 3, on three 3, 2 and 2, on
// five 2, 2, 1, 1 and 1: two plans each time) of `in` channels to 32, a
// k x k kernel padded to keep the side.
ConvGeometry by_thread_geometry(int64_t in, int64_t k, int64_t side) {
  ConvGeometry g;
  g.batch = 7, g.in_channels = in, g.out_channels = 32, g.group = 1;
  g.kernel = {k, k}, g.pad = {k / 2, k / 2};
  g.stride = {1, 1}, g.dilation = {1, 1};
  g.in_spatial = g.out_spatial = {side, side};
  return g;
}

// The smallest side on which the network below runs each convolution by
// thread in this process (the bounds follow parallel_min()), else 0 (one
// thread).
int64_t by_thread_side() {
  for (int64_t side = 4; side <= 128; ++side) {
    if (cpu::conv_by_thread(by_thread_geometry(1, 5, side)) &&
        cpu::conv_by_thread(by_thread_geometry(32, 3, side)) &&
        cpu::conv_by_thread(by_thread_geometry(32, 1, side))) {
      return side;
    }
  }
  return 0;
}

// The network's first convolution below: 7 images of 1 channel, 32 5x5
// kernels, pad 2.
ConvGeometry first_layer_geometry(int64_t side) {
  ConvGeometry g;
  g.batch = 7, g.in_channels = 1, g.out_channels = 32;
  g.in_spatial = g.out_spatial = {side, side};
  g.kernel = {5, 5}, g.pad = {2, 2}, g.stride = {1, 1}, g.dilation = {1, 1};
  return g;
}

struct ByThreadRun {
  Doubles y, dx, dw0, dw1, dw2, db1, db2;
  int64_t passes = 0;  // run by thread
};

// In `type` (half, which the kernels compute in fp32; bfloat16, which they
// compute in bf16 where the CPU has AVX512-BF16, else in fp32 too): a
// first 5x5 convolution
// from one channel (read row-major), a 3x3 and a 1x1 one of 32 channels
// held blocked (with biases), ReLUs between, and loss sum((y + h0) * c)
// for a fixed c and the first ReLU's output h0; one forward and backward
// with passes by thread allowed or not.
ByThreadRun by_thread_network(const char* type, bool on, int64_t side) {
  ContextGuard guard(context("cpu", type));
  ConvByThread by(on);
  auto x = random_variable({7, 1, side, side}, 1.0f, 21, false);
  auto w0 = random_variable({32, 1, 5, 5}, 0.5f, 22, true);
  auto w1 = random_variable({32, 32, 3, 3}, 0.1f, 23, true);
  auto b1 = random_variable({32}, 0.5f, 24, true);
  auto w2 = random_variable({32, 32, 1, 1}, 0.3f, 25, true);
  auto b2 = random_variable({32}, 0.5f, 26, true);
  auto c = random_variable({7, 32, side, side}, 1.0f, 27, false);
  ConvolutionOptions o5, o3;
  o5.pad = {2, 2};
  o3.pad = {1, 1};
  auto h0 = F::relu(F::convolution(x, w0, nullptr, o5));
  auto h1 = F::convolution(h0, w1, b1, o3);
  auto y = F::convolution(F::relu(h1), w2, b2, ConvolutionOptions{});
  // h0 also joins y: its grad is the add's plus the data pass's, added.
  auto loss = F::sum(F::mul2(F::add2(y, h0), c));
  const int64_t before = cpu::conv_by_thread_passes();
  loss->forward(/*clear_buffer=*/false);
  loss->backward(1.0f);
  ByThreadRun r;
  r.passes = cpu::conv_by_thread_passes() - before;
  r.y = to_doubles(y);
  r.dx = grad_doubles(h0);
  r.dw0 = grad_doubles(w0);
  r.dw1 = grad_doubles(w1);
  r.dw2 = grad_doubles(w2);
  r.db1 = grad_doubles(b1);
  r.db2 = grad_doubles(b2);
  return r;
}

// Passes by thread (each thread converting its share of the images,
// running a one-thread kernel on it and converting its result back)
// compute what the team's passes do: the same kernels on other splits of
// the batch, the weight grads summed in another order.
// Sets the team's size for a scope.
struct Threads {
  explicit Threads(int n) : saved(omp_get_max_threads()) {
    omp_set_num_threads(n);
  }
  ~Threads() { omp_set_num_threads(saved); }
  int saved;
};

TEST(BlockedActivations, PassesByThreadComputeWhatTheTeamsDo) {
  for (const int threads : {2, 3, 5}) {
    const Threads team(threads);
    const int64_t side = by_thread_side();
    ASSERT_GT(side, 0) << threads << " threads";
    for (const char* type : {"half", "bfloat16"}) {
      SCOPED_TRACE(testing::Message() << type << ", " << threads << " threads");
      const ByThreadRun t = by_thread_network(type, true, side);
      const ByThreadRun p = by_thread_network(type, false, side);
      EXPECT_EQ(p.passes, 0);
      // Where the kernels compute in fp32 and hand their maps over
      // blocked: the three forward passes and the last two layers' data
      // passes; the weight passes where their shares' grads are at most an
      // eighth of their maps to add (on two and three threads the first and
      // last layers', the last one's with the dy its data pass converted;
      // the 3x3 one's on small maps stays on the team). bf16 kernels take
      // no conversion, and no pass by thread. Where maps are not held
      // blocked (AVX2's blocks of 8), only a pass whose kernel reads and
      // writes row-major maps could. Where our direct kernel takes the
      // first layer (cpu/conv_direct.hpp), its forward pass and weight grad
      // are not passes by thread.
      const bool direct =
          std::string(type) == "half"
              ? cpu::conv_direct_forward_runs<Half>(first_layer_geometry(side))
              : cpu::conv_direct_forward_runs<BFloat16>(
                    first_layer_geometry(side));
      if (std::string(type) == "bfloat16" && cpu::bf16_kernels_pay()) {
        EXPECT_EQ(t.passes, 0);
      } else if (blocks_here(type)) {
        const int64_t team_passes = threads <= 3 ? 7 : 5;
        const int64_t first_layer = threads <= 3 ? 2 : 1;
        EXPECT_GE(t.passes, team_passes - (direct ? first_layer : 0));
      }
      const double a = std::string(type) == "half" ? 0.05 : 0.2;
      expect_near(t.y, p.y, a, 0.02, "y");
      expect_near(t.dx, p.dx, a, 0.02, "dx");
      expect_near(t.dw0, p.dw0, 10 * a, 0.02, "dW0");
      expect_near(t.dw1, p.dw1, 10 * a, 0.02, "dW1");
      expect_near(t.dw2, p.dw2, 10 * a, 0.02, "dW2");
      expect_near(t.db1, p.db1, 10 * a, 0.02, "db1");
      expect_near(t.db2, p.db2, 10 * a, 0.02, "db2");
    }
  }
}

}  // namespace
}  // namespace mg::test::blocked_activations_tests
