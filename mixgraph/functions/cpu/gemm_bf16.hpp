// A bf16 product with B packed once, on AVX512-BF16's dot products
// (VDPBF16PS: pairs of bf16 along k multiplied and added into fp32 sums),
// for a recurrent layer's steps in bfloat16: C (m x n) = A (m x k, bf16)
// op(B) [+ bias] [+ C], accumulated in fp32. oneDNN's kernel runs that
// product too, but only on its own team: the steps could not share it out
// by hidden units as the fp32 ones do (cpu/recurrent.cpp), and paid a
// team's wake-up for the product and another for the cells every step.
#pragma once

#include <cstdint>
#include <memory>

#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// op(B) (k x n) rounded to bf16 and packed once, in panels of 32 columns,
/// each its ceil(k / 2) pairs of rows interleaved as VDPBF16PS reads them.
class PackedBf16B {
 public:
  /// Whether this CPU runs it: AVX512-BF16 within the ISA cap of
  /// cpu_features().
  static bool available();

  /// b: stored k x n, or n x k where tb; fp32 (rounded to nearest even,
  /// as every conversion of ours) or bf16. Copied. n and k must be
  /// positive, and available() true (std::invalid_argument,
  /// std::logic_error).
  PackedBf16B(bool tb, int64_t n, int64_t k, Operand b);
  ~PackedBf16B();
  PackedBf16B(const PackedBf16B&) = delete;
  PackedBf16B& operator=(const PackedBf16B&) = delete;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  /// The columns of a panel: where a band of C's columns starts and ends.
  static constexpr int64_t panel_width() { return 32; }

  /// C's columns [j0, j0 + count) (rows ldc apart) = A (m x k, rows lda
  /// apart) op(B) [+ bias (B's n)] [+ C where accum], on the calling
  /// thread: no team woken, nothing allocated. The band must be whole
  /// panels: j0 a multiple of panel_width(), j0 + count one too or n, and
  /// rows at least k (A) and n (C) apart (std::invalid_argument). Each
  /// element of C is one chain of fused pair products over k, in order,
  /// from 0 or C, then the bias added: the same bits whatever the band or
  /// the team.
  void multiply_columns(int64_t m, const BFloat16* a, int64_t lda, float* c,
                        int64_t ldc, const float* bias, bool accum, int64_t j0,
                        int64_t count) const;
  /// The whole of C (m x n, rows n apart; A's rows k apart), its panels
  /// shared out on the team.
  void multiply(int64_t m, const BFloat16* a, float* c, const float* bias,
                bool accum) const;

 private:
  int64_t n_, k_;
  std::unique_ptr<Memory> data_;
};

}  // namespace mg::cpu
