// ScaledDotProductAttention on the CPU, blocked as FlashAttention is: per
// block of queries, the scores against one block of keys at a time, the
// softmax kept online in fp32 (each query's running max and sum; the output
// rescaled when the max moves), blocks the causal mask hides entirely
// skipped. The backward recomputes each block's weights from the forward's
// log-sum-exp instead of reading an (L, S) matrix, which the composed form
// (BatchMatmul, Add2, Softmax, BatchMatmul) writes and reads back several
// times in each pass. The block products are our packed product
// (gemm_packed.hpp, fp32 accumulation), which reads half and bfloat16 q, k,
// v and dy as they are, converting while it packs.
#include <cmath>
#include <limits>
#include <vector>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/attention.hpp>
#include <mixgraph/functions/cpu/axis_tile.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// A block's rows (rows x cols, row-major) between its two products,
// compiled per vector ISA (the same bits on each: contraction is off), one
// call a block. Compiled for the baseline alone, the scaling and the
// softmax's grad ran 4 wide, and the backward's exp went a call a row with
// a sum it did not need: of a GPT layer's fused attention (forward and
// backward, 2.8 ms), perf put 15% in exp_of_difference, 3% in its sum and
// 9% in the loops here. Row r's first seen[r] columns are the keys its
// query sees; the rest are zeroed (the causal mask).
namespace attention_rows {
// clang-format off
#define MG_ATTENTION_ROWS(NS, TARGET)                                      \
  namespace NS {                                                           \
  /* s = s scale (the scores). */                                          \
  TARGET void scale(float* s, int64_t rows, int64_t cols,                  \
                    const int64_t* seen, float scale) {                    \
    for (int64_t r = 0; r < rows; ++r) {                                   \
      float* row = s + r * cols;                                           \
      for (int64_t c = 0; c < seen[r]; ++c) row[c] *= scale;               \
      for (int64_t c = seen[r]; c < cols; ++c) row[c] = 0.0f;              \
    }                                                                      \
  }                                                                        \
  /* s = exp(s scale - shift[r]) (the weights, from the log-sum-exp). */   \
  TARGET __attribute__((flatten)) void weights(                            \
      float* s, int64_t rows, int64_t cols, const int64_t* seen,           \
      float scale, const float* shift) {                                   \
    for (int64_t r = 0; r < rows; ++r) {                                   \
      float* row = s + r * cols;                                           \
      const float m = shift[r];                                            \
      for (int64_t c = 0; c < seen[r]; ++c) {                              \
        row[c] = vmath::exp(row[c] * scale - m);                           \
      }                                                                    \
      for (int64_t c = seen[r]; c < cols; ++c) row[c] = 0.0f;              \
    }                                                                      \
  }                                                                        \
  /* ds = scale p (ds - dot[r]): the softmax's backward, scaled. */        \
  TARGET void score_grads(float* ds, const float* p, int64_t rows,         \
                          int64_t cols, const float* dot, float scale) {   \
    for (int64_t r = 0; r < rows; ++r) {                                   \
      float* d = ds + r * cols;                                            \
      const float* pr = p + r * cols;                                      \
      const float sub = dot[r];                                            \
      _Pragma("GCC ivdep")                                                 \
      for (int64_t c = 0; c < cols; ++c) d[c] = scale * pr[c] * (d[c] - sub); \
    }                                                                      \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_ATTENTION_ROWS)
#undef MG_ATTENTION_ROWS
// clang-format on
}  // namespace attention_rows

void scale_scores(float* s, int64_t rows, int64_t cols, const int64_t* seen,
                  float scale) {
  using namespace attention_rows;
  MG_CALL_VECTOR_ISA(scale(s, rows, cols, seen, scale));
}
void weights_of_scores(float* s, int64_t rows, int64_t cols,
                       const int64_t* seen, float scale, const float* shift) {
  using namespace attention_rows;
  MG_CALL_VECTOR_ISA(weights(s, rows, cols, seen, scale, shift));
}
void score_grads(float* ds, const float* p, int64_t rows, int64_t cols,
                 const float* dot, float scale) {
  using namespace attention_rows;
  MG_CALL_VECTOR_ISA(score_grads(ds, p, rows, cols, dot, scale));
}

// Rows of queries and of keys per block: 64 x 64 fp32 scores are 16 KiB,
// which stay in L1 between the two products that use them.
constexpr int64_t kQueryBlock = 64, kKeyBlock = 64;

Operand rows_from(Operand x, int64_t offset) {
  return {static_cast<const char*>(x.data) + offset * dtype_size(x.dtype),
          x.dtype};
}

// C (m x n, fp32, row-major) = op(A) op(B) [+ C], on the calling thread
// (one block of one attention: the threads share out the blocks), packing
// into the thread's `scratch`.
class BlockProducts {
 public:
  BlockProducts()
      : here_(gemm_packed_available()),
        scratch_(CpuAllocator::instance().allocate(
            here_
                ? gemm_packed_scratch_floats(std::max(kQueryBlock, kKeyBlock)) *
                      sizeof(float)
                : 0)) {}

  // n is at most the larger block, or E or Ev (gemm_packed_here's scratch
  // grows with n: sized at the first product that needs more).
  void operator()(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
                  Operand b, float* c, bool accum) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (!accum) std::fill_n(c, m * n, 0.0f);
      return;
    }
    if (!here_) {  // no AVX2, FMA and F16C: oneDNN, on this thread
      gemm<float>(ta, tb, m, n, k, a, b, c, nullptr, accum, 1);
      return;
    }
    const int64_t need = gemm_packed_scratch_floats(n) * sizeof(float);
    if (static_cast<int64_t>(scratch_->bytes()) < need) {
      scratch_ = CpuAllocator::instance().allocate(need);
    }
    gemm_packed_here(ta, tb, m, n, k, a, b, c, accum,
                     static_cast<float*>(scratch_->ptr()));
  }

 private:
  bool here_;
  std::unique_ptr<Memory> scratch_;
};

// The keys query `row` (of len_q) sees among len_k: all, or with the causal
// mask (aligned bottom-right) those up to row + len_k - len_q.
int64_t keys_seen(int64_t row, int64_t len_q, int64_t len_k, bool causal) {
  return causal ? std::min(len_k, row + len_k - len_q + 1) : len_k;
}

// seen[r] = the keys of the block [j0, j0 + bc) that query i0 + r sees.
void seen_in_block(int64_t* seen, int64_t i0, int64_t br, int64_t j0,
                   int64_t bc, int64_t len_q, int64_t len_k, bool causal) {
  for (int64_t r = 0; r < br; ++r) {
    seen[r] = std::clamp(keys_seen(i0 + r, len_q, len_k, causal) - j0,
                         int64_t{0}, bc);
  }
}

template <class T>
class ScaledDotProductAttentionCpu : public ScaledDotProductAttention {
 public:
  using ScaledDotProductAttention::ScaledDotProductAttention;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Operand q{input<T>(in[0]), dtype_of<T>};
    const Operand k{input<T>(in[1]), dtype_of<T>};
    const Operand v{input<T>(in[2]), dtype_of<T>};
    T* y = output<T>(out[0]);
    const int64_t L = len_q_, S = len_k_, E = dim_, Ev = dim_v_;
    const int64_t blocks = ceil_div(L, kQueryBlock);
    const int64_t tasks = batch_ * blocks;
    const bool causal = opts_.causal;
#pragma omp parallel if (tasks > 1 && batch_ * L * S >= kParallelMinCompute)
    {
      BlockProducts block_product;
      std::vector<float> scores(kQueryBlock * kKeyBlock);
      std::vector<float> acc(kQueryBlock * Ev), mx(kQueryBlock),
          sum(kQueryBlock);
      std::vector<int64_t> seen(kQueryBlock);
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = t / blocks, i0 = (t % blocks) * kQueryBlock;
        const int64_t br = std::min(kQueryBlock, L - i0);
        const int64_t key_end = keys_seen(i0 + br - 1, L, S, causal);
        const Operand qi = rows_from(q, (b * L + i0) * E);
        std::fill_n(mx.begin(), br, -std::numeric_limits<float>::infinity());
        std::fill_n(sum.begin(), br, 0.0f);
        if (key_end == 0) std::fill_n(acc.begin(), br * Ev, 0.0f);
        for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
          const int64_t bc = std::min(kKeyBlock, key_end - j0);
          float* s = scores.data();
          block_product(false, true, br, bc, E, qi,
                        rows_from(k, (b * S + j0) * E), s, false);
          seen_in_block(seen.data(), i0, br, j0, bc, L, S, causal);
          scale_scores(s, br, bc, seen.data(), scale_);
          for (int64_t r = 0; r < br; ++r) {
            float* row = s + r * bc;
            if (seen[r] == 0) continue;  // all masked: nothing changes
            const float m = std::max(mx[r], max_of(row, 1, seen[r]));
            // The running sum and output were taken against the old max.
            const float rescale = std::exp(mx[r] - m);
            sum[r] = sum[r] * rescale +
                     exp_sum_of_difference(row, 1, m, row, seen[r]);
            mx[r] = m;
            if (j0 > 0 && rescale != 1.0f) {
              float* o = acc.data() + r * Ev;
              for (int64_t e = 0; e < Ev; ++e) o[e] *= rescale;
            }
          }
          block_product(false, false, br, Ev, bc, Operand{s, Dtype::f32},
                        rows_from(v, (b * S + j0) * Ev), acc.data(), j0 > 0);
        }
        for (int64_t r = 0; r < br; ++r) {
          // No key at all (S = 0): the output is 0, as the composed form's.
          const float inv = sum[r] > 0.0f ? 1.0f / sum[r] : 0.0f;
          float* o = acc.data() + r * Ev;
          for (int64_t e = 0; e < Ev; ++e) o[e] *= inv;
          log_sum_exp_[b * L + i0 + r] = mx[r] + std::log(sum[r]);
        }
        store(acc.data(), y + (b * L + i0) * Ev, br * Ev);
      }
    }
  }

  // With P the weights and O = P V: dV = P^T dO, dP = dO V^T, dS = P (dP -
  // rowsum(dO O)) (the softmax's backward), dQ = scale dS K, dK = scale
  // dS^T Q. Each matrix of the batch on one thread, its dQ, dK and dV summed
  // there in fp32 over the blocks and stored once.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const bool want_q = propagate_down[0], want_k = propagate_down[1],
               want_v = propagate_down[2];
    if (!want_q && !want_k && !want_v) return;
    const Operand q{input<T>(in[0]), dtype_of<T>};
    const Operand k{input<T>(in[1]), dtype_of<T>};
    const Operand v{input<T>(in[2]), dtype_of<T>};
    const T* y = input<T>(out[0]);
    const T* dy_data = output_grad<T>(out[0]);
    const Operand dy{dy_data, dtype_of<T>};
    T* dq = want_q ? input_grad<T>(in[0], accum[0]) : nullptr;
    T* dk = want_k ? input_grad<T>(in[1], accum[1]) : nullptr;
    T* dv = want_v ? input_grad<T>(in[2], accum[2]) : nullptr;
    const int64_t L = len_q_, S = len_k_, E = dim_, Ev = dim_v_;
    const bool causal = opts_.causal;
#pragma omp parallel if (batch_ > 1 && batch_ * L * S >= kParallelMinCompute)
    {
      BlockProducts block_product;
      std::vector<float> p(kQueryBlock * kKeyBlock),
          ds(kQueryBlock * kKeyBlock);
      std::vector<float> dq_sum(want_q ? L * E : 0), dk_sum(want_k ? S * E : 0),
          dv_sum(want_v ? S * Ev : 0), dot(L), yb(Ev), dyb(Ev);
      std::vector<int64_t> seen(kQueryBlock);
#pragma omp for schedule(dynamic)
      for (int64_t b = 0; b < batch_; ++b) {
        std::fill(dq_sum.begin(), dq_sum.end(), 0.0f);
        std::fill(dk_sum.begin(), dk_sum.end(), 0.0f);
        std::fill(dv_sum.begin(), dv_sum.end(), 0.0f);
        // Each query's rowsum(dO O), the softmax backward's sum(dy y).
        for (int64_t i = 0; i < L && (want_q || want_k); ++i) {
          const float* yr = load(y + (b * L + i) * Ev, yb.data(), Ev);
          const float* dyr = load(dy_data + (b * L + i) * Ev, dyb.data(), Ev);
          dot[i] = lanes_sum(Ev, [&](int64_t e) { return yr[e] * dyr[e]; });
        }
        for (int64_t i0 = 0; i0 < L; i0 += kQueryBlock) {
          const int64_t br = std::min(kQueryBlock, L - i0);
          const int64_t key_end = keys_seen(i0 + br - 1, L, S, causal);
          const Operand qi = rows_from(q, (b * L + i0) * E);
          const Operand dyi = rows_from(dy, (b * L + i0) * Ev);
          const float* lse = log_sum_exp_.data() + b * L + i0;
          for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
            const int64_t bc = std::min(kKeyBlock, key_end - j0);
            const Operand kj = rows_from(k, (b * S + j0) * E);
            const Operand vj = rows_from(v, (b * S + j0) * Ev);
            // The weights, as the forward had them.
            block_product(false, true, br, bc, E, qi, kj, p.data(), false);
            seen_in_block(seen.data(), i0, br, j0, bc, L, S, causal);
            weights_of_scores(p.data(), br, bc, seen.data(), scale_, lse);
            const Operand pb{p.data(), Dtype::f32};
            if (want_v) {
              block_product(true, false, bc, Ev, br, pb, dyi,
                            dv_sum.data() + j0 * Ev, true);
            }
            if (!want_q && !want_k) continue;
            block_product(false, true, br, bc, Ev, dyi, vj, ds.data(), false);
            score_grads(ds.data(), p.data(), br, bc, dot.data() + i0, scale_);
            const Operand dsb{ds.data(), Dtype::f32};
            if (want_q) {
              block_product(false, false, br, E, bc, dsb, kj,
                            dq_sum.data() + i0 * E, true);
            }
            if (want_k) {
              block_product(true, false, bc, E, br, dsb, qi,
                            dk_sum.data() + j0 * E, true);
            }
          }
        }
        if (want_q) store(dq_sum.data(), dq + b * L * E, L * E, accum[0]);
        if (want_k) store(dk_sum.data(), dk + b * S * E, S * E, accum[1]);
        if (want_v) store(dv_sum.data(), dv + b * S * Ev, S * Ev, accum[2]);
      }
    }
  }
};

}  // namespace

void register_attention(FunctionRegistry& r) {
  register_float_types<ScaledDotProductAttentionCpu>(
      r, decl::ScaledDotProductAttention, "cpu");
}

}  // namespace mg::cpu
