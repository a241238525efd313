// Loops compiled once per vector ISA (the baseline's SSE2, AVX2, AVX-512)
// and chosen at run time, so that one binary runs 16 wide where the CPU
// can and still runs where it cannot. Contraction into FMA is off in each,
// so every width gives the baseline's bits (and the CUDA kernels', which
// nvcc is told the same): a test compares the paths bit for bit.
//
//   #define MY_LOOP(NS, TARGET) namespace NS { TARGET void run(...) {...} }
//   MG_FOR_EACH_VECTOR_ISA(MY_LOOP)
//   ...
//   MG_CALL_VECTOR_ISA(run(x, y, n));
#pragma once

#include <cstdint>

#include <mixgraph/contexts/cpu/cpu_features.hpp>

#if defined(__GNUC__) && !defined(__clang__)
#define MG_NO_CONTRACT optimize("fp-contract=off")
#else
#define MG_NO_CONTRACT
#endif

/// DEFINE(namespace, attributes) once per vector ISA.
#define MG_FOR_EACH_VECTOR_ISA(DEFINE)                              \
  DEFINE(isa_baseline, __attribute__((MG_NO_CONTRACT)))             \
  DEFINE(isa_avx2, __attribute__((target("avx2"), MG_NO_CONTRACT))) \
  DEFINE(isa_avx512, __attribute__((target("avx512f"), MG_NO_CONTRACT)))

namespace mg::cpu {

enum class VectorIsa { baseline, avx2, avx512 };

/// The widest vector ISA the kernels may use now: read at each call (one
/// load), so that a ScopedCpuFeatures can force the narrower paths.
inline VectorIsa vector_isa() {
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx512f) return VectorIsa::avx512;
  if (cpu.avx2) return VectorIsa::avx2;
  return VectorIsa::baseline;
}

/// Asks the cache for the lines of bytes [from, from + bytes) past p: a
/// hint that reads nothing, and addresses past an array are never touched
/// (no fault; the offset is added to the address as an integer, so no
/// pointer past the array is formed). For a row loop, the next row's lines
/// while this row's math runs: a row of a few KB is a chain of sums and
/// then a pass, and the out-of-order window does not reach the next one.
/// The GPT's layer normalizations (1 KB rows of x and dy) took backward
/// 2.89-3.01 -> 2.00-2.04 ms a step and forward 1.32-1.41 -> 1.15-1.17
/// with it (Intel Xeon, 2 threads, 2026-12-07).
inline void ask_for_lines(const void* p, std::uintptr_t from,
                          std::uintptr_t bytes) {
  constexpr std::uintptr_t kLine = 64;
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) + from;
  for (std::uintptr_t b = 0; b < bytes; b += kLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(at + b));
  }
}

/// The elements a streaming loop takes between two stream_ahead() calls:
/// four cache lines of fp32.
constexpr int64_t kStreamRun = 64;

/// Asks for the lines of one run of a stream (kStreamRun elements from p)
/// 1 KB further on: for loops whose math is long (exp, tanh, a division
/// per element), where the out-of-order window, full of that math, does
/// not reach the next lines, and the prefetchers stop at each 4 KB block
/// (a page) and learn the stream again. GELU's backward in the GPT (x, dy
/// and dx of 4 MB each, out of cache) took 0.55x its time with it (Intel
/// Xeon, 2 threads, 2026-12-07); 256 B to 4 KB ahead ran alike.
template <class T>
inline void stream_ahead(const T* p) {
  ask_for_lines(p, 1024, kStreamRun * sizeof(T));
}

}  // namespace mg::cpu

/// `return NS::CALL` with NS the namespace of vector_isa()'s loop.
#define MG_CALL_VECTOR_ISA(...)         \
  switch (::mg::cpu::vector_isa()) {    \
    case ::mg::cpu::VectorIsa::avx512:  \
      return isa_avx512::__VA_ARGS__;   \
    case ::mg::cpu::VectorIsa::avx2:    \
      return isa_avx2::__VA_ARGS__;     \
    default:                            \
      return isa_baseline::__VA_ARGS__; \
  }
