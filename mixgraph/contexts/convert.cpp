#include <mixgraph/contexts/convert.hpp>

#include <mixgraph/contexts/cpu/convert_avx512.hpp>

#include <algorithm>
#include <cstring>

#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>

namespace mg {

namespace {

// Conversions are memory bound; only big ones are worth the threads.
constexpr size_t kParallelMin = 1 << 16;

template <class S, class D>
void convert_loop(const S* src, D* dst, size_t n) {
#pragma omp parallel for if (n >= kParallelMin) schedule(static)
  for (size_t i = 0; i < n; ++i) dst[i] = convert_one<D>(src[i]);
}

// The AVX-512 loops for T (Half or BFloat16): sixteen at a time through
// convert_avx512.hpp's roundings, the tail one at a time (the same rules).
template <class T>
MG_TARGET_AVX512 void to_float_avx512(const uint16_t* src, float* dst,
                                      size_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) avx512::store16(dst + i, avx512::load16(s + i));
  for (; i < n; ++i) dst[i] = static_cast<float>(s[i]);
}

template <class T>
MG_TARGET_AVX512 void from_float_avx512(const float* src, uint16_t* dst,
                                        size_t n) {
  T* d = reinterpret_cast<T*>(dst);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) avx512::store16(d + i, avx512::load16(src + i));
  for (; i < n; ++i) d[i] = T(src[i]);
}

__attribute__((target("avx2,f16c"))) void half_to_float_f16c(
    const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = detail::half_bits_to_float(src[i]);
}

__attribute__((target("avx2,f16c"))) void float_to_half_f16c(const float* src,
                                                             uint16_t* dst,
                                                             size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = detail::float_to_half_bits(src[i]);
}

// The same with AVX2, eight at a time (CPUs without AVX-512: bfloat16
// computes in fp32 on blocks converted here, as half does with F16C).
__attribute__((target("avx2"))) void bf16_to_float_avx2(const uint16_t* src,
                                                        float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
  }
  for (; i < n; ++i) dst[i] = detail::bf16_bits_to_float(src[i]);
}

__attribute__((target("avx2"))) void float_to_bf16_avx2(const float* src,
                                                        uint16_t* dst,
                                                        size_t n) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x400000);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
    __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(bias, lsb));
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    rounded = _mm256_blendv_epi8(rounded, _mm256_or_si256(x, quiet), is_nan);
    // Each lane's high half, packed: packus works per 128-bit lane, so the
    // two lanes' four results are gathered into the low 128 bits.
    __m256i high = _mm256_srli_epi32(rounded, 16);
    __m256i packed = _mm256_packus_epi32(high, high);
    packed = _mm256_permute4x64_epi64(packed, 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) dst[i] = detail::float_to_bf16_bits(src[i]);
}

// Splits a vector conversion across the OpenMP pool in contiguous chunks.
template <class S, class D>
void run_chunked(void (*fn)(const S*, D*, size_t), const void* src, void* dst,
                 size_t n) {
  const S* s = static_cast<const S*>(src);
  D* d = static_cast<D*>(dst);
  if (n < kParallelMin) {
    fn(s, d, n);
    return;
  }
  constexpr size_t kChunk = 1 << 14;
  const long chunks = static_cast<long>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * kChunk;
    fn(s + begin, d + begin, std::min(kChunk, n - begin));
  }
}

// Returns true when a vector path handled the conversion.
bool convert_vector(const void* src, Dtype st, void* dst, Dtype dt, size_t n) {
  const auto& cpu = cpu::cpu_features();
  if (st == Dtype::f16 && dt == Dtype::f32) {
    if (cpu.avx512f)
      return run_chunked(to_float_avx512<Half>, src, dst, n), true;
    if (cpu.f16c) return run_chunked(half_to_float_f16c, src, dst, n), true;
  } else if (st == Dtype::f32 && dt == Dtype::f16) {
    if (cpu.avx512f)
      return run_chunked(from_float_avx512<Half>, src, dst, n), true;
    if (cpu.f16c) return run_chunked(float_to_half_f16c, src, dst, n), true;
  } else if (st == Dtype::bf16 && dt == Dtype::f32) {
    if (cpu.avx512f)
      return run_chunked(to_float_avx512<BFloat16>, src, dst, n), true;
    if (cpu.avx2) return run_chunked(bf16_to_float_avx2, src, dst, n), true;
  } else if (st == Dtype::f32 && dt == Dtype::bf16) {
    if (cpu.avx512f)
      return run_chunked(from_float_avx512<BFloat16>, src, dst, n), true;
    if (cpu.avx2) return run_chunked(float_to_bf16_avx2, src, dst, n), true;
  }
  return false;
}

}  // namespace

void convert_scalar(const void* src, Dtype st, void* dst, Dtype dt, size_t n) {
  if (st == dt) {
    std::memcpy(dst, src, n * dtype_size(st));
    return;
  }
  dispatch_all_types(st, "convert", [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_all_types(dt, "convert", [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      convert_loop(static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
}

void convert(const void* src, Dtype st, void* dst, Dtype dt, size_t n) {
  if (n == 0) return;
  if (st != dt && convert_vector(src, st, dst, dt, n)) return;
  convert_scalar(src, st, dst, dt, n);
}

void fill(void* dst, Dtype dtype, double value, size_t n) {
  if (value == 0.0) {
    std::memset(dst, 0, n * dtype_size(dtype));
    return;
  }
  dispatch_all_types(dtype, "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert_one<T>(value);
    std::fill_n(static_cast<T*>(dst), n, v);
  });
}

}  // namespace mg
