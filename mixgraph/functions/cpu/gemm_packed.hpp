// Our own fp32-accumulating matrix product, which converts fp16 and bf16
// operands while it packs them and rounds C to its type as it writes it.
// oneDNN 2.6 has no fp16 kernels (nor bf16 ones without AVX512-BF16), so
// there half and bfloat16 otherwise pay a pass over each operand into fp32
// and one over C back: memory-bound passes that float does not spend
// (gemm.cpp says when this one runs). One blocked driver, two register
// tiles: 12 x 32 in zmm registers on AVX-512 CPUs, 6 x 16 in ymm on AVX2.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// Below this many flops (2 m n k) a product of ours runs on one thread:
/// waking the team costs more. Our tiles' products and a recurrent layer's
/// steps (whether they share out by hidden units) go by it.
constexpr double kProductTeamFlops = 4e6;

/// Throws std::invalid_argument, naming `who`, unless columns [j0, j0 +
/// count) of a packed B of n columns are whole panels of `width`: j0 a
/// multiple of it, j0 + count one too or n. A band ending inside a panel
/// would finish that panel's columns the way C's right edge is finished
/// (sums added after the tile, not in its chain): other bits than the whole
/// product's.
void check_column_band(const char* who, int64_t j0, int64_t count, int64_t n,
                       int64_t width);

/// f(std::integral_constant<int, rows>) for rows in [1, R]: a tile's row
/// count as a constant, so that a tile at the bottom edge of C computes its
/// rows alone (the LSTM's steps have 32 rows: their last 6-row tile, which
/// computed 6 rows where 2 were there, now takes 0.63 of a full tile's
/// time, perf, AVX2, 2026-12-05).
template <int R, class F>
void with_tile_rows(int64_t rows, F&& f) {
  if constexpr (R > 1) {
    if (rows < R) return with_tile_rows<R - 1>(rows, f);
  }
  f(std::integral_constant<int, R>{});
}

/// Whether gemm_packed() can run on this CPU (AVX2, FMA and F16C at
/// least, within the ISA cap).
bool gemm_packed_available();

/// Whether gemm_packed() runs its AVX-512 tile here (AVX-512F within the
/// ISA cap of cpu_features()), else its AVX2 one.
bool gemm_packed_avx512();

/// gemm()'s contract (gemm.hpp): C (m x n) = op(A) op(B) [+ bias] [+ C if
/// accum], row-major, `batch` products of matrices stored one after the
/// other; A and B fp32, fp16 or bf16, C of T, accumulated in fp32 (C is
/// rounded to T once, from the fp32 sum, accum's C included), and
/// c_finite as gemm() says. Needs gemm_packed_available().
template <class T>
void gemm_packed(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
                 Operand b, T* c, const float* bias, bool accum, int64_t batch,
                 bool* c_finite = nullptr);

/// The depth of gemm_packed()'s blocks of k (KC): chosen per product
/// (`automatic`: 512 on AMD's AVX-512 cores where the packs stay small
/// beside the product, else 256), or one of the two for every product.
enum class PackedDepth { automatic, short_k, long_k };

/// Sets gemm_packed()'s KC for its lifetime (tests: each shape through
/// both depths). Not thread-safe: for a test's main thread.
class ScopedPackedDepth {
 public:
  explicit ScopedPackedDepth(PackedDepth depth);
  ~ScopedPackedDepth();
  ScopedPackedDepth(const ScopedPackedDepth&) = delete;
  ScopedPackedDepth& operator=(const ScopedPackedDepth&) = delete;

 private:
  PackedDepth previous_;
};

/// op(B) (k x n) packed once for many fp32 products C (m x n) = A op(B)
/// [+ bias] [+ C] with it (a recurrent layer's Wh, once per step): no
/// product packs it again. Needs gemm_packed_available(); the tile is the
/// one this CPU ran when B was packed.
class PackedB {
 public:
  /// b: stored k x n, or n x k where tb; fp32, fp16 or bf16 (converted as
  /// it is packed). Copied: b may change after. n and k must be positive
  /// (std::invalid_argument): an empty product has nothing to pack.
  PackedB(bool tb, int64_t n, int64_t k, Operand b);
  /// An op(B) of k x n for the caller to write in place, through
  /// panel_row(), where it computes B itself (Winograd's transformed
  /// kernels, conv_winograd.cpp): no copy of B to pack. The columns past n
  /// in the last panel are zero; the rest is unset until written.
  PackedB(int64_t n, int64_t k);
  ~PackedB();
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;

  /// C (m x n, row-major) = A (m x k, row-major) op(B) [+ bias (n)] [+ C
  /// where accum], in fp32.
  void multiply(int64_t m, const float* a, float* c, const float* bias,
                bool accum) const;

  /// op(B)'s sizes: k x n.
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  /// The columns of one panel of the packed B: where a share of C's
  /// columns may start and end.
  int64_t panel_width() const;
  /// Columns [j0, j0 + count) of multiply()'s C (bias the whole n's), on
  /// the calling thread: no team woken, nothing allocated, the same bits
  /// as multiply(). For threads that share C's columns out themselves (a
  /// recurrent layer's steps, each thread with its own hidden units). The
  /// band must be whole panels: j0 a multiple of panel_width(), j0 + count
  /// one too or n (std::invalid_argument).
  void multiply_columns(int64_t m, const float* a, float* c, const float* bias,
                        bool accum, int64_t j0, int64_t count) const;
  /// Where op(B)'s row q holds columns [j0, j0 + panel_width()) in the
  /// pack, one after the other (j0 a multiple of panel_width(), q < k):
  /// those of the last panel past n must stay zero.
  float* panel_row(int64_t q, int64_t j0);

 private:
  bool avx512_;
  int64_t n_, k_;
  std::unique_ptr<Memory> data_;
};

/// The floats of scratch gemm_packed_here() needs for products with n
/// columns of C, on this CPU.
int64_t gemm_packed_scratch_floats(int64_t n);

/// One fp32 product C (m x n, row-major) = op(A) op(B) [+ C if accum] on
/// the calling thread, packing into `scratch` (gemm_packed_scratch_floats(n)
/// floats): no team woken, nothing allocated. For a kernel whose threads
/// share out many small products (attention's blocks, 64 x 64 x 64: a team
/// and two pack buffers per call cost as much as the product). Needs
/// gemm_packed_available().
void gemm_packed_here(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      Operand a, Operand b, float* c, bool accum,
                      float* scratch);

}  // namespace mg::cpu
