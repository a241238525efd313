// Eight elements of float, half or bfloat16 as an AVX2 vector of fp32 and
// back: convert_avx512.hpp's roundings at half the width (half: F16C's
// round to nearest even; bfloat16: round to nearest even with integer ops,
// nan kept quiet, as detail::float_to_bf16_bits does), for the bulk
// conversions and the kernels that convert on the way on CPUs without
// AVX-512. Include only from .cpp files: the functions need AVX2 and F16C,
// and callers must check cpu_features() before running them.
#pragma once

// As convert_avx512.hpp: GCC 12's AVX-512 headers, which immintrin.h pulls
// in, trip -W(maybe-)uninitialized on their own helpers (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <type_traits>

#include <mixgraph/contexts/half.hpp>

#define MG_TARGET_AVX2_F16C __attribute__((target("avx2,f16c")))

namespace mg::avx2 {

/// Eight T at p as fp32 (exact).
template <class T>
MG_TARGET_AVX2_F16C inline __m256 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else {
    static_assert(std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>);
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<T, Half>) {
      return _mm256_cvtph_ps(b);
    } else {
      return _mm256_castsi256_ps(
          _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
  }
}

/// Four T at p as fp32 (exact), as load8's eight.
template <class T>
MG_TARGET_AVX2_F16C inline __m128 load4(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm_loadu_ps(p);
  } else {
    static_assert(std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>);
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<T, Half>) {
      return _mm_cvtph_ps(b);
    } else {
      return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(b), 16));
    }
  }
}

/// v rounded to T (to nearest even), stored as eight T at p.
template <class T>
MG_TARGET_AVX2_F16C inline void store8(T* p, __m256 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm256_storeu_ps(p, v);
  } else if constexpr (std::is_same_v<T, Half>) {
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(p),
        _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    static_assert(std::is_same_v<T, BFloat16>);
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb =
        _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r =
        _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                           _mm256_set1_epi32(0x7f800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(x, _mm256_set1_epi32(0x400000)),
                           nan);
    // Each lane's high half, packed: packus works per 128-bit lane, so the
    // two lanes' four results are gathered into the low 128 bits.
    const __m256i high = _mm256_srli_epi32(r, 16);
    const __m256i packed =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(high, high), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_castsi256_si128(packed));
  }
}

}  // namespace mg::avx2
