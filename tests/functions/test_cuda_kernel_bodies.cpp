// The CUDA kernels' bodies (functions/cuda/index_kernels.hpp) run on the CPU
// over every index, against the CPU functions: their math and indexing are
// checked here on every machine; a GPU run adds only the launch (the CUDA
// harness, label cuda, compares the launched kernels with the CPU).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <mixgraph/functions/cuda/index_kernels.hpp>
#include <mixgraph/mixgraph.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

namespace F = functions;
using cuda::run_on_host;

std::vector<float> random_values(int64_t n, unsigned seed, float lo = -2.0f,
                                 float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

VariablePtr ids_from(const Shape& shape, const std::vector<int32_t>& ids) {
  auto v = make_variable(shape, /*need_grad=*/false);
  int32_t* d = v->data()->cast<int32_t>(true);
  std::copy(ids.begin(), ids.end(), d);
  return v;
}

Doubles doubles(const std::vector<float>& v) {
  return Doubles(v.begin(), v.end());
}

// Runs y's backward with dy as its output grad (the input grads zeroed).
void backward_with(const VariablePtr& y, const std::vector<float>& dy,
                   const std::vector<VariablePtr>& inputs) {
  for (const auto& v : inputs) {
    if (v->need_grad()) v->grad()->zero();
  }
  NdArrayPtr seed = make_ndarray(y->shape());
  std::copy(dy.begin(), dy.end(), seed->cast<float>(true));
  y->backward(seed);
}

TEST(CudaKernelBodies, TransposeBothWaysMatchesTheCpu) {
  const Shape xs{2, 3, 4, 5};
  const std::vector<int> perm{2, 0, 3, 1};
  const auto xv = random_values(120, 1);
  auto x = variable_from(xs, xv, /*need_grad=*/true);
  auto y = F::transpose(x, perm);
  y->forward();
  std::vector<float> out(120);
  run_on_host(120,
              cuda::GatherBody<float>{xv.data(), out.data(),
                                      cuda::transpose_view(xs, perm), false});
  EXPECT_EQ(doubles(out), to_doubles(y));

  const auto dy = random_values(120, 2);
  backward_with(y, dy, {x});
  std::vector<float> dx(120, 0.5f);
  run_on_host(
      120, cuda::GatherBody<float>{dy.data(), dx.data(),
                                   cuda::transpose_grad_view(xs, perm), false});
  EXPECT_EQ(doubles(dx), grad_doubles(x));
  // With accum, the grad is added to what is there, in fp32.
  std::vector<float> acc(120, 1.0f);
  run_on_host(
      120, cuda::GatherBody<float>{dy.data(), acc.data(),
                                   cuda::transpose_grad_view(xs, perm), true});
  for (int i = 0; i < 120; ++i) EXPECT_FLOAT_EQ(acc[i], dx[i] + 1.0f);
}

TEST(CudaKernelBodies, ReshapeIsAContiguousCopy) {
  const auto xv = random_values(24, 3);
  std::vector<float> out(24);
  run_on_host(24, cuda::GatherBody<float>{xv.data(), out.data(),
                                          cuda::contiguous_view(24), false});
  EXPECT_EQ(out, xv);
}

// Over axis 1 of (2, 5, 3): rows of 5 classes with a stride of 3.
TEST(CudaKernelBodies, SoftmaxCrossEntropyMatchesTheCpu) {
  const Shape xs{2, 5, 3};
  const auto xv = random_values(30, 4, -6.0f, 6.0f);
  const std::vector<int32_t> labels{0, 4, 2, 1, 3, 4};
  auto x = variable_from(xs, xv, /*need_grad=*/true);
  auto t = ids_from({2, 1, 3}, labels);
  auto y = F::softmax_cross_entropy(x, t, 1);
  y->forward();
  std::vector<float> loss(6);
  run_on_host(6, cuda::SoftmaxCrossEntropyForwardBody<float>{
                     xv.data(), labels.data(), loss.data(), 5, 3});
  expect_near(doubles(loss), to_doubles(y), 1e-6, 1e-6, "loss");

  const auto dy = random_values(6, 5);
  backward_with(y, dy, {x});
  std::vector<float> dx(30);
  run_on_host(6,
              cuda::SoftmaxCrossEntropyBackwardBody<float>{
                  xv.data(), labels.data(), dy.data(), dx.data(), 5, 3, false});
  expect_near(doubles(dx), grad_doubles(x), 1e-6, 1e-5, "dx");

  // A label out of range gives NaN on the device (the host checks labels
  // it holds, with a message).
  const std::vector<int32_t> bad{0, 5, 2, 1, 3, -1};
  run_on_host(6, cuda::SoftmaxCrossEntropyForwardBody<float>{
                     xv.data(), bad.data(), loss.data(), 5, 3});
  EXPECT_TRUE(std::isnan(loss[1]));
  EXPECT_TRUE(std::isnan(loss[5]));
  EXPECT_FALSE(std::isnan(loss[0]));
}

// In half storage the body reads and writes Half and computes in fp32: the
// loss is the fp32 loss of the rounded inputs, rounded once.
TEST(CudaKernelBodies, SoftmaxCrossEntropyInHalfRoundsOnce) {
  const auto xv = random_values(40, 6, -8.0f, 8.0f);
  std::vector<Half> xh(xv.begin(), xv.end());
  std::vector<float> xr(xh.begin(), xh.end());
  const std::vector<int32_t> labels{1, 7, 9, 0};
  std::vector<Half> lh(4);
  std::vector<float> lf(4);
  run_on_host(4, cuda::SoftmaxCrossEntropyForwardBody<Half>{
                     xh.data(), labels.data(), lh.data(), 10, 1});
  run_on_host(4, cuda::SoftmaxCrossEntropyForwardBody<float>{
                     xr.data(), labels.data(), lf.data(), 10, 1});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(static_cast<float>(lh[i]), static_cast<float>(Half(lf[i])));
  }
}

// A Transformer's layout: (T, B, E) normalized over E, gamma and beta of
// (1, 1, E).
TEST(CudaKernelBodies, LayerNormalizationMatchesTheCpu) {
  const int64_t rows = 6, len = 8;
  const auto xv = random_values(rows * len, 7, -3.0f, 5.0f);
  const auto gv = random_values(len, 8, 0.5f, 1.5f);
  const auto bv = random_values(len, 9);
  auto x = variable_from({2, 3, len}, xv, true);
  auto gamma = variable_from({1, 1, len}, gv, true);
  auto beta = variable_from({1, 1, len}, bv, true);
  auto y = F::layer_normalization(x, beta, gamma, {0, 1});
  y->forward();
  std::vector<float> out(rows * len), mean(rows), rstd(rows);
  run_on_host(rows, cuda::LayerNormForwardBody<float>{
                        xv.data(), gv.data(), bv.data(), out.data(),
                        mean.data(), rstd.data(), len, 1e-5f});
  expect_near(doubles(out), to_doubles(y), 1e-5, 1e-5, "y");

  const auto dy = random_values(rows * len, 10);
  backward_with(y, dy, {x, gamma, beta});
  std::vector<float> dx(rows * len), dgamma(len), dbeta(len);
  run_on_host(rows, cuda::LayerNormBackwardBody<float>{
                        xv.data(), dy.data(), gv.data(), mean.data(),
                        rstd.data(), dx.data(), len, false});
  run_on_host(len, cuda::LayerNormParamGradBody<float>{
                       xv.data(), dy.data(), mean.data(), rstd.data(),
                       dgamma.data(), dbeta.data(), rows, len});
  expect_near(doubles(dx), grad_doubles(x), 1e-5, 1e-4, "dx");
  expect_near(doubles(dgamma), grad_doubles(gamma), 1e-5, 1e-5, "dgamma");
  expect_near(doubles(dbeta), grad_doubles(beta), 1e-5, 1e-5, "dbeta");

  // Without gamma and beta: the plain normalization.
  auto plain = F::layer_normalization(x, nullptr, nullptr, {0, 1});
  plain->forward();
  run_on_host(rows, cuda::LayerNormForwardBody<float>{
                        xv.data(), nullptr, nullptr, out.data(), mean.data(),
                        rstd.data(), len, 1e-5f});
  expect_near(doubles(out), to_doubles(plain), 1e-5, 1e-5, "plain y");
}

TEST(CudaKernelBodies, EmbedMatchesTheCpu) {
  const int64_t rows = 10, width = 4;
  const std::vector<int32_t> idv{3, 0, 9, 3, 3, 7};
  const auto wv = random_values(rows * width, 11);
  auto ids = ids_from({2, 3}, idv);
  auto w = variable_from({rows, width}, wv, true);
  auto y = F::embed(ids, w);
  y->forward();
  std::vector<float> out(6 * width);
  run_on_host(6 * width, cuda::EmbedForwardBody<float>{
                             idv.data(), wv.data(), out.data(), rows, width});
  EXPECT_EQ(doubles(out), to_doubles(y));

  const auto dy = random_values(6 * width, 12);
  backward_with(y, dy, {w});
  std::vector<float> dw(rows * width);
  run_on_host(rows * width, cuda::EmbedWeightGradBody<float>{
                                idv.data(), dy.data(), dw.data(), 6, width});
  // Id 3 appears three times: its row sums three rows of dy, in order.
  expect_near(doubles(dw), grad_doubles(w), 1e-6, 1e-6, "dW");

  const std::vector<int32_t> bad{3, 10, -1, 0, 0, 0};
  run_on_host(6 * width, cuda::EmbedForwardBody<float>{
                             bad.data(), wv.data(), out.data(), rows, width});
  EXPECT_TRUE(std::isnan(out[width]));
  EXPECT_TRUE(std::isnan(out[2 * width]));
  EXPECT_EQ(out[0], wv[3 * width]);
}

// Three inputs joined along axis 1: each written into y by the scatter,
// each grad read back from dy by the gather.
TEST(CudaKernelBodies, ConcatenateBothWaysMatchesTheCpu) {
  const std::vector<int64_t> widths{3, 1, 2};
  std::vector<VariablePtr> xs;
  std::vector<std::vector<float>> values;
  for (size_t k = 0; k < widths.size(); ++k) {
    values.push_back(random_values(2 * widths[k] * 4, 20 + k));
    xs.push_back(variable_from({2, widths[k], 4}, values.back(), true));
  }
  auto y = F::concatenate(xs, 1);
  y->forward();
  const int64_t outer = 2, row = 6 * 4;
  std::vector<float> out(y->size());
  int64_t offset = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t chunk = widths[k] * 4;
    run_on_host(outer * chunk,
                cuda::ScatterBody<float>{values[k].data(), out.data() + offset,
                                         cuda::rows_view(outer, chunk, row)});
    offset += chunk;
  }
  EXPECT_EQ(doubles(out), to_doubles(y));

  const auto dy = random_values(y->size(), 23);
  backward_with(y, dy, xs);
  offset = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t chunk = widths[k] * 4;
    std::vector<float> dx(outer * chunk);
    run_on_host(outer * chunk, cuda::GatherBody<float>{
                                   dy.data() + offset, dx.data(),
                                   cuda::rows_view(outer, chunk, row), false});
    EXPECT_EQ(doubles(dx), grad_doubles(xs[k])) << "input " << k;
    offset += chunk;
  }
}

// Unpooling, Pad (reflect and constant) and Tile are AxisGathers: their
// sources, inverted into tables, drive one pair of bodies. The grad sums in
// the CPU's order, so it matches exactly.
TEST(CudaKernelBodies, AxisGathersMatchTheCpu) {
  const Shape xs{2, 3, 2, 3};
  const auto xv = random_values(shape_size(xs), 30);
  const std::vector<std::function<VariablePtr(const VariablePtr&)>> makers{
      [](const VariablePtr& x) {
        return F::unpooling(x, {2, 2});
      },
      [](const VariablePtr& x) {
        return F::pad(x, {1, 1, 2, 1}, "reflect");
      },
      [](const VariablePtr& x) {
        return F::pad(x, {0, 1, 1, 0}, "constant", 0.5f);
      },
      [](const VariablePtr& x) {
        return F::tile(x, {1, 2, 1, 3});
      },
  };
  for (size_t m = 0; m < makers.size(); ++m) {
    SCOPED_TRACE("function " + std::to_string(m));
    auto x = variable_from(xs, xv, true);
    auto y = makers[m](x);
    y->forward();
    const auto& f = dynamic_cast<const AxisGather&>(y->parent()->function());
    cuda::AxisGatherTables t;
    const std::vector<int64_t> table =
        cuda::axis_gather_tables(f.x_view(), y->shape(), f.source(), &t);
    t.table = table.data();
    std::vector<float> out(y->size());
    run_on_host(y->size(), cuda::AxisGatherBody<float>{xv.data(), out.data(), t,
                                                       f.fill_value()});
    EXPECT_EQ(doubles(out), to_doubles(y));

    const auto dy = random_values(y->size(), 31);
    backward_with(y, dy, {x});
    std::vector<float> dx(x->size(), 2.0f);
    run_on_host(x->size(), cuda::AxisGatherGradBody<float>{dy.data(), dx.data(),
                                                           t, false});
    EXPECT_EQ(doubles(dx), grad_doubles(x));
  }
}

// Interpolate's passes, one per resized axis in fp32, the grad their
// transposes in reverse: the U-Net's bilinear 7x7 -> 14x14 (half-pixel)
// and an align-corners resize that shrinks one axis and grows the other.
TEST(CudaKernelBodies, InterpolateMatchesTheCpu) {
  struct Resize {
    Shape x, out;
    bool align_corners, half_pixel;
  };
  for (const Resize& c : {Resize{{2, 3, 7, 7}, {14, 14}, false, true},
                          Resize{{1, 2, 5, 4}, {3, 9}, true, false}}) {
    const auto xv = random_values(shape_size(c.x), 40);
    auto x = variable_from(c.x, xv, true);
    auto y = F::interpolate(x, c.out, "linear", c.align_corners, c.half_pixel);
    y->forward();
    const auto& f = dynamic_cast<const Interpolate&>(y->parent()->function());
    // The tables of each pass, as InterpolateCuda makes them.
    struct Pass {
      cuda::ResizeAxisTables t;
      std::vector<int64_t> ptr, pair_j;
      std::vector<float> pair_w;
    };
    std::vector<Pass> passes(f.axes().size());
    Shape s = c.x;
    for (size_t k = 0; k < passes.size(); ++k) {
      const ResizedAxis& r = f.axes()[k];
      Pass& p = passes[k];
      cuda::resize_axis_pairs(r.in, r.i0, r.i1, r.w, &p.ptr, &p.pair_j,
                              &p.pair_w);
      p.t.outer = shape_size(s, 0, r.axis);
      p.t.inner = shape_size(s, r.axis + 1, static_cast<int>(s.size()));
      p.t.in = r.in;
      p.t.out = r.out;
      p.t.i0 = r.i0.data();
      p.t.i1 = r.i1.data();
      p.t.w = r.w.data();
      p.t.ptr = p.ptr.data();
      p.t.pair_j = p.pair_j.data();
      p.t.pair_w = p.pair_w.data();
      s[r.axis] = r.out;
    }
    std::vector<float> cur = xv;
    for (const Pass& p : passes) {
      std::vector<float> next(p.t.outer * p.t.out * p.t.inner);
      run_on_host(static_cast<int64_t>(next.size()),
                  cuda::ResizeBody<float, float>{cur.data(), next.data(), p.t});
      cur = std::move(next);
    }
    expect_near(doubles(cur), to_doubles(y), 1e-6, 1e-6, "y");

    const auto dy = random_values(y->size(), 41);
    backward_with(y, dy, {x});
    std::vector<float> g = dy;
    for (size_t k = passes.size(); k-- > 0;) {
      const cuda::ResizeAxisTables& t = passes[k].t;
      std::vector<float> next(t.outer * t.in * t.inner);
      run_on_host(
          static_cast<int64_t>(next.size()),
          cuda::ResizeGradBody<float, float>{g.data(), next.data(), t, false});
      g = std::move(next);
    }
    expect_near(doubles(g), grad_doubles(x), 1e-6, 1e-6, "dx");
  }
}

}  // namespace
}  // namespace mg::test
