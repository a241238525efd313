// Helpers every CPU function uses: typed access to variables, fp32 blocks
// for the 16-bit types, and the OpenMP loop over blocks.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg::cpu {

/// Elements per block: 4 KiB of floats stays in L1 while a 16-bit kernel
/// converts, computes and converts back in one pass.
constexpr int64_t kBlock = 1024;
/// Below this many elements a loop runs on one thread.
constexpr int64_t kParallelMin = 1 << 15;

template <class T>
const T* input(Variable* v) {
  return v->data()->get<const T>();
}
/// The output's data, to be overwritten.
template <class T>
T* output(Variable* v) {
  return v->data()->cast<T>(/*write_only=*/true);
}
template <class T>
const T* output_grad(Variable* v) {
  return v->grad()->get<const T>();
}
/// The input's grad; with accum its contents are kept for adding to.
template <class T>
T* input_grad(Variable* v, bool accum) {
  return v->grad()->cast<T>(/*write_only=*/!accum);
}

/// A read-only array handed to a kernel with its dtype, so a kernel that
/// computes in fp32 can take an fp32 array as it is.
struct Operand {
  const void* data;
  Dtype dtype;
};

/// The type oneDNN's matrix products and convolutions compute on T in:
/// bf16 for BFloat16 where the CPU has AVX512-BF16 or AMX, else fp32 (fp16
/// has no oneDNN kernels without AVX512-FP16).
template <class T>
Dtype compute_type() {
  const auto& cpu = cpu_features();
  if (std::is_same_v<T, BFloat16> && (cpu.avx512bf16 || cpu.amx_bf16)) {
    return Dtype::bf16;
  }
  return Dtype::f32;
}

/// True when a weight's data is held in fp32: a parameter's master copy
/// (or a pending fill, which materialises in whatever type is asked for).
inline bool held_in_float(Variable* v) {
  const SyncedArray& a = v->data()->array();
  return a.filling() || a.has_copy(Dtype::f32);
}

/// An input for a kernel on T: where the kernel computes in fp32 and the
/// input is held in fp32 (a parameter's master copy, data fed in fp32, the
/// output of a function run in float), that copy, read with no conversion
/// and no T copy made; else the T copy (for a weight, made once per pass and
/// shared by forward and backward).
template <class T>
Operand operand(Variable* v) {
  if (!std::is_same_v<T, float> && compute_type<T>() == Dtype::f32 &&
      held_in_float(v)) {
    return {v->data()->get<const float>(), Dtype::f32};
  }
  return {input<T>(v), dtype_of<T>};
}

/// Whether a kernel on T writes a weight's grad in fp32: where the weight is
/// held in fp32. The solver then reads the grad as it is, with no rounding
/// to T and back, no second copy and no conversion pass (PyTorch's autocast
/// gives fp32 parameters fp32 grads the same way). An inf or nan from an
/// overflowed half activation grad still reaches it.
template <class T>
bool grad_in_float(Variable* v) {
  return !std::is_same_v<T, float> && held_in_float(v);
}

/// Reads n elements as float: for float a pointer into src, else a
/// conversion into buf.
template <class T>
const float* load(const T* src, float* buf, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    (void)buf, (void)n;
    return src;
  } else {
    convert(src, dtype_of<T>, buf, Dtype::f32, static_cast<size_t>(n));
    return buf;
  }
}

/// Writes n floats to dst (adding to it with accum).
template <class T>
void store(const float* src, T* dst, int64_t n, bool accum = false) {
  if constexpr (std::is_same_v<T, float>) {
    if (accum) {
      for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
    } else if (src != dst) {
      std::memcpy(dst, src, n * sizeof(float));
    }
  } else {
    if (accum) {
      float tmp[kBlock];
      for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t len = std::min(kBlock, n - b);
        convert(dst + b, dtype_of<T>, tmp, Dtype::f32, len);
        for (int64_t i = 0; i < len; ++i) tmp[i] += src[b + i];
        convert(tmp, Dtype::f32, dst + b, dtype_of<T>, len);
      }
    } else {
      convert(src, Dtype::f32, dst, dtype_of<T>, static_cast<size_t>(n));
    }
  }
}

/// Writes an fp32 gradient (a bias's) to a weight's grad: in fp32 where
/// grad_in_float<T> says so, else in T (adding to it with accum).
template <class T>
void store_grad(const float* g, Variable* v, bool accum) {
  if (grad_in_float<T>(v)) {
    store(g, input_grad<float>(v, accum), v->size(), accum);
  } else {
    store(g, input_grad<T>(v, accum), v->size(), accum);
  }
}

/// Calls fn(begin, length) for consecutive blocks of [0, n), in parallel
/// when n is large.
template <class Fn>
void for_each_block(int64_t n, Fn&& fn) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kBlock;
    fn(begin, std::min(kBlock, n - begin));
  }
}

}  // namespace mg::cpu
