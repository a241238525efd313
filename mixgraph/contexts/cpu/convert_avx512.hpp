// Sixteen elements of float, half or bfloat16 as an AVX-512 vector of fp32
// and back: the one place the vector roundings are written (half: the F16C
// instructions' round to nearest even; bfloat16: round to nearest even with
// integer ops, nan kept quiet, as detail::float_to_bf16_bits does), for the
// bulk conversions and the kernels that convert on the way.
// Include only from .cpp files: the functions need AVX-512F, and
// callers must check cpu_features() before running them.
#pragma once

// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own
// _mm512_undefined_* helpers (GCC bug 105593; the sanitizer build's -O1
// shows the plain one); the warning is not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <type_traits>

#include <mixgraph/contexts/half.hpp>

#define MG_TARGET_AVX512 __attribute__((target("avx512f")))

namespace mg::avx512 {

/// Sixteen T at p as fp32 (exact).
template <class T>
MG_TARGET_AVX512 inline __m512 load16(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_loadu_ps(p);
  } else {
    static_assert(std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>);
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_same_v<T, Half>) {
      return _mm512_cvtph_ps(b);
    } else {
      return _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
  }
}

/// v rounded to T (to nearest even), stored as sixteen T at p.
template <class T>
MG_TARGET_AVX512 inline void store16(T* p, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_storeu_ps(p, v);
  } else if constexpr (std::is_same_v<T, Half>) {
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(p),
        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    static_assert(std::is_same_v<T, BFloat16>);
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb =
        _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r =
        _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
        _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_mov_epi32(r, nan,
                              _mm512_or_si512(x, _mm512_set1_epi32(0x400000)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
}

}  // namespace mg::avx512
