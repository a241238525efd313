// The CPU backend of the recurrent driver (functions/ops/recurrent_driver.hpp):
// gemm()'s products (cpu/gemm.hpp), a step's on a weight packed once
// (GemmFixedB), the cells in per-ISA vectorized loops (cpu/recurrent.cpp),
// scratch on the caching allocator. Where Wh is in our tile's panels, a
// layer's steps run on one team, each thread a band of hidden units doing
// its columns of the product and its cells, one wait a step; else each
// step's product and cells run on the team one after the other.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/ops/recurrent_cells.hpp>

namespace mg::cpu {

/// The cells over one step's B rows, threaded over the rows.
void forward_cells(const recurrent::RnnCell& cell,
                   const recurrent::StepForward& s, int64_t B, int64_t H);
void forward_cells(const recurrent::LstmCell& cell,
                   const recurrent::StepForward& s, int64_t B, int64_t H);
void forward_cells(const recurrent::GruCell& cell,
                   const recurrent::StepForward& s, int64_t B, int64_t H);
void backward_cells(const recurrent::RnnCell& cell,
                    const recurrent::StepBack& s, int64_t B, int64_t H);
void backward_cells(const recurrent::LstmCell& cell,
                    const recurrent::StepBack& s, int64_t B, int64_t H);
void backward_cells(const recurrent::GruCell& cell,
                    const recurrent::StepBack& s, int64_t B, int64_t H);

/// A layer's steps on one team, each thread its own band of hidden units
/// (cpu/recurrent.cpp): forward, per step rh = h_prev Wh^T + bias by
/// `product` and the cells; backward, the cells and dh_prev += drh Wh.
/// False, nothing run, where `product` cannot be shared out so.
bool forward_steps_shared(const recurrent::RnnCell& cell,
                          const GemmFixedB& product,
                          const std::vector<recurrent::StepForward>& steps,
                          float* rh, const float* bias, int64_t B, int64_t H);
bool forward_steps_shared(const recurrent::LstmCell& cell,
                          const GemmFixedB& product,
                          const std::vector<recurrent::StepForward>& steps,
                          float* rh, const float* bias, int64_t B, int64_t H);
bool forward_steps_shared(const recurrent::GruCell& cell,
                          const GemmFixedB& product,
                          const std::vector<recurrent::StepForward>& steps,
                          float* rh, const float* bias, int64_t B, int64_t H);
bool backward_steps_shared(const recurrent::RnnCell& cell,
                           const GemmFixedB& product,
                           const std::vector<recurrent::StepBack>& steps,
                           int64_t B, int64_t H);
bool backward_steps_shared(const recurrent::LstmCell& cell,
                           const GemmFixedB& product,
                           const std::vector<recurrent::StepBack>& steps,
                           int64_t B, int64_t H);
bool backward_steps_shared(const recurrent::GruCell& cell,
                           const GemmFixedB& product,
                           const std::vector<recurrent::StepBack>& steps,
                           int64_t B, int64_t H);

/// For storage type T: the products' operands are bf16 copies where T is
/// BFloat16 and oneDNN has bf16 kernels (accumulating in fp32, as every
/// bf16 product of ours; PyTorch's autocast runs its LSTM's products in
/// bf16 too), else the fp32 arrays as they are.
template <class T>
struct RecurrentBackend {
  // Scratch on the caching allocator: a training step repeats the last
  // one's sizes (16 MB of gates per layer at hidden 512, seq 64, batch 32),
  // and fresh std::vector pages cost their faults and zeroing on every
  // call. Not zeroed: buffer() is written whole before it is read.
  using Buffer = std::vector<float, CpuScratchAllocator<float>>;
  using Operand = cpu::Operand;

  class Operands {
   public:
    Operand of(const float* p, int64_t n) {
      if (!in_bf16()) return Operand{p, Dtype::f32};
      copy_.resize(n);
      convert(p, Dtype::f32, copy_.data(), Dtype::bf16, static_cast<size_t>(n));
      return Operand{copy_.data(), Dtype::bf16};
    }
    static bool in_bf16() {
      return std::is_same_v<T, BFloat16> && compute_type<T>() == Dtype::bf16;
    }

   private:
    // On the caching allocator, not zeroed: written whole by convert. Held
    // as bits: BFloat16's default constructor zeroes, so a vector of it
    // would clear every element that resize() adds.
    std::vector<uint16_t, CpuScratchAllocator<uint16_t>> copy_;
  };

  Buffer buffer(int64_t n) { return Buffer(static_cast<size_t>(n)); }
  Buffer zeros(int64_t n) { return Buffer(static_cast<size_t>(n), 0.0f); }
  static Operand advanced(Operand o, int64_t n) {
    return Operand{static_cast<const char*>(o.data) + n * dtype_size(o.dtype),
                   o.dtype};
  }
  // Copies on the team where they are large (store(), for_each_share()):
  // the LSTM splits its 8 MB weights and gathers their grads back each step.
  void copy(const float* src, float* dst, int64_t n) { store(src, dst, n); }
  void add(const float* src, float* dst, int64_t n) {
    store(src, dst, n, /*accum=*/true);
  }
  void copy_rows(const float* src, int64_t src_stride, float* dst,
                 int64_t dst_stride, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    for_each_share(rows * cols, [&](int64_t begin, int64_t end) {
      // The rows whose first element falls in [begin, end).
      for (int64_t r = ceil_div(begin, cols); r * cols < end; ++r) {
        std::copy(src + r * src_stride, src + r * src_stride + cols,
                  dst + r * dst_stride);
      }
    });
  }
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
            Operand b, float* c, const float* bias, bool accum) {
    cpu::gemm<float>(ta, tb, m, n, k, a, b, c, bias, accum);
  }
  /// B packed once, in the layout its kernel reads (GemmFixedB).
  GemmFixedB step_product(bool tb, int64_t m, int64_t n, int64_t k, Operand b,
                          bool bias, bool accum) {
    return GemmFixedB(tb, m, n, k, b, bias, accum);
  }
  void column_sums(const float* a, int64_t rows, int64_t cols, float* sums) {
    cpu::column_sums(a, rows, cols, sums);
  }
  template <class Cell>
  void forward_cells(const Cell& cell, const recurrent::StepForward& s,
                     int64_t B, int64_t H) {
    cpu::forward_cells(cell, s, B, H);
  }
  template <class Cell>
  void backward_cells(const Cell& cell, const recurrent::StepBack& s, int64_t B,
                      int64_t H) {
    cpu::backward_cells(cell, s, B, H);
  }
  template <class Cell>
  bool forward_steps(const Cell& cell, const GemmFixedB& product,
                     const std::vector<recurrent::StepForward>& steps,
                     float* rh, const float* bias, int64_t B, int64_t H) {
    return cpu::forward_steps_shared(cell, product, steps, rh, bias, B, H);
  }
  template <class Cell>
  bool backward_steps(const Cell& cell, const GemmFixedB& product,
                      const std::vector<recurrent::StepBack>& steps, int64_t B,
                      int64_t H) {
    return cpu::backward_steps_shared(cell, product, steps, B, H);
  }
};

}  // namespace mg::cpu
