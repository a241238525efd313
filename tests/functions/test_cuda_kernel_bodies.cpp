// The CUDA kernels' bodies (functions/cuda/index_kernels.hpp) run on the CPU
// over every index, against the CPU functions: their math and indexing are
// checked here on every machine; a GPU run adds only the launch (the CUDA
// harness, label cuda, compares the launched kernels with the CPU).
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <mixgraph/functions/cpu/recurrent_backend.hpp>
#include <mixgraph/functions/cuda/index_kernels.hpp>
#include <mixgraph/functions/ops/recurrent_driver.hpp>
#include <mixgraph/mixgraph.hpp>

#include "../support/function_tester.hpp"

namespace mg::test::cuda_kernel_bodies_tests {
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

// The lanes of one row, each a thread, as a warp's lanes are: a join writes
// the lane's partials, waits for every lane's, and adds them up (or takes
// their max) in lane order (the device's butterfly adds in another order:
// the same sum within rounding).
class HostLanes {
 public:
  explicit HostLanes(int lanes) : lanes_(lanes), slots_(2 * lanes) {}

  struct Join {
    HostLanes* lanes;
    int lane;
    void sum(float& a) const {
      float unused = 0.0f;
      lanes->join(lane, a, unused, false);
    }
    void sum(float& a, float& b) const { lanes->join(lane, a, b, false); }
    void max(float& a) const {
      float unused = 0.0f;
      lanes->join(lane, a, unused, true);
    }
  };

 private:
  void join(int lane, float& a, float& b, bool max) {
    slots_[2 * lane] = a;
    slots_[2 * lane + 1] = b;
    wait();  // every lane's partials are in
    a = max ? -INFINITY : 0.0f;
    b = 0.0f;
    for (int l = 0; l < lanes_; ++l) {
      a = max ? std::fmax(a, slots_[2 * l]) : a + slots_[2 * l];
      b += slots_[2 * l + 1];
    }
    wait();  // every lane has read them: the slots may be written again
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t generation = generation_;
    if (++waiting_ == lanes_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

  int lanes_;
  std::vector<float> slots_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  int64_t generation_ = 0;
};

// Runs a row body as the device does, body(r, lane, lanes, join) with the
// lanes of a row side by side (threads here, a warp there).
template <class Body>
void run_rows_on_host(int64_t rows, int lanes, const Body& body) {
  for (int64_t r = 0; r < rows; ++r) {
    HostLanes shared(lanes);
    std::vector<std::thread> threads;
    for (int l = 0; l < lanes; ++l) {
      threads.emplace_back([&, l] {
        body(r, l, lanes, HostLanes::Join{&shared, l});
      });
    }
    for (auto& t : threads) t.join();
  }
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
  const cuda::SoftmaxCrossEntropyBackwardBody<float> backward{
      xv.data(), labels.data(), dy.data(), dx.data(), 5, 3, false};
  run_on_host(6, backward);
  expect_near(doubles(dx), grad_doubles(x), 1e-6, 1e-5, "dx");
  // The rows shared by lanes, unevenly (2 and 3 of 5 classes) and with
  // more lanes than classes.
  for (int lanes : {2, 8}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    std::fill(loss.begin(), loss.end(), 0.0f);
    run_rows_on_host(6, lanes,
                     cuda::SoftmaxCrossEntropyForwardBody<float>{
                         xv.data(), labels.data(), loss.data(), 5, 3});
    expect_near(doubles(loss), to_doubles(y), 1e-6, 1e-6, "loss");
    std::fill(dx.begin(), dx.end(), 0.0f);
    run_rows_on_host(6, lanes, backward);
    expect_near(doubles(dx), grad_doubles(x), 1e-6, 1e-5, "dx");
  }

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
// (1, 1, E). The rows as one lane each, as three (uneven shares of 8) and
// as 16 (more lanes than elements); gamma's and beta's grads in chunks of
// 4 rows and then the chunks.
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
  const cuda::LayerNormForwardBody<float> forward{
      xv.data(),   gv.data(),   bv.data(), out.data(),
      mean.data(), rstd.data(), len,       1e-5f};
  run_on_host(rows, forward);
  expect_near(doubles(out), to_doubles(y), 1e-5, 1e-5, "y");
  for (int lanes : {3, 16}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    std::fill(out.begin(), out.end(), 0.0f);
    run_rows_on_host(rows, lanes, forward);
    expect_near(doubles(out), to_doubles(y), 1e-5, 1e-5, "y");
  }

  const auto dy = random_values(rows * len, 10);
  backward_with(y, dy, {x, gamma, beta});
  std::vector<float> dx(rows * len);
  const cuda::LayerNormBackwardBody<float> backward{
      xv.data(),   dy.data(), gv.data(), mean.data(),
      rstd.data(), dx.data(), len,       false};
  run_on_host(rows, backward);
  expect_near(doubles(dx), grad_doubles(x), 1e-5, 1e-4, "dx");
  for (int lanes : {3, 16}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    std::fill(dx.begin(), dx.end(), 0.0f);
    run_rows_on_host(rows, lanes, backward);
    expect_near(doubles(dx), grad_doubles(x), 1e-5, 1e-4, "dx");
  }
  // Rows in chunks of 4: two chunks (one of 2), then their sums.
  const int64_t chunks = 2;
  std::vector<float> partial_g(chunks * len), partial_b(chunks * len);
  run_on_host(chunks * len,
              cuda::LayerNormParamGradBody<float>{
                  xv.data(), dy.data(), mean.data(), rstd.data(),
                  partial_g.data(), partial_b.data(), rows, len, 4});
  std::vector<float> dgamma(len), dbeta(len);
  run_on_host(
      len, cuda::ColumnSumBody{partial_g.data(), dgamma.data(), chunks, len});
  run_on_host(len,
              cuda::ColumnSumBody{partial_b.data(), dbeta.data(), chunks, len});
  expect_near(doubles(dgamma), grad_doubles(gamma), 1e-5, 1e-5, "dgamma");
  expect_near(doubles(dbeta), grad_doubles(beta), 1e-5, 1e-5, "dbeta");
  // One chunk of every row: the first pass gives the grads.
  std::fill(dgamma.begin(), dgamma.end(), 0.0f);
  run_on_host(len, cuda::LayerNormParamGradBody<float>{
                       xv.data(), dy.data(), mean.data(), rstd.data(),
                       dgamma.data(), nullptr, rows, len, rows});
  expect_near(doubles(dgamma), grad_doubles(gamma), 1e-5, 1e-5, "dgamma");
  EXPECT_EQ(cuda::layer_norm_chunk_rows(6), 32);
  EXPECT_EQ(cuda::layer_norm_chunk_rows(1024), 32);
  EXPECT_EQ(cuda::layer_norm_chunk_rows(1025), 64);

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

// FusedBatchNormalization as the device computes it: FusedBnForwardBody
// from the statistics (cuDNN's batch ones there; here the batch's, or the
// running ones through InvStdBody as in inference), and in backward
// ReluMaskBody, then the normalization's backward on the masked grad. The
// running statistics' forward and every grad are the CPU's fused layer's
// bit for bit in float.
TEST(CudaKernelBodies, FusedBatchNormalizationMatchesTheCpu) {
  const Shape xs{4, 3, 5}, ps{1, 3, 1};
  const int64_t n = shape_size(xs), C = 3, inner = 5;
  const auto xv = random_values(n, 21), zv = random_values(n, 22);
  const auto bv = random_values(C, 23), gv = random_values(C, 24, 0.5f, 1.5f);
  const std::vector<float> rm{0.25f, -0.5f, 0.0f}, rv{1.5f, 0.75f, 2.0f};
  const auto dyv = random_values(n, 25);
  for (bool batch_stat : {false, true}) {
    SCOPED_TRACE(batch_stat ? "training" : "inference");
    auto params = [&] {
      return std::vector<VariablePtr>{
          variable_from(xs, xv, true), variable_from(ps, bv, true),
          variable_from(ps, gv, true), variable_from(ps, rm),
          variable_from(ps, rv)};
    };
    FusedBatchNormalizationOptions fo;
    fo.batch_stat = batch_stat;
    const auto f = params();
    auto z = variable_from(xs, zv, true);
    auto fused =
        F::fused_batch_normalization(f[0], f[1], f[2], f[3], f[4], z, fo);
    fused->forward();
    backward_with(fused, dyv, {f[0], f[1], f[2], z});

    std::vector<float> mean(C), inv_std(C), y(n);
    if (batch_stat) {
      for (int64_t c = 0; c < C; ++c) {
        double s = 0, ss = 0;
        for (int64_t o = 0; o < 4; ++o) {
          for (int64_t j = 0; j < inner; ++j) s += xv[(o * C + c) * inner + j];
        }
        mean[c] = static_cast<float>(s / 20);
        for (int64_t o = 0; o < 4; ++o) {
          for (int64_t j = 0; j < inner; ++j) {
            const double d = xv[(o * C + c) * inner + j] - s / 20;
            ss += d * d;
          }
        }
        inv_std[c] = static_cast<float>(1.0 / std::sqrt(ss / 20 + 1e-5));
      }
    } else {
      mean = rm;
      run_on_host(C, cuda::InvStdBody{rv.data(), 1e-5f, inv_std.data()});
    }
    run_on_host(n, cuda::FusedBnForwardBody<float>{
                       xv.data(), zv.data(), mean.data(), inv_std.data(),
                       gv.data(), bv.data(), y.data(), C, inner});
    if (batch_stat) {
      expect_near(doubles(y), to_doubles(fused), 1e-5, 1e-5, "y");
    } else {
      EXPECT_EQ(doubles(y), to_doubles(fused));
    }
    std::vector<float> dm(n), dz(n);
    run_on_host(n, cuda::ReluMaskBody<float>{y.data(), dyv.data(), dm.data(),
                                             dz.data(), false});
    EXPECT_EQ(doubles(dz), grad_doubles(z));
    BatchNormalizationOptions bo;
    bo.batch_stat = batch_stat;
    const auto b = params();
    auto bn = F::batch_normalization(b[0], b[1], b[2], b[3], b[4], bo);
    bn->forward();
    backward_with(bn, dm, {b[0], b[1], b[2]});
    EXPECT_EQ(grad_doubles(b[0]), grad_doubles(f[0]));
    EXPECT_EQ(grad_doubles(b[1]), grad_doubles(f[1]));
    EXPECT_EQ(grad_doubles(b[2]), grad_doubles(f[2]));

    // z's grad added into.
    std::vector<float> acc(n, 1.0f);
    run_on_host(n, cuda::ReluMaskBody<float>{y.data(), dyv.data(), dm.data(),
                                             acc.data(), true});
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(acc[i], 1.0f + dm[i]) << i;
  }
  // A NaN gives 0 both ways; no z.
  const std::vector<float> nan_x{NAN, -1.0f, 2.0f}, zero{0, 0, 0}, one{1, 1, 1},
      g{5.0f, 6.0f, 7.0f};
  std::vector<float> y(3), m(3);
  run_on_host(3, cuda::FusedBnForwardBody<float>{
                     nan_x.data(), nullptr, zero.data(), one.data(), one.data(),
                     zero.data(), y.data(), 3, 1});
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 2.0f}));
  const std::vector<float> nan_y{NAN, -1.0f, 2.0f};
  run_on_host(3, cuda::ReluMaskBody<float>{nan_y.data(), g.data(), m.data(),
                                           nullptr, false});
  EXPECT_EQ(m, (std::vector<float>{0.0f, 0.0f, 7.0f}));
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
    };
    std::vector<Pass> passes(f.axes().size());
    Shape s = c.x;
    for (size_t k = 0; k < passes.size(); ++k) {
      const ResizedAxis& r = f.axes()[k];
      Pass& p = passes[k];
      p.t.outer = shape_size(s, 0, r.axis);
      p.t.inner = shape_size(s, r.axis + 1, static_cast<int>(s.size()));
      p.t.in = r.in;
      p.t.out = r.out;
      p.t.i0 = r.i0.data();
      p.t.i1 = r.i1.data();
      p.t.w = r.w.data();
      p.t.ptr = r.ptr.data();
      p.t.pair_j = r.pair_j.data();
      p.t.pair_w = r.pair_w.data();
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

// The recurrent driver as cuda/recurrent.cu runs it: products with a bias
// start from BiasRowsBody's rows and add to them, a plain product per step
// (nothing packed), the bias grads added by AddToBody, and the cells one
// element at a time through CellForwardBody / CellBackwardBody, in index
// order, each step's product and cells one call after the other. The
// products themselves and the strided copies are the CPU's (on the device:
// cuBLAS and cudaMemcpy2D).
struct DeviceBodiesBackend : cpu::RecurrentBackend<float>,
                             recurrent::StepsInTheDriver {
  using Base = cpu::RecurrentBackend<float>;
  using StepsInTheDriver::backward_steps;
  using StepsInTheDriver::forward_steps;
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
            Operand b, float* c, const float* bias, bool accum) {
    if (bias) run_on_host(m * n, cuda::BiasRowsBody{bias, c, n, accum});
    Base::gemm(ta, tb, m, n, k, a, b, c, nullptr, bias || accum);
  }
  void add(const float* src, float* dst, int64_t n) {
    run_on_host(n, cuda::AddToBody{src, dst});
  }
  recurrent::PlainStepProduct<DeviceBodiesBackend> step_product(
      bool tb, int64_t m, int64_t n, int64_t k, Operand b, bool, bool accum) {
    return {this, tb, m, n, k, b, accum};
  }
  template <class Cell>
  void forward_cells(const Cell& cell, const recurrent::StepForward& s,
                     int64_t B, int64_t H) {
    run_on_host(B * H, recurrent::CellForwardBody<Cell>{cell, s, H});
  }
  template <class Cell>
  void backward_cells(const Cell& cell, const recurrent::StepBack& s, int64_t B,
                      int64_t H) {
    run_on_host(B * H, recurrent::CellBackwardBody<Cell>{cell, s, H});
  }
};

// Two bidirectional layers with biases, forward and backward, against the
// CPU function (whose cells are the same functions, run 16 wide).
template <class Cell>
void check_recurrent_driver(const Cell& cell, const char* name) {
  using Buffer = DeviceBodiesBackend::Buffer;
  constexpr int G = Cell::kGates, L = 2, D = 2;
  constexpr bool lstm = std::is_same_v<Cell, recurrent::LstmCell>;
  const int bias_rows = std::is_same_v<Cell, recurrent::GruCell> ? 4 : G;
  const int64_t S = 4, B = 3, I = 5, H = 6;
  const Shape xs{S, B, I}, hs{L, D, B, H}, w0s{D, G, H, I + H},
      ws{L - 1, D, G, H, D * H + H}, bs{L, D, bias_rows, H};
  const auto xv = random_values(shape_size(xs), 11),
             h0v = random_values(shape_size(hs), 12),
             c0v = random_values(shape_size(hs), 13),
             w0v = random_values(shape_size(w0s), 14, -0.5f, 0.5f),
             wv = random_values(shape_size(ws), 15, -0.5f, 0.5f),
             bv = random_values(shape_size(bs), 16, -0.5f, 0.5f);
  const auto ry = random_values(S * B * D * H, 17),
             rh = random_values(shape_size(hs), 18),
             rc = random_values(shape_size(hs), 19);
  auto x = variable_from(xs, xv, true), h0 = variable_from(hs, h0v, true),
       c0 = variable_from(hs, c0v, true), w0 = variable_from(w0s, w0v, true),
       w = variable_from(ws, wv, true), b = variable_from(bs, bv, true);
  VariablePtr y, hn, cn;
  if constexpr (lstm) {
    RecurrentOptions o;
    o.num_layers = L, o.bidirectional = true;
    std::tie(y, hn, cn) = F::lstm(x, h0, c0, w0, w, b, o);
  } else if constexpr (std::is_same_v<Cell, recurrent::GruCell>) {
    RecurrentOptions o;
    o.num_layers = L, o.bidirectional = true;
    std::tie(y, hn) = F::gru(x, h0, w0, w, b, o);
  } else {
    RNNOptions o;
    o.num_layers = L, o.bidirectional = true;
    o.nonlinearity = cell.relu ? "relu" : "tanh";
    std::tie(y, hn) = F::rnn(x, h0, w0, w, b, o);
  }
  // The loss' grads of y, h_n and c_n are ry, rh and rc.
  auto weighted = [](const VariablePtr& v, const std::vector<float>& r) {
    return F::sum(F::mul2(v, variable_from(v->shape(), r, false)));
  };
  auto loss = F::add2(weighted(y, ry), weighted(hn, rh));
  if (lstm) loss = F::add2(loss, weighted(cn, rc));
  loss->forward();
  for (const auto& v : {x, h0, c0, w0, w, b}) v->grad()->zero();
  loss->backward();

  DeviceBodiesBackend be;
  recurrent::Driver<Cell, DeviceBodiesBackend> driver(
      cell, recurrent::Dims{L, D, S, B, I, H, bias_rows});
  const typename recurrent::Driver<Cell, DeviceBodiesBackend>::Params p{
      h0v.data(), lstm ? c0v.data() : nullptr, w0v.data(), wv.data(),
      bv.data()};
  const auto out = driver.forward(be, Buffer(xv.begin(), xv.end()), p);
  auto near = [&](const Buffer& got, const Doubles& want, const char* what) {
    SCOPED_TRACE(std::string(name) + " " + what);
    expect_near(Doubles(got.begin(), got.end()), want, 1e-5, 1e-5, what);
  };
  near(out.y, to_doubles(y), "y");
  near(out.hn, to_doubles(hn), "h_n");
  if (lstm) near(out.cn, to_doubles(cn), "c_n");
  const auto g =
      driver.backward(be, Buffer(ry.begin(), ry.end()), rh.data(), rc.data());
  near(g.dx, grad_doubles(x), "dx");
  near(g.dh0, grad_doubles(h0), "dh0");
  if (lstm) near(g.dc0, grad_doubles(c0), "dc0");
  near(g.dw0, grad_doubles(w0), "dweight_l0");
  near(g.dw, grad_doubles(w), "dweight");
  near(g.db, grad_doubles(b), "dbias");
}

// The backends' product contract, c = a b [+ bias] [+ c]: the device's
// way (the bias rows first, then the product added) with and without
// accum, against the CPU's oneDNN product with the bias inside.
TEST(CudaKernelBodies, RecurrentProductsWithABias) {
  const int64_t m = 3, n = 5, k = 4;
  const auto a = random_values(m * k, 21), b = random_values(k * n, 22),
             bias = random_values(n, 23), c0 = random_values(m * n, 24);
  const cpu::Operand ao{a.data(), Dtype::f32}, bo{b.data(), Dtype::f32};
  for (bool accum : {false, true}) {
    SCOPED_TRACE(accum ? "accum" : "no accum");
    std::vector<float> want = c0, got = c0;
    cpu::RecurrentBackend<float>().gemm(false, false, m, n, k, ao, bo,
                                        want.data(), bias.data(), accum);
    DeviceBodiesBackend().gemm(false, false, m, n, k, ao, bo, got.data(),
                               bias.data(), accum);
    expect_near(doubles(got), doubles(want), 1e-6, 1e-6, "c");
  }
}

TEST(CudaKernelBodies, RecurrentDriverWithDeviceBodiesMatchesTheCpu) {
  check_recurrent_driver(recurrent::LstmCell{}, "LSTM");
  check_recurrent_driver(recurrent::GruCell{}, "GRU");
  check_recurrent_driver(recurrent::RnnCell{false}, "RNN tanh");
  check_recurrent_driver(recurrent::RnnCell{true}, "RNN relu");
}

}  // namespace
}  // namespace mg::test::cuda_kernel_bodies_tests
