#include <mixgraph/contexts/cpu/cpu_features.hpp>

#include <cstdlib>
#include <cstring>

namespace mg::cpu {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
  const char* baseline = std::getenv("MIXGRAPH_CPU_BASELINE");
  if (baseline && std::strcmp(baseline, "1") == 0) return f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.f16c = f.avx2 && __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = f.avx512f && __builtin_cpu_supports("avx512bw");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx512fp16 = __builtin_cpu_supports("avx512fp16");
  f.amx_bf16 = __builtin_cpu_supports("amx-bf16");
  f.intel = __builtin_cpu_is("intel");
#endif
  return f;
}

// The features in use: the detected ones until a ScopedCpuFeatures limits
// them.
CpuFeatures& active() {
  static CpuFeatures features = detected_cpu_features();
  return features;
}

}  // namespace

const CpuFeatures& detected_cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const CpuFeatures& cpu_features() { return active(); }

ScopedCpuFeatures::ScopedCpuFeatures(const CpuFeatures& allowed)
    : saved_(active()) {
  const CpuFeatures& has = detected_cpu_features();
  CpuFeatures& f = active();
  f.avx2 = has.avx2 && allowed.avx2;
  f.f16c = has.f16c && allowed.f16c;
  f.avx512f = has.avx512f && allowed.avx512f;
  f.avx512bw = f.avx512f && has.avx512bw && allowed.avx512bw;
  f.avx512bf16 = has.avx512bf16 && allowed.avx512bf16;
  f.avx512fp16 = has.avx512fp16 && allowed.avx512fp16;
  f.amx_bf16 = has.amx_bf16 && allowed.amx_bf16;
  f.intel = has.intel;
}

ScopedCpuFeatures::~ScopedCpuFeatures() { active() = saved_; }

}  // namespace mg::cpu
