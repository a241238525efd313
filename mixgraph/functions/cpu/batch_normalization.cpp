// BatchNormalization and SyncBatchNormalization on the CPU: one kernel, whose
// steps are separated where SyncBatchNormalization all-reduces the channel
// sums (sum_over_ranks, nothing for BatchNormalization). x is seen as
// (size0, size1, size2): rows of size1 channels by size2 values. Channel sums
// run over blocks of rows in fp32, with one partial sum per block and per
// thread, added in a fixed order so the result does not depend on thread
// timing.
#include <cmath>
#include <vector>

#include <omp.h>

#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Whole rows of about kBlock elements: one conversion call per block.
struct RowBlocks {
  int64_t rows, row, per_block, count;
  RowBlocks(int64_t rows_, int64_t row_)
      : rows(rows_),
        row(row_),
        per_block(std::max<int64_t>(1, kBlock / std::max<int64_t>(1, row_))),
        count((rows_ + per_block - 1) / per_block) {}
  int64_t begin(int64_t b) const { return b * per_block; }
  int64_t length(int64_t b) const {
    return std::min(per_block, rows - begin(b));
  }
  bool parallel() const { return rows * row >= kParallelMin; }
};

// Calls fn(first_row, n_rows, scratch) for every block of rows in parallel;
// scratch holds `scratch_floats` floats per thread.
template <class Fn>
void for_each_row_block(const RowBlocks& rb, int64_t scratch_floats, Fn&& fn) {
#pragma omp parallel if (rb.parallel())
  {
    std::vector<float> scratch(scratch_floats);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < rb.count; ++b) {
      fn(rb.begin(b), rb.length(b), scratch.data());
    }
  }
}

// out[k] = sum over row blocks of fn(first_row, n_rows, block_acc, scratch),
// where fn adds a block's contribution to block_acc (nacc floats, zeroed).
template <class Fn>
std::vector<float> reduce_row_blocks(const RowBlocks& rb, int64_t nacc,
                                     int64_t scratch_floats, Fn&& fn) {
  const int threads = rb.parallel() ? omp_get_max_threads() : 1;
  std::vector<std::vector<float>> partial(threads,
                                          std::vector<float>(nacc, 0.0f));
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> scratch(scratch_floats), block(nacc);
    float* acc = partial[omp_get_thread_num()].data();
#pragma omp for schedule(static)
    for (int64_t b = 0; b < rb.count; ++b) {
      std::fill(block.begin(), block.end(), 0.0f);
      fn(rb.begin(b), rb.length(b), block.data(), scratch.data());
      for (int64_t k = 0; k < nacc; ++k) acc[k] += block[k];
    }
  }
  std::vector<float> out(nacc, 0.0f);
  for (const auto& p : partial) {
    for (int64_t k = 0; k < nacc; ++k) out[k] += p[k];
  }
  return out;
}

// Fn: BatchNormalization, or SyncBatchNormalization (whose sum_over_ranks
// makes every sum and count the whole batch's).
template <class T, class Fn>
class BatchNormalizationKernel : public Fn {
 public:
  using Fn::Fn;

 protected:
  using Fn::opts_;
  using Fn::size0_;
  using Fn::size1_;
  using Fn::size2_;

  void forward_full(const Variables& in, const Variables& out) override {
    const int64_t C = size1_, S = size2_, L = C * S;
    const RowBlocks rb(size0_, L);
    const T* x = input<T>(in[0]);
    mean_.assign(C, 0.0f);
    inv_std_.assign(C, 0.0f);
    if (opts_.batch_stat) {
      // Two passes (mean, then squared deviations): the one-pass
      // E[x^2] - E[x]^2 cancels badly when |mean| >> std.
      auto add_sums = [&](int64_t n0, int64_t nr, float* acc, float* buf) {
        const float* xf = load(x + n0 * L, buf, nr * L);
        for (int64_t n = 0; n < nr; ++n) {
          for (int64_t c = 0; c < C; ++c) {
            const float* r = xf + n * L + c * S;
            acc[c] += lanes_sum(S, [r](int64_t j) { return r[j]; });
          }
        }
      };
      // The sums, then the value count: one reduce over the ranks.
      mean_ = reduce_row_blocks(rb, C, rb.per_block * L, add_sums);
      mean_.push_back(static_cast<float>(size0_ * S));
      this->sum_over_ranks(mean_.data(), C + 1);
      count_ = mean_.back();
      mean_.pop_back();
      const float m = count_;
      for (auto& v : mean_) v /= m;
      auto add_squares = [&](int64_t n0, int64_t nr, float* acc, float* buf) {
        const float* xf = load(x + n0 * L, buf, nr * L);
        for (int64_t n = 0; n < nr; ++n) {
          for (int64_t c = 0; c < C; ++c) {
            const float* r = xf + n * L + c * S;
            const float mu = mean_[c];
            acc[c] += lanes_sum(
                S, [r, mu](int64_t j) { return (r[j] - mu) * (r[j] - mu); });
          }
        }
      };
      std::vector<float> var =
          reduce_row_blocks(rb, C, rb.per_block * L, add_squares);
      this->sum_over_ranks(var.data(), C);
      // The running statistics are fp32 whatever T is: cast<float> makes
      // the fp32 copy the head and drops any other.
      float* rm = in[3]->data()->cast<float>();
      float* rv = in[4]->data()->cast<float>();
      const float d = opts_.decay_rate;
      for (int64_t c = 0; c < C; ++c) {
        var[c] /= m;
        inv_std_[c] = 1.0f / std::sqrt(var[c] + opts_.eps);
        rm[c] = d * rm[c] + (1.0f - d) * mean_[c];
        rv[c] = d * rv[c] + (1.0f - d) * var[c] * (m / (m - 1.0f));
      }
    } else {
      const float* rm = in[3]->data()->get<const float>();
      const float* rv = in[4]->data()->get<const float>();
      for (int64_t c = 0; c < C; ++c) {
        mean_[c] = rm[c];
        inv_std_[c] = 1.0f / std::sqrt(rv[c] + opts_.eps);
      }
    }
    // y = (x - mu) * scale + beta per channel; subtracting mu first keeps
    // the precision when |mu| is much larger than the spread.
    const float* beta = input<float>(in[1]);
    const float* gamma = input<float>(in[2]);
    std::vector<float> scale(C);
    for (int64_t c = 0; c < C; ++c) scale[c] = gamma[c] * inv_std_[c];
    T* y = output<T>(out[0]);
    auto normalise = [&](int64_t n0, int64_t nr, float* buf) {
      const float* xf = load(x + n0 * L, buf, nr * L);
      float* yb = buf + rb.per_block * L;
      for (int64_t n = 0; n < nr; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          const int64_t off = n * L + c * S;
          for (int64_t j = 0; j < S; ++j) {
            yb[off + j] = (xf[off + j] - mean_[c]) * scale[c] + beta[c];
          }
        }
      }
      finish_rows(in, n0 * L, yb, nr * L);
      store(yb, y + n0 * L, nr * L);
    };
    for_each_row_block(rb, 2 * rb.per_block * L, normalise);
  }

  // With batch statistics, xh = (x - mu) inv_std and
  //   dx = gamma inv_std (dy - sum(dy) / M - xh sum(dy xh) / M);
  // with running statistics mu and inv_std are constants: dx = gamma
  // inv_std dy. In both, dbeta = sum(dy) and dgamma = sum(dy xh). The sums
  // in dx are the whole batch's (over the ranks); dbeta and dgamma stay this
  // rank's: the data-parallel grad all-reduce adds them up.
  void backward_full(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1] && !propagate_down[2]) return;
    const int64_t C = size1_, S = size2_, L = C * S;
    const RowBlocks rb(size0_, L);
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    const bool need_sums =
        propagate_down[1] || propagate_down[2] || opts_.batch_stat;
    std::vector<float> sums;  // sum(dy) per channel, then sum(dy (x - mu))
    if (need_sums) {
      auto add_grad_sums = [&](int64_t n0, int64_t nr, float* acc, float* buf) {
        const float* xf = load(x + n0 * L, buf, nr * L);
        const float* df = load(dy + n0 * L, buf + rb.per_block * L, nr * L);
        for (int64_t n = 0; n < nr; ++n) {
          for (int64_t c = 0; c < C; ++c) {
            const float* d = df + n * L + c * S;
            const float* r = xf + n * L + c * S;
            const float mu = mean_[c];
            acc[c] += lanes_sum(S, [d](int64_t j) { return d[j]; });
            acc[C + c] += lanes_sum(
                S, [d, r, mu](int64_t j) { return d[j] * (r[j] - mu); });
          }
        }
      };
      sums = reduce_row_blocks(rb, 2 * C, 2 * rb.per_block * L, add_grad_sums);
    }
    if (propagate_down[1]) {
      store_grad<T>(sums.data(), in[1], accum[1]);  // fp32 for an fp32 master
    }
    if (propagate_down[2]) {
      std::vector<float> dgamma(C);
      for (int64_t c = 0; c < C; ++c) dgamma[c] = sums[C + c] * inv_std_[c];
      store_grad<T>(dgamma.data(), in[2], accum[2]);
    }
    if (!propagate_down[0]) return;
    // dx = a dy + b (x - mu) + k per channel.
    if (opts_.batch_stat) this->sum_over_ranks(sums.data(), 2 * C);
    const float* gamma = input<float>(in[2]);
    std::vector<float> a(C), b(C, 0.0f), k(C, 0.0f);
    const float m = count_;
    for (int64_t c = 0; c < C; ++c) {
      a[c] = gamma[c] * inv_std_[c];
      if (opts_.batch_stat) {
        b[c] = -a[c] * inv_std_[c] * inv_std_[c] * sums[C + c] / m;
        k[c] = -a[c] * sums[c] / m;
      }
    }
    T* dx = input_grad<T>(in[0], accum[0]);
    auto grad_x = [&](int64_t n0, int64_t nr, float* buf) {
      const float* xf = load(x + n0 * L, buf, nr * L);
      const float* df = load(dy + n0 * L, buf + rb.per_block * L, nr * L);
      float* db = buf + 2 * rb.per_block * L;
      for (int64_t n = 0; n < nr; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          const int64_t off = n * L + c * S;
          for (int64_t j = 0; j < S; ++j) {
            db[off + j] =
                a[c] * df[off + j] + b[c] * (xf[off + j] - mean_[c]) + k[c];
          }
        }
      }
      store(db, dx + n0 * L, nr * L, accum[0]);
    };
    for_each_row_block(rb, 3 * rb.per_block * L, grad_x);
  }

  // Applied to n fp32 values of y from flat offset `offset` before they are
  // stored: nothing here; FusedBatchNormalization adds z and takes the ReLU.
  virtual void finish_rows(const Variables& /*in*/, int64_t /*offset*/,
                           float* /*y*/, int64_t /*n*/) const {}

 private:
  // The statistics forward normalised with, for backward: the batch's in
  // training, the running ones in inference; the batch's value count.
  std::vector<float> mean_, inv_std_;
  float count_ = 0.0f;
};

template <class T>
using BatchNormalizationCpu = BatchNormalizationKernel<T, BatchNormalization>;
template <class T>
using SyncBatchNormalizationCpu =
    BatchNormalizationKernel<T, SyncBatchNormalization>;

// BatchNormalization's kernel with z added and the ReLU taken on the fp32
// values of y before they are stored (one rounding); backward masks dy with
// y > 0 and runs BatchNormalization's backward on the masked grad.
template <class T>
class FusedBatchNormalizationCpu
    : public BatchNormalizationKernel<T, FusedBatchNormalization> {
  using Base = BatchNormalizationKernel<T, FusedBatchNormalization>;

 public:
  using Base::Base;

 protected:
  void finish_rows(const Variables& in, int64_t offset, float* y,
                   int64_t n) const override {
    if (in.size() == 6) {
      std::vector<float> buf(n);
      const float* z = load(input<T>(in[5]) + offset, buf.data(), n);
      for (int64_t i = 0; i < n; ++i) y[i] += z[i];
    }
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
  }

  void backward_full(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const bool to_z = in.size() == 6 && propagate_down[5];
    const bool to_bn =
        propagate_down[0] || propagate_down[1] || propagate_down[2];
    if (!to_z && !to_bn) return;
    // The ReLU's grad, exact in T (dy or 0).
    const int64_t n = out[0]->size();
    const T* y = input<T>(out[0]);
    const T* dy = output_grad<T>(out[0]);
    Variable masked(out[0]->shape());
    T* dm = masked.grad()->cast<T>(true);
    for (int64_t i = 0; i < n; ++i) {
      dm[i] = static_cast<float>(y[i]) > 0.0f ? dy[i] : T(0.0f);
    }
    if (to_z) {
      T* dz = input_grad<T>(in[5], accum[5]);
      for (int64_t i = 0; i < n; ++i) {
        dz[i] = accum[5]
                    ? T(static_cast<float>(dz[i]) + static_cast<float>(dm[i]))
                    : dm[i];
      }
    }
    if (!to_bn) return;
    const Variables bn_in(in.begin(), in.begin() + 5);
    Base::backward_full(
        bn_in, {&masked},
        std::vector<bool>(propagate_down.begin(), propagate_down.begin() + 5),
        std::vector<bool>(accum.begin(), accum.begin() + 5));
  }
};

}  // namespace

void register_fused_batch_normalization(FunctionRegistry& r) {
  register_float_types<FusedBatchNormalizationCpu>(
      r, decl::FusedBatchNormalization, "cpu");
}

void register_batch_normalization(FunctionRegistry& r) {
  register_float_types<BatchNormalizationCpu>(r, decl::BatchNormalization,
                                              "cpu");
}

void register_sync_batch_normalization(FunctionRegistry& r) {
  register_float_types<SyncBatchNormalizationCpu>(
      r, decl::SyncBatchNormalization, "cpu");
}

}  // namespace mg::cpu
