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
  f.f16c = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx512fp16 = __builtin_cpu_supports("avx512fp16");
  f.amx_bf16 = __builtin_cpu_supports("amx-bf16");
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace mg::cpu
