// Matrix products on the CPU through oneDNN, accumulating in fp32.
#pragma once

#include <cstdint>

namespace mg::cpu {

/// C (m x n) = op(A) (m x k) * op(B) (k x n) [+ bias (n)] [+ C if accum],
/// row-major, op = transpose where ta / tb. T is float, Half or BFloat16;
/// the bias, when given, is fp32. Primitives are cached per shape. Where
/// oneDNN cannot compute in T on this CPU (fp16 without AVX512-FP16) the
/// operands go through fp32 buffers.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, const float* bias = nullptr, bool accum = false);

}  // namespace mg::cpu
