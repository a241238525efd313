// What the CPU we run on can do, detected once at run time.
#pragma once

namespace mg::cpu {

struct CpuFeatures {
  bool avx2 = false;        // 8-wide integer ops (bfloat16 conversions)
  bool f16c = false;        // 8-wide half <-> float conversions (with AVX2)
  bool avx512f = false;     // 16-wide float, half <-> float conversions
  bool avx512bw = false;    // 32-wide 16-bit integer ops (half, bf16 bits)
  bool avx512bf16 = false;  // float -> bfloat16 conversion and dot products
  bool avx512fp16 = false;  // native half arithmetic
  bool amx_bf16 = false;    // AMX tiles for bfloat16 matrix products
  bool intel = false;       // GenuineIntel: not a feature, never held back
};

/// The features kernels choose their paths by: those of this CPU, less any
/// a ScopedCpuFeatures holds back. MIXGRAPH_CPU_BASELINE=1 in the
/// environment reports none, to exercise the scalar fallbacks.
const CpuFeatures& cpu_features();

/// Whether oneDNN runs its bf16 kernels here: the CPU has AVX512-BF16 or
/// AMX and ONEDNN_MAX_CPU_ISA does not hold oneDNN below them (defined in
/// dnnl_utils.cpp; declared here so that headers stay clear of oneDNN's).
bool dnnl_bf16_isa();

/// The features this CPU has (none under MIXGRAPH_CPU_BASELINE=1), whatever
/// a ScopedCpuFeatures holds back.
const CpuFeatures& detected_cpu_features();

/// Runs kernels as if the CPU had only the features `allowed` names (and
/// the CPU has: a path the CPU cannot run is never turned on), so that a
/// test can run each ISA-specific path and its scalar twin in one process
/// and compare them: ScopedCpuFeatures scalar({}) forces the scalar paths.
/// The previous features come back at the end of the scope. For tests: it
/// must not change while kernels run on other threads.
class ScopedCpuFeatures {
 public:
  explicit ScopedCpuFeatures(const CpuFeatures& allowed);
  ~ScopedCpuFeatures();
  ScopedCpuFeatures(const ScopedCpuFeatures&) = delete;
  ScopedCpuFeatures& operator=(const ScopedCpuFeatures&) = delete;

 private:
  CpuFeatures saved_;
};

}  // namespace mg::cpu
