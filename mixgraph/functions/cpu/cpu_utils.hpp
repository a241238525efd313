// Helpers every CPU function uses: typed access to variables, fp32 blocks
// for the 16-bit types, and the OpenMP loop over blocks.
#pragma once

#include <omp.h>

#include <vector>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/parallel_min.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg::cpu {

/// Elements per block: 4 KiB of floats stays in L1 while a 16-bit kernel
/// converts, computes and converts back in one pass.
constexpr int64_t kBlock = 1024;

/// a / b rounded up, for a >= 0 and b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The items [begin, end) of n that thread t of a team of `threads` takes:
/// contiguous, in the threads' order, their counts differing by one at
/// most (the same split on every call, so a thread finds its own again).
struct TeamShare {
  int64_t begin, end;
};
constexpr TeamShare team_share(int64_t n, int64_t t, int64_t threads) {
  return {n * t / threads, n * (t + 1) / threads};
}

/// Below this many elements a loop of many operations an element
/// (attention's scores, E multiply-adds each; FFTs, STFTs, sorts and top-k
/// selections, log n or more each) runs on one thread.
constexpr int64_t kParallelMinCompute = 1 << 15;

/// +inf's bits in a 16-bit type (for the kernels on bits: ReLU's, max
/// pooling's).
template <class T>
constexpr uint16_t inf_bits_of = std::is_same_v<T, Half> ? 0x7c00 : 0x7f80;

/// The bits of half and bfloat16 data, read as 16-bit integers (may_alias:
/// the arrays hold Half or BFloat16 objects).
using Bits16 = uint16_t __attribute__((may_alias));
template <class T>
const Bits16* bits16(const T* p) {
  return reinterpret_cast<const Bits16*>(p);
}
template <class T>
Bits16* bits16(T* p) {
  return reinterpret_cast<Bits16*>(p);
}

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

/// The layout in which an elementwise function reads and writes all of its
/// arrays (of one size): the first channel-blocked one among the heads of
/// `arrays` (SyncedArray's Layout; null entries skipped), else plain. The
/// math of each element does not depend on where it sits, so an activation
/// held blocked between convolutions stays so through a ReLU or a residual
/// add, where reading it plain would cost a pass to convert it.
inline mg::Layout elementwise_layout(std::initializer_list<NdArray*> arrays) {
  for (NdArray* a : arrays) {
    if (a && !a->array().layout().plain()) return a->array().layout();
  }
  return {};
}

/// For a function that does the same to every channel of an image and
/// moves values only within its spatial axes (resizing, pooling): a's
/// head layout where it is channel-blocked with axis 0 of `shape` its
/// images, axis 1 its channels and the rest its spatial size, else plain.
/// Such a function may then run on blocked_view() of its arrays.
inline mg::Layout spatial_blocks(NdArray* a, const Shape& shape) {
  const mg::Layout l = a->array().layout();
  const int nd = static_cast<int>(shape.size());
  if (l.plain() || nd < 3 || l.batch != shape[0] || l.channels != shape[1] ||
      l.spatial != shape_size(shape, 2, nd)) {
    return {};
  }
  return l;
}

/// The layout of blocks of l.block channels for another array of the same
/// images and channels (shape's axes 0 and 1), plain where l is.
inline mg::Layout same_blocks(const mg::Layout& l, const Shape& shape) {
  if (l.plain()) return {};
  return {l.block, shape[0], shape[1],
          shape_size(shape, 2, static_cast<int>(shape.size()))};
}

/// An array of `shape` held in blocks of `block` channels, as the row-major
/// array it is: (batch * channels / block, spatial axes..., block).
inline Shape blocked_view(const Shape& shape, int64_t block) {
  Shape v{shape[0] * shape[1] / block};
  v.insert(v.end(), shape.begin() + 2, shape.end());
  v.push_back(block);
  return v;
}

/// A read-only array handed to a kernel with its dtype, so a kernel that
/// computes in fp32 can take an fp32 array as it is.
struct Operand {
  const void* data;
  Dtype dtype;
};

/// Whether oneDNN's bf16 kernels outrun its fp32 ones here, so that
/// bfloat16 computes in bf16: with AMX, and with AVX512-BF16 on AMD's cores
/// (Zen 4: bfloat16 steps 1.4-1.8x float's). Not on Intel's without AMX:
/// on an Emerald Rapids whose hypervisor hides AMX, oneDNN 2.6's bf16
/// matmul ran at 0.56-0.67x its fp32 one on the GPT's and the LSTM's
/// shapes, and our fp32 product on bf16 operands (gemm_packed.hpp) at
/// 1.06-1.64x the bf16 kernels (bench_gemm, 2026-12-02). Intel's Cooper
/// Lake, the one other such core, was not measured and is taken as its
/// successors. Never where ONEDNN_MAX_CPU_ISA holds oneDNN below its bf16
/// kernels (dnnl_bf16_isa()).
inline bool bf16_kernels_pay() {
  const auto& cpu = cpu_features();
  return (cpu.amx_bf16 || (cpu.avx512bf16 && !cpu.intel)) && dnnl_bf16_isa();
}

/// The type oneDNN's matrix products and convolutions compute on T in:
/// bf16 for BFloat16 where bf16_kernels_pay(), else fp32 (as half: the
/// operands converted where they are packed or blocked). Half is always
/// fp32: Debian's oneDNN 2.6 has no fp16 kernels, and AVX512-FP16 would not
/// help (its FMAs accumulate in fp16; fp16 products accumulated in fp32 run
/// at the fp32 rate there, as here: AMX-FP16 and AVX10.2 would help).
template <class T>
Dtype compute_type() {
  if (std::is_same_v<T, BFloat16> && bf16_kernels_pay()) return Dtype::bf16;
  return Dtype::f32;
}

/// True when a weight's data is held in fp32: a parameter's master copy
/// (or a pending fill, which materialises in whatever type is asked for).
inline bool held_in_float(Variable* v) { return held_in_float(*v->data()); }

/// An input for a kernel on T: where the kernel computes in fp32 and the
/// input is held in fp32 (a parameter's master copy, data fed in fp32, the
/// output of a function run in float), that copy, read with no conversion
/// and no T copy made; else the T copy (for a weight, made once per pass and
/// shared by forward and backward). On the host in `layout` where given.
template <class T>
Operand operand(Variable* v, const mg::Layout& layout = {}) {
  if (!std::is_same_v<T, float> && compute_type<T>() == Dtype::f32 &&
      (held_in_float(v) ||
       (!layout.plain() &&
        v->data()->array().has_copy(Dtype::f32, "cpu", layout)))) {
    return {v->data()->get<const float>(layout), Dtype::f32};
  }
  return {v->data()->get<const T>(layout), dtype_of<T>};
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

/// Where to compute floats bound for dst: for float dst itself (a store
/// from there then copies nothing), else buf.
template <class T>
float* store_buffer(T* dst, float* buf) {
  if constexpr (std::is_same_v<T, float>) {
    (void)buf;
    return dst;
  } else {
    (void)dst;
    return buf;
  }
}

/// Calls fn(begin, end) once for [0, n), or on each thread of the team for
/// its share (team_share) where n >= parallel_min() and no team runs yet:
/// for passes that are one memcpy or one loop, which a block at a time
/// would only slow.
template <class Fn>
void for_each_share(int64_t n, Fn&& fn) {
  if (n < parallel_min() || omp_in_parallel()) return fn(int64_t{0}, n);
#pragma omp parallel
  {
    const TeamShare s =
        team_share(n, omp_get_thread_num(), omp_get_num_threads());
    fn(s.begin, s.end);
  }
}

/// Writes n floats to dst (adding to it with accum), on the team where n is
/// large: a copy of 8 MB took 0.58 ms on one thread of an AMD EPYC Zen 4
/// and 0.34 on two (16 MB: 1.50 and 0.70), and the LSTM's step copied some
/// 40 MB of weights, grads and sequences this way.
template <class T>
void store(const float* src, T* dst, int64_t n, bool accum = false) {
  if constexpr (std::is_same_v<T, float>) {
    if (!accum && (src == dst || n <= 0)) return;  // data() of empty: null
    for_each_share(n, [&](int64_t begin, int64_t end) {
      if (accum) {
        for (int64_t i = begin; i < end; ++i) dst[i] += src[i];
      } else if (end > begin) {
        std::memcpy(dst + begin, src + begin, (end - begin) * sizeof(float));
      }
    });
  } else {
    if (accum) {
      for_each_share(n, [&](int64_t begin, int64_t end) {
        float tmp[kBlock];
        for (int64_t b = begin; b < end; b += kBlock) {
          const int64_t len = std::min(kBlock, end - b);
          convert(dst + b, dtype_of<T>, tmp, Dtype::f32, len);
          for (int64_t i = 0; i < len; ++i) tmp[i] += src[b + i];
          convert(tmp, Dtype::f32, dst + b, dtype_of<T>, len);
        }
      });
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

/// The grad of an input declared without one (a mask, boxes, lengths, a
/// clip bound) when the engine still asks for it: zero (added nothing with
/// accum), as the function does not depend on it smoothly. The engine marks
/// the grad written, so it must be: the next backward adds into it.
template <class T>
void zero_input_grad(Variable* v, bool accum) {
  if (accum) return;
  if (grad_in_float<T>(v)) {
    std::fill_n(input_grad<float>(v, false), v->size(), 0.0f);
  } else {
    std::fill_n(input_grad<T>(v, false), v->size(), T(0.0f));
  }
}

/// v's data as floats, for a kernel that computes in fp32 throughout: an
/// fp32 master (or fp32 data) is copied as it is, with no T copy made;
/// anything else is read in T and converted. `Floats` is the vector type
/// (a kernel's scratch vectors may draw on CpuVectorAllocator, or on
/// CpuScratchAllocator: every element is written here).
template <class T, class Floats = std::vector<float>>
Floats floats_of(Variable* v) {
  Floats out(static_cast<size_t>(v->size()));
  if (std::is_same_v<T, float> || held_in_float(v)) {
    store(v->data()->get<const float>(), out.data(), v->size());
  } else {
    convert(input<T>(v), dtype_of<T>, out.data(), Dtype::f32, out.size());
  }
  return out;
}

/// v's grad (an output's, read by backward) as floats.
template <class T, class Floats = std::vector<float>>
Floats grad_floats_of(Variable* v) {
  Floats out(static_cast<size_t>(v->size()));
  convert(output_grad<T>(v), dtype_of<T>, out.data(), Dtype::f32, out.size());
  return out;
}

/// True when v holds integer data (labels, ids, indices): its head copy is
/// an integer type. Such data is never converted to the type_config.
inline bool holds_integers(Variable* v) {
  const SyncedArray& a = v->data()->array();
  return a.has_head() && !is_floating(a.dtype());
}

/// True when v holds fp32 data that takes no grad: data fed in as float
/// (images, or labels and ids written with cast<float>()) or an fp32
/// function's output.
inline bool holds_float_without_grad(Variable* v) {
  const SyncedArray& a = v->data()->array();
  return a.has_head() && a.dtype() == Dtype::f32 && !v->need_grad();
}

/// For a layout function (Reshape, Slice, Concatenate, ...: it moves
/// elements without arithmetic): calls fn(TypeTag<U>) with U the integer
/// type the inputs hold, so that integer data passes through exactly in
/// every type_config; U = float where every input holds fp32 data that
/// takes no grad (labels written as float: rounded to half, label 2049
/// would be 2048, and the loss of the wrong class); else U = T. Inputs that
/// mix integer and floating data, or two integer types, are
/// std::invalid_argument.
template <class T, class Fn>
void dispatch_layout(const std::vector<Variable*>& in, const std::string& tag,
                     Fn&& fn) {
  const bool keep_float =
      !std::is_same_v<T, float> && !in.empty() &&
      std::all_of(in.begin(), in.end(), holds_float_without_grad);
  const Dtype floating = keep_float ? Dtype::f32 : dtype_of<T>;
  Dtype held = floating;
  for (size_t i = 0; i < in.size(); ++i) {
    const Dtype d =
        holds_integers(in[i]) ? in[i]->data()->array().dtype() : floating;
    if (i == 0) {
      held = d;
    } else if (d != held) {
      throw std::invalid_argument(msg(
          tag, "input 0 holds ", dtype_name(held), " data but input ", i,
          " holds ", dtype_name(d), "; convert them to one type with F::cast"));
    }
  }
  if (is_floating(held)) {
    if constexpr (!std::is_same_v<T, float>) {
      if (keep_float) return fn(TypeTag<float>{});
    }
    return fn(TypeTag<T>{});
  }
  dispatch_all_types(held, tag.c_str(), [&](auto tag_u) {
    using U = typename decltype(tag_u)::type;
    if constexpr (!std::is_floating_point_v<U> && !std::is_same_v<U, Half> &&
                  !std::is_same_v<U, BFloat16>) {
      fn(tag_u);
    }
  });
}

/// Integer data (labels, ids, indices) of input v as int32, checked: held as
/// an integer type it is read as it is; held as floating data (a float
/// variable used as labels) every value must be a whole number that fits
/// int32, else std::invalid_argument naming `what` ("t"), the value and its
/// flat index. Callers check the range their function needs.
const int32_t* index_data(Variable* v, const std::string& tag,
                          const char* what);

/// The sum of a[i] (times b[i] when given) over [0, n) in fp32, in
/// lanes.hpp's 16 lanes and fixed tree: the same result on every CPU.
inline float sum_floats(const float* a, int64_t n, const float* b = nullptr) {
  if (b) return lanes_sum(n, [a, b](int64_t i) { return a[i] * b[i]; });
  return lanes_sum(n, [a](int64_t i) { return a[i]; });
}

/// sums[q] = the fp32 sum of a[r, q] over the rows r of a (rows, cols), in
/// row order (the same bits on every path), in parallel over blocks of
/// columns when a is large. T: float, Half or BFloat16 (each value widened
/// to fp32 exactly).
template <class T>
void column_sums(const T* a, int64_t rows, int64_t cols, float* sums);

/// Calls fn(begin, length) for consecutive blocks of [0, n), in parallel
/// when n is large.
template <class Fn>
void for_each_block(int64_t n, Fn&& fn) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n >= parallel_min())
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * kBlock;
    fn(begin, std::min(kBlock, n - begin));
  }
}

}  // namespace mg::cpu
