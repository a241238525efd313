// The machine's limits, measured by the benchmarks before their figures:
// the fp32 FMA peak, the best rate of the library's fp32 product and the
// memory bandwidth on the benchmark's threads.
#pragma once

// GCC 12's AVX-512 headers trip -Wuninitialized on their own
// _mm512_undefined_* helpers (GCC bug 105593); the warning is not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>

#include "timing.hpp"

namespace mg::bench {

// ---- the options of the one-call benchmarks ----

/// --runs N, --threads N and --isa native|avx2, as bench_gemm and
/// bench_attention take them.
struct CallOptions {
  int runs;
  int threads = 2;
  std::string isa = "native";
};

/// Parses argv into CallOptions (`runs` by default); anything else prints
/// the usage of `program` and exits with 2.
inline CallOptions parse_call_options(int argc, char** argv,
                                      const char* program, int runs) {
  CallOptions o{runs};
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i], v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--runs" && !v.empty()) {
      o.runs = std::atoi(v.c_str());
    } else if (k == "--threads" && !v.empty()) {
      o.threads = std::atoi(v.c_str());
    } else if (k == "--isa" && (v == "native" || v == "avx2")) {
      o.isa = v;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--runs N] [--threads N] [--isa native|avx2]\n",
                   program);
      std::exit(2);
    }
  }
  return o;
}

// ---- --isa avx2 ----

/// For `--isa avx2`: our kernels (a ScopedCpuFeatures of AVX2 and F16C)
/// and oneDNN's (ONEDNN_MAX_CPU_ISA, read once before its first kernel) as
/// on a CPU without AVX-512, while the result is held; null for "native".
/// The peers, which inherit the environment, are held there too: PyTorch's
/// fp32 matrix products are MKL's (MKL_ENABLE_INSTRUCTIONS) and its own
/// loops pick their ISA at start (ATEN_CPU_CAPABILITY). With oneDNN's cap
/// alone its GPT step ran MKL's AVX-512 products: 195 ms, against 238 ms
/// capped (2026-12-04, an Intel Xeon with AVX-512).
inline std::unique_ptr<mg::cpu::ScopedCpuFeatures> limit_isa(
    const std::string& isa) {
  if (isa != "avx2") return nullptr;
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
  setenv("MKL_ENABLE_INSTRUCTIONS", "AVX2", 1);
  setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  mg::cpu::CpuFeatures f;
  f.avx2 = f.f16c = true;
  return std::make_unique<mg::cpu::ScopedCpuFeatures>(f);
}

// ---- the machine's fp32 FMA peak ----

// kChains independent FMA chains per thread, in registers: the core's FMA
// ports kept busy with nothing else (4 cycles latency x 2 ports needs 8).
constexpr int kChains = 12;
constexpr long kFmaIters = 1 << 22;

inline __attribute__((target("avx512f"))) double fma_flops_avx512() {
  __m512 acc[kChains];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(float(k));
  for (long i = 0; i < kFmaIters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  }
  float sink = 0;
  for (int k = 0; k < kChains; ++k) sink += _mm512_reduce_add_ps(acc[k]);
  return sink == 12345.0f ? 0.0 : 2.0 * 16 * kChains * kFmaIters;
}

inline __attribute__((target("avx2,fma"))) double fma_flops_avx2() {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(float(k));
  for (long i = 0; i < kFmaIters; ++i) {
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  }
  float lanes[8], sink = 0;
  for (int k = 0; k < kChains; ++k) {
    _mm256_storeu_ps(lanes, acc[k]);
    for (float l : lanes) sink += l;
  }
  return sink == 12345.0f ? 0.0 : 2.0 * 8 * kChains * kFmaIters;
}

// GFLOP/s of `threads` threads each running the loop: the best of 9 tries
// a tenth of a second apart. The peak is the hardware's: a try slowed by
// load from elsewhere on a shared machine (all 5 of a median were, once,
// at half the rate) would make every fraction of it too high.
inline double fma_peak_gflops(int threads, bool avx512) {
  double best = 0;
  for (int r = 0; r < 9; ++r) {
    if (r > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double flops = 0;
    const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    flops += avx512 ? fma_flops_avx512() : fma_flops_avx2();
    best = std::max(best, flops / (omp_get_wtime() - t0) / 1e9);
  }
  return best;
}

// ---- the best rate of a product ----

// GFLOP/s of the library's best fp32 product on the current team: three
// large products (the GPT's MLP, 1024 x 1024 x 256; the LSTM's input,
// 2048 x 2048 x 512; a 2048 square), each through cpu::gemm() (oneDNN's
// matmul, or ours where it takes fp32 products on AVX2) and through our
// packed product, the best of 5 calls each after one untimed, alternating.
// It is the limit the models' products are measured against beside the
// FMA peak, which no product reaches (it also loads, packs and stores): on
// 2 cores of an Intel Xeon with AMX (2026-12-07) the square reached 64-66%
// of the FMA peak through oneDNN and 71-76% through ours, one thread or
// two; held to AVX2 ours reached 91% on the GPT's shape (hot, bench_gemm)
// and 62-69% on the square, hence the three shapes.
inline double product_ceiling_gflops() {
  struct Shape {
    int64_t m, n, k;
  };
  double best = 0;
  for (const Shape s : {Shape{1024, 1024, 256}, Shape{2048, 2048, 512},
                        Shape{2048, 2048, 2048}}) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
    const mg::cpu::Operand fa{a.data(), mg::Dtype::f32};
    const mg::cpu::Operand fb{b.data(), mg::Dtype::f32};
    for (int r = 0; r < 6; ++r) {
      for (const bool packed : {false, true}) {
        if (packed && !mg::cpu::gemm_packed_available()) continue;
        const double t0 = omp_get_wtime();
        if (packed) {
          mg::cpu::gemm_packed<float>(false, false, s.m, s.n, s.k, fa, fb,
                                      c.data(), nullptr, false, 1);
        } else {
          mg::cpu::gemm<float>(false, false, s.m, s.n, s.k, fa, fb, c.data());
        }
        const double t = omp_get_wtime() - t0;
        if (r > 0) best = std::max(best, 2.0 * s.m * s.n * s.k / t / 1e9);
        if (c[s.m * s.n / 2] != 0.125f * s.k) {
          std::printf("(product check failed)\n");
        }
      }
    }
  }
  return best;
}

// ---- the machine's memory bandwidth ----

// GB/s of a STREAM triad (a = b + s c) over three 64 MB arrays on `threads`
// threads: the median of 5. Counted as the memory moves them: b and c read,
// a read (for ownership) and written, 4 arrays (STREAM's convention counts
// 3). The solver's update is a pass of the same kind: Adam reads the
// weight, its grad and two moments and writes three of them back, 7.
inline double triad_bandwidth_gbs(int threads) {
  const int64_t n = int64_t{16} << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    const double t0 = omp_get_wtime();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    rates.push_back(4.0 * n * sizeof(float) / (omp_get_wtime() - t0) / 1e9);
  }
  if (a[n / 2] != 2.0f) std::printf("(triad check failed)\n");
  return median(rates);
}

}  // namespace mg::bench
