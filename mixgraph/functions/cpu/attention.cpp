// ScaledDotProductAttention on the CPU, blocked as FlashAttention is: per
// block of queries, the scores against one block of keys at a time, the
// softmax kept online in fp32 (each query's running max and sum; the output
// rescaled when the max moves), blocks the causal mask hides entirely
// skipped. The backward recomputes each block's weights from the forward's
// log-sum-exp instead of reading an (L, S) matrix, which the composed form
// (BatchMatmul, Add2, Softmax, BatchMatmul) writes and reads back several
// times in each pass. The block products accumulate in fp32: in bfloat16
// on AMX, where the blocks are whole tiles, on its tiles (cpu/amx.hpp),
// the weights and score grads each split into two bf16 parts (a high one
// and the rest) so that they keep 16 of their bits; elsewhere our packed
// product (gemm_packed.hpp), which reads half and bfloat16 q, k, v and dy
// as they are, converting while it packs.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/attention.hpp>
#include <mixgraph/functions/cpu/amx.hpp>
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

// One block of queries' softmax kept online over its blocks of keys: each
// query's running max and sum, and its output (rows of Ev) rescaled when
// the max moves.
class OnlineSoftmax {
 public:
  OnlineSoftmax(int64_t rows, int64_t ev)
      : ev_(ev), mx_(rows), sum_(rows), out_(rows * ev) {}

  // The output's rows, which the products add P V to.
  float* out() { return out_.data(); }
  void start(int64_t br) {
    std::fill_n(mx_.begin(), br, -std::numeric_limits<float>::infinity());
    std::fill_n(sum_.begin(), br, 0.0f);
    std::fill_n(out_.begin(), br * ev_, 0.0f);
  }
  // s (br x bc, scaled scores; row r's first seen[r] seen) becomes P,
  // exp(s - the running max), and the output rows so far are rescaled to
  // the new max.
  void add_scores(float* s, int64_t br, int64_t bc, const int64_t* seen) {
    for (int64_t r = 0; r < br; ++r) {
      float* row = s + r * bc;
      if (seen[r] == 0) continue;  // all masked: nothing changes
      const float old = mx_[r];
      const float m = std::max(old, max_of(row, 1, seen[r]));
      // The running sum and output were taken against the old max (none
      // yet where it is -inf: they are 0).
      const float rescale = std::exp(old - m);
      sum_[r] =
          sum_[r] * rescale + exp_sum_of_difference(row, 1, m, row, seen[r]);
      mx_[r] = m;
      if (old != -std::numeric_limits<float>::infinity() && rescale != 1.0f) {
        float* o = out_.data() + r * ev_;
        for (int64_t e = 0; e < ev_; ++e) o[e] *= rescale;
      }
    }
  }
  // The output divided by the sums, each row's log-sum-exp in lse.
  void finish(int64_t br, float* lse) {
    for (int64_t r = 0; r < br; ++r) {
      // No key at all (S = 0): the output is 0, as the composed form's.
      const float inv = sum_[r] > 0.0f ? 1.0f / sum_[r] : 0.0f;
      float* o = out_.data() + r * ev_;
      for (int64_t e = 0; e < ev_; ++e) o[e] *= inv;
      lse[r] = mx_[r] + std::log(sum_[r]);
    }
  }

 private:
  int64_t ev_;
  std::vector<float> mx_, sum_, out_;
};

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
    if constexpr (std::is_same_v<T, BFloat16>) {
      if (on_amx()) return forward_amx(q, k, v, y);
    }
    const int64_t L = len_q_, S = len_k_, E = dim_, Ev = dim_v_;
    const int64_t blocks = ceil_div(L, kQueryBlock);
    const int64_t tasks = batch_ * blocks;
    const bool causal = opts_.causal;
#pragma omp parallel if (tasks > 1 && batch_ * L * S >= kParallelMinCompute)
    {
      BlockProducts block_product;
      std::vector<float> scores(kQueryBlock * kKeyBlock);
      OnlineSoftmax softmax(kQueryBlock, Ev);
      std::vector<int64_t> seen(kQueryBlock);
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = t / blocks, i0 = (t % blocks) * kQueryBlock;
        const int64_t br = std::min(kQueryBlock, L - i0);
        const int64_t key_end = keys_seen(i0 + br - 1, L, S, causal);
        const Operand qi = rows_from(q, (b * L + i0) * E);
        softmax.start(br);
        for (int64_t j0 = 0; j0 < key_end; j0 += kKeyBlock) {
          const int64_t bc = std::min(kKeyBlock, key_end - j0);
          float* s = scores.data();
          block_product(false, true, br, bc, E, qi,
                        rows_from(k, (b * S + j0) * E), s, false);
          seen_in_block(seen.data(), i0, br, j0, bc, L, S, causal);
          scale_scores(s, br, bc, seen.data(), scale_);
          softmax.add_scores(s, br, bc, seen.data());
          block_product(false, false, br, Ev, bc, Operand{s, Dtype::f32},
                        rows_from(v, (b * S + j0) * Ev), softmax.out(), true);
        }
        softmax.finish(br, log_sum_exp_.data() + b * L + i0);
        store(softmax.out(), y + (b * L + i0) * Ev, br * Ev);
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
    if constexpr (std::is_same_v<T, BFloat16>) {
      if (on_amx()) return backward_amx(q, k, v, y, dy_data, dq, dk, dv, accum);
    }
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
        if (want_q || want_k) output_dots(b, y, dy_data, dot, yb, dyb);
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

 private:
  // Each query's rowsum(dO O) of matrix b, the softmax backward's sum(dy
  // y), in dot.
  void output_dots(int64_t b, const T* y, const T* dy, std::vector<float>& dot,
                   std::vector<float>& yb, std::vector<float>& dyb) const {
    const int64_t L = len_q_, Ev = dim_v_;
    for (int64_t i = 0; i < L; ++i) {
      const float* yr = load(y + (b * L + i) * Ev, yb.data(), Ev);
      const float* dyr = load(dy + (b * L + i) * Ev, dyb.data(), Ev);
      dot[i] = lanes_sum(Ev, [&](int64_t e) { return yr[e] * dyr[e]; });
    }
  }

  // bfloat16's blocks on AMX: every block whole (L and S multiples of the
  // blocks, so that causal masks end at block edges too; E and Ev of 32,
  // a tile's depth), and the CPU and Linux letting us.
  bool on_amx() const {
    return len_q_ % kQueryBlock == 0 && len_k_ % kKeyBlock == 0 &&
           dim_ % 32 == 0 && dim_v_ % 32 == 0 && amx_available();
  }

  // The forward on AMX: S = Q K^T with K^T as pairs along E (K's rows
  // read as words and turned, once a task), O += P V with V's rows paired,
  // P in two bf16 parts. (A task a matrix, its keys turned once for both
  // of the GPT's query blocks, measured the same in bench_attention.)
  void forward_amx(Operand q_in, Operand k_in, Operand v_in, BFloat16* y) {
    const auto* q = static_cast<const BFloat16*>(q_in.data);
    const auto* k = static_cast<const BFloat16*>(k_in.data);
    const auto* v = static_cast<const BFloat16*>(v_in.data);
    const int64_t L = len_q_, S = len_k_, E = dim_, Ev = dim_v_;
    constexpr int64_t kB = kQueryBlock;
    static_assert(kQueryBlock == kKeyBlock);
    const int64_t blocks = L / kB, tasks = batch_ * blocks;
    const bool causal = opts_.causal;
#pragma omp parallel if (tasks > 1 && batch_ * L * S >= kParallelMinCompute)
    {
      AmxTiles tiles;
      std::vector<uint32_t> kt(E / 2 * S), vp(S / 2 * Ev);
      std::vector<float> scores(kB * kB);
      std::vector<BFloat16> hi(kB * kB), lo(kB * kB);
      OnlineSoftmax softmax(kB, Ev);
      std::vector<int64_t> seen(kB);
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t b = t / blocks, i0 = (t % blocks) * kB;
        const int64_t keys = keys_seen(i0 + kB - 1, L, S, causal);
        const BFloat16* kb = k + b * S * E;
        transpose_words(reinterpret_cast<const uint32_t*>(kb), keys, E / 2,
                        E / 2, kt.data(), keys);
        pair_rows(v + b * S * Ev, Ev, keys, Ev, vp.data(), Ev);
        softmax.start(kB);
        for (int64_t j0 = 0; j0 < keys; j0 += kB) {
          float* s = scores.data();
          amx_product(kB, kB, E,
                      {{q + (b * L + i0) * E, E, kt.data() + j0, keys}}, s, kB,
                      false);
          seen_in_block(seen.data(), i0, kB, j0, kB, L, S, causal);
          scale_scores(s, kB, kB, seen.data(), scale_);
          softmax.add_scores(s, kB, kB, seen.data());
          split_bf16(s, kB * kB, hi.data(), lo.data());
          const uint32_t* vj = vp.data() + j0 / 2 * Ev;
          amx_product(kB, Ev, kB,
                      {{hi.data(), kB, vj, Ev}, {lo.data(), kB, vj, Ev}},
                      softmax.out(), Ev, true);
        }
        softmax.finish(kB, log_sum_exp_.data() + b * L + i0);
        store(softmax.out(), y + (b * L + i0) * Ev, kB * Ev);
      }
    }
  }

  // The backward on AMX, as the one above with the products' roles: P and
  // dP = dO V^T against K^T and V^T paired along E (once a matrix); dQ +=
  // dS K against K's rows paired; dV and dK summed transposed, dV^T += dO^T
  // P and dK^T += Q^T dS (the query block's dO and Q turned, P's and dS's
  // rows paired), and turned back once a matrix. P and dS in two bf16
  // parts.
  void backward_amx(Operand q_in, Operand k_in, Operand v_in, const BFloat16* y,
                    const BFloat16* dy, BFloat16* dq, BFloat16* dk,
                    BFloat16* dv, const std::vector<bool>& accum) {
    const auto* q = static_cast<const BFloat16*>(q_in.data);
    const auto* k = static_cast<const BFloat16*>(k_in.data);
    const auto* v = static_cast<const BFloat16*>(v_in.data);
    const int64_t L = len_q_, S = len_k_, E = dim_, Ev = dim_v_;
    constexpr int64_t kB = kQueryBlock;
    const bool want_q = dq, want_k = dk, want_v = dv;
    const bool causal = opts_.causal;
#pragma omp parallel if (batch_ > 1 && batch_ * L * S >= kParallelMinCompute)
    {
      AmxTiles tiles;
      std::vector<uint32_t> kt(E / 2 * S), vt(Ev / 2 * S), kp(S / 2 * E);
      std::vector<uint32_t> pairs(kB / 2 * std::max(E, Ev));
      std::vector<uint32_t> qt(E * kB / 2), dyt(Ev * kB / 2);
      std::vector<uint32_t> part_pairs[2] = {
          std::vector<uint32_t>(kB / 2 * kB),
          std::vector<uint32_t>(kB / 2 * kB)};
      std::vector<float> p(kB * kB), ds(kB * kB);
      std::vector<BFloat16> parts[2] = {std::vector<BFloat16>(kB * kB),
                                        std::vector<BFloat16>(kB * kB)};
      std::vector<float> dq_sum(want_q ? L * E : 0), dk_t(want_k ? E * S : 0),
          dv_t(want_v ? Ev * S : 0), turned(std::max(E, Ev) * S), dot(L),
          yb(Ev), dyb(Ev);
      std::vector<int64_t> seen(kB);
      // x's rows [0, kB) (n wide) turned: n rows of kB bf16, as words.
      auto turn = [&](const BFloat16* x, int64_t n, std::vector<uint32_t>& to) {
        pair_rows(x, n, kB, n, pairs.data(), n);
        transpose_words(pairs.data(), kB / 2, n, n, to.data(), kB / 2);
      };
      auto as_bf16 = [](const std::vector<uint32_t>& w) {
        return reinterpret_cast<const BFloat16*>(w.data());
      };
      // The weights or score grads (kB x kB) in two bf16 parts, and where
      // `paired` their rows paired too.
      auto split = [&](const float* x, bool paired) {
        split_bf16(x, kB * kB, parts[0].data(), parts[1].data());
        for (int h = 0; h < 2 && paired; ++h) {
          pair_rows(parts[h].data(), kB, kB, kB, part_pairs[h].data(), kB);
        }
      };
#pragma omp for schedule(dynamic)
      for (int64_t b = 0; b < batch_; ++b) {
        std::fill(dq_sum.begin(), dq_sum.end(), 0.0f);
        std::fill(dk_t.begin(), dk_t.end(), 0.0f);
        std::fill(dv_t.begin(), dv_t.end(), 0.0f);
        if (want_q || want_k) output_dots(b, y, dy, dot, yb, dyb);
        const BFloat16* kb = k + b * S * E;
        const BFloat16* vb = v + b * S * Ev;
        // K^T for P; V^T for dP, K's rows for dQ: only where asked for.
        transpose_words(reinterpret_cast<const uint32_t*>(kb), S, E / 2, E / 2,
                        kt.data(), S);
        if (want_q || want_k) {
          transpose_words(reinterpret_cast<const uint32_t*>(vb), S, Ev / 2,
                          Ev / 2, vt.data(), S);
        }
        if (want_q) pair_rows(kb, E, S, E, kp.data(), E);
        for (int64_t i0 = 0; i0 < L; i0 += kB) {
          const int64_t keys = keys_seen(i0 + kB - 1, L, S, causal);
          const float* lse = log_sum_exp_.data() + b * L + i0;
          const BFloat16* qi = q + (b * L + i0) * E;
          const BFloat16* dyi = dy + (b * L + i0) * Ev;
          if (want_k) turn(qi, E, qt);
          if (want_v) turn(dyi, Ev, dyt);
          for (int64_t j0 = 0; j0 < keys; j0 += kB) {
            // The weights, as the forward had them.
            amx_product(kB, kB, E, {{qi, E, kt.data() + j0, S}}, p.data(), kB,
                        false);
            seen_in_block(seen.data(), i0, kB, j0, kB, L, S, causal);
            weights_of_scores(p.data(), kB, kB, seen.data(), scale_, lse);
            if (want_v) {
              split(p.data(), true);
              amx_product(Ev, kB, kB,
                          {{as_bf16(dyt), kB, part_pairs[0].data(), kB},
                           {as_bf16(dyt), kB, part_pairs[1].data(), kB}},
                          dv_t.data() + j0, S, true);
            }
            if (!want_q && !want_k) continue;
            amx_product(kB, kB, Ev, {{dyi, Ev, vt.data() + j0, S}}, ds.data(),
                        kB, false);
            score_grads(ds.data(), p.data(), kB, kB, dot.data() + i0, scale_);
            split(ds.data(), want_k);
            if (want_q) {
              const uint32_t* kj = kp.data() + j0 / 2 * E;
              amx_product(
                  kB, E, kB,
                  {{parts[0].data(), kB, kj, E}, {parts[1].data(), kB, kj, E}},
                  dq_sum.data() + i0 * E, E, true);
            }
            if (want_k) {
              amx_product(E, kB, kB,
                          {{as_bf16(qt), kB, part_pairs[0].data(), kB},
                           {as_bf16(qt), kB, part_pairs[1].data(), kB}},
                          dk_t.data() + j0, S, true);
            }
          }
        }
        if (want_q) store(dq_sum.data(), dq + b * L * E, L * E, accum[0]);
        // dK and dV were summed turned (E x S, Ev x S).
        auto turned_back = [&](const std::vector<float>& t, int64_t n) {
          transpose_words(reinterpret_cast<const uint32_t*>(t.data()), n, S, S,
                          reinterpret_cast<uint32_t*>(turned.data()), n);
          return turned.data();
        };
        if (want_k) {
          store(turned_back(dk_t, E), dk + b * S * E, S * E, accum[1]);
        }
        if (want_v) {
          store(turned_back(dv_t, Ev), dv + b * S * Ev, S * Ev, accum[2]);
        }
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
