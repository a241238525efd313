// Our own fp32-accumulating matrix product for AVX2 CPUs, which converts
// fp16 and bf16 operands while it packs them and rounds C to its type as it
// writes it: where oneDNN 2.6 runs its AVX2 sgemm, half and bfloat16 (no
// fp16 or bf16 arithmetic there) otherwise pay a pass over each operand
// into fp32 and one over C back, memory-bound passes that float does not
// spend (gemm.cpp says when this one runs).
#pragma once

#include <cstdint>

#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// Whether gemm_avx2() can run on this CPU (AVX2, FMA and F16C, within the
/// ISA cap).
bool gemm_avx2_available();

/// gemm()'s contract (gemm.hpp): C (m x n) = op(A) op(B) [+ bias] [+ C if
/// accum], row-major, `batch` products of matrices stored one after the
/// other; A and B fp32, fp16 or bf16, C of T, accumulated in fp32 (C is
/// rounded to T once, from the fp32 sum, accum's C included). Needs
/// gemm_avx2_available() and k > 0.
template <class T>
void gemm_avx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
               Operand b, T* c, const float* bias, bool accum, int64_t batch);

}  // namespace mg::cpu
