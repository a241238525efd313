// What the CPU we run on can do, detected once at run time.
#pragma once

namespace mg::cpu {

struct CpuFeatures {
  bool f16c = false;         // 8-wide half <-> float conversions (with AVX2)
  bool avx512f = false;      // 16-wide float, half <-> float conversions
  bool avx512bf16 = false;   // float -> bfloat16 conversion and dot products
  bool avx512fp16 = false;   // native half arithmetic
  bool amx_bf16 = false;     // AMX tiles for bfloat16 matrix products
};

/// The features of this CPU. MIXGRAPH_CPU_BASELINE=1 in the environment
/// reports none, to exercise the scalar fallbacks.
const CpuFeatures& cpu_features();

}  // namespace mg::cpu
