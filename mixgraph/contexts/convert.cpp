#include <mixgraph/contexts/convert.hpp>

#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>

#include <algorithm>
#include <cstring>

#include <omp.h>

#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/parallel_min.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>

namespace mg {

namespace {

template <class S, class D>
void convert_loop(const S* src, D* dst, size_t n) {
  // Small ones, and ones inside a team, on the calling thread.
  const bool team =
      static_cast<int64_t>(n) >= cpu::parallel_min() && !omp_in_parallel();
#pragma omp parallel for if (team) schedule(static)
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

// The same eight at a time through convert_avx2.hpp, on CPUs without
// AVX-512 (where bfloat16 computes in fp32 on blocks converted here, as
// half does): half needs F16C, bfloat16 AVX2 alone (its loops hold no
// F16C instruction).
template <class T>
MG_TARGET_AVX2_F16C void to_float_avx2(const uint16_t* src, float* dst,
                                       size_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) avx2::store8(dst + i, avx2::load8(s + i));
  for (; i < n; ++i) dst[i] = static_cast<float>(s[i]);
}

template <class T>
MG_TARGET_AVX2_F16C void from_float_avx2(const float* src, uint16_t* dst,
                                         size_t n) {
  T* d = reinterpret_cast<T*>(dst);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) avx2::store8(d + i, avx2::load8(src + i));
  for (; i < n; ++i) d[i] = T(src[i]);
}

// Splits a vector conversion across the OpenMP pool in contiguous chunks.
template <class S, class D>
void run_chunked(void (*fn)(const S*, D*, size_t), const void* src, void* dst,
                 size_t n) {
  const S* s = static_cast<const S*>(src);
  D* d = static_cast<D*>(dst);
  // Small ones, and ones inside a team (a thread converting its own share),
  // on the calling thread.
  if (static_cast<int64_t>(n) < cpu::parallel_min() || omp_in_parallel()) {
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
    if (cpu.f16c) return run_chunked(to_float_avx2<Half>, src, dst, n), true;
  } else if (st == Dtype::f32 && dt == Dtype::f16) {
    if (cpu.avx512f)
      return run_chunked(from_float_avx512<Half>, src, dst, n), true;
    if (cpu.f16c) return run_chunked(from_float_avx2<Half>, src, dst, n), true;
  } else if (st == Dtype::bf16 && dt == Dtype::f32) {
    if (cpu.avx512f)
      return run_chunked(to_float_avx512<BFloat16>, src, dst, n), true;
    if (cpu.avx2)
      return run_chunked(to_float_avx2<BFloat16>, src, dst, n), true;
  } else if (st == Dtype::f32 && dt == Dtype::bf16) {
    if (cpu.avx512f)
      return run_chunked(from_float_avx512<BFloat16>, src, dst, n), true;
    if (cpu.avx2) {
      return run_chunked(from_float_avx2<BFloat16>, src, dst, n), true;
    }
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
