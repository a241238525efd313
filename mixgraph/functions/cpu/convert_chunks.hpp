// Half and bfloat16 read and written a chunk at a time inside a kernel's
// vector loop, for the CPU kernels that compute in fp32: the chunk's fp32
// copy stays in L1 between the conversion and the math, and the loads of
// the next chunk overlap the math of this one. A separate conversion pass
// over a whole block (cpu_utils.hpp's load/store through mg::convert) runs
// memory bound, then the math runs compute bound, never both at once:
// GELU's backward in half took 1.4x float's time that way.
//
// The roundings are convert_avx512.hpp's and convert_avx2.hpp's (those of
// mg::convert), so a kernel gives the same bits either way.
// Include only from .cpp files (and the kernel headers only they include):
// the functions need AVX-512F, or AVX2 and F16C, and callers must check
// chunk_isa() first.
#pragma once

#include <cstdint>

#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>

namespace mg::cpu {

/// Elements per chunk: four AVX-512 vectors, eight AVX2 ones.
constexpr int kChunk = 64;

/// The widest ISA with chunk conversions now (AVX2 needs F16C for half;
/// every AVX2 CPU has it): baseline means none, convert the block apart.
inline VectorIsa chunk_isa() {
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx512f) return VectorIsa::avx512;
  if (cpu.avx2 && cpu.f16c) return VectorIsa::avx2;
  return VectorIsa::baseline;
}

// convert: dst[0, kChunk) = src, one of the two fp32 and the other half,
// bfloat16 or fp32 (rounded to nearest even); add: dst = dst + src in fp32,
// rounded to dst's type.
#define MG_CHUNK_CONVERSIONS(NAME, TARGET, WIDTH, LOAD, STORE, ADD)          \
  struct NAME {                                                              \
    template <class S, class D>                                              \
    TARGET static inline void convert(const S* src, D* dst) {                \
      for (int c = 0; c < kChunk; c += WIDTH) STORE(dst + c, LOAD(src + c)); \
    }                                                                        \
    template <class T>                                                       \
    TARGET static inline void add(const float* src, T* dst) {                \
      for (int c = 0; c < kChunk; c += WIDTH) {                              \
        STORE(dst + c, ADD(LOAD(dst + c), LOAD(src + c)));                   \
      }                                                                      \
    }                                                                        \
  };
// clang-format off
MG_CHUNK_CONVERSIONS(ChunksAvx512, MG_TARGET_AVX512, 16, avx512::load16,
                     avx512::store16, _mm512_add_ps)
MG_CHUNK_CONVERSIONS(ChunksAvx2, MG_TARGET_AVX2_F16C, 8, avx2::load8,
                     avx2::store8, _mm256_add_ps)
// clang-format on
#undef MG_CHUNK_CONVERSIONS

}  // namespace mg::cpu
