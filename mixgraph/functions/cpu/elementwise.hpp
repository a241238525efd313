// The CPU loop drivers for elementwise functions, and their registration.
#pragma once

#include <cstring>
#include <type_traits>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/cpu/convert_chunks.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

/// ReLU runs on the bits of half and bfloat16 data (ops::ReLU::positive_bits):
/// the same results as in fp32, with half float's bytes and no conversion.
template <class T, class Op>
constexpr bool kReluOnBits =
    std::is_same_v<Op, ops::ReLU> && !std::is_same_v<T, float>;

// The loops of ReLU on bits: integer compares and masks, which the
// compiler vectorizes (8 lanes at the baseline ISA's 128 bits; memory
// bound either way). y may be x, dx may be dy (in place: each element is
// read before it is written, which ivdep allows).
inline void relu_bits_forward(const Bits16* x, Bits16* y, int64_t n,
                              uint16_t inf) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t keep = ops::ReLU::positive_bits(x[i], inf) ? 0xffff : 0;
    y[i] = x[i] & keep;
  }
}
inline void relu_bits_backward(const Bits16* y, const Bits16* dy, Bits16* dx,
                               int64_t n, uint16_t inf) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t keep = ops::ReLU::positive_bits(y[i], inf) ? 0xffff : 0;
    dx[i] = dy[i] & keep;
  }
}

/// Whether Op's forward math is long (its long_math, unary_ops.hpp): then
/// its loops ask for their arrays' lines ahead (stream_ahead), and so does
/// a backward whose grad reads x (recomputing that math). A short op's loop
/// is left to the hardware's prefetchers: an add's loop ran 1.1x its time
/// out of cache with the requests and 1.25x in cache (Intel Xeon, 2
/// threads, 2026-12-07), where GELU's backward took 0.55x.
template <class Op, class = void>
struct LongMath : std::false_type {};
template <class Op>
struct LongMath<Op, std::void_t<decltype(Op::long_math)>>
    : std::bool_constant<Op::long_math> {};
template <class Op>
constexpr bool kStreamsForward = LongMath<Op>::value;
template <class Op>
constexpr bool kStreamsBackward = (LongMath<Op>::value && Op::grad_uses_x);

// A unary op over fp32 blocks, compiled per vector ISA: the ops' math
// (ops/vector_math.hpp) has no branches or calls, so it runs 16 wide under
// AVX-512 (GELU's tanh was a libm call per element). y may be x and dx dy
// (in place: each element is read before it is written, which ivdep
// allows). forward_run and backward_run are the loops themselves;
// forward and backward take a long op's arrays in runs, asking for each
// run's lines ahead.
namespace unary_loops {
// clang-format off
#define MG_UNARY_LOOPS(NS, TARGET)                                        \
  namespace NS {                                                          \
  template <class Op>                                                     \
  TARGET void forward_run(const Op& op, const float* x, float* y,         \
                          int64_t n) {                                    \
    _Pragma("GCC ivdep")                                                  \
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);                      \
  }                                                                       \
  template <class Op>                                                     \
  TARGET void backward_run(const Op& op, const float* x, const float* y,  \
                           const float* dy, float* dx, int64_t n) {       \
    _Pragma("GCC ivdep")                                                  \
    for (int64_t i = 0; i < n; ++i) {                                     \
      dx[i] = op.grad(Op::grad_uses_x ? x[i] : 0.0f,                      \
                      Op::grad_uses_y ? y[i] : 0.0f, dy[i]);              \
    }                                                                     \
  }                                                                       \
  template <class Op>                                                     \
  TARGET void forward(const Op& op, const float* x, float* y, int64_t n) { \
    if constexpr (kStreamsForward<Op>) {                                  \
      for (int64_t i = 0; i < n; i += kStreamRun) {                       \
        stream_ahead(x + i);                                              \
        forward_run(op, x + i, y + i, std::min(kStreamRun, n - i));       \
      }                                                                   \
    } else {                                                              \
      forward_run(op, x, y, n);                                           \
    }                                                                     \
  }                                                                       \
  template <class Op>                                                     \
  TARGET void backward(const Op& op, const float* x, const float* y,      \
                       const float* dy, float* dx, int64_t n) {           \
    if constexpr (kStreamsBackward<Op>) {  /* x is read: not null */      \
      for (int64_t i = 0; i < n; i += kStreamRun) {                       \
        stream_ahead(x + i);                                              \
        stream_ahead(dy + i);                                             \
        backward_run(op, x + i, Op::grad_uses_y ? y + i : nullptr,        \
                     dy + i, dx + i, std::min(kStreamRun, n - i));        \
      }                                                                   \
    } else {                                                              \
      backward_run(op, x, y, dy, dx, n);                                  \
    }                                                                     \
  }                                                                       \
  }
MG_FOR_EACH_VECTOR_ISA(MG_UNARY_LOOPS)
#undef MG_UNARY_LOOPS
// clang-format on
}  // namespace unary_loops

// The same for half and bfloat16 data, converted a chunk at a time inside
// the loop (convert_chunks.hpp): where chunk_isa() has chunk conversions.
// The tail goes one element at a time by the same roundings. A chunk is one
// run of a long op's streams.
static_assert(kChunk == kStreamRun);
namespace unary_loops {
// clang-format off
#define MG_UNARY_CHUNK_LOOPS(NS, TARGET, CHUNKS)                            \
  namespace NS {                                                            \
  template <class T, class Op>                                              \
  TARGET void forward_chunks(const Op& op, const T* x, T* y, int64_t n) {   \
    float xf[kChunk], yf[kChunk];                                           \
    int64_t i = 0;                                                          \
    for (; i + kChunk <= n; i += kChunk) {                                  \
      if constexpr (kStreamsForward<Op>) stream_ahead(x + i);               \
      CHUNKS::convert(x + i, xf);                                           \
      forward_run(op, xf, yf, kChunk);                                      \
      CHUNKS::convert(yf, y + i);                                           \
    }                                                                       \
    for (; i < n; ++i) y[i] = T(op(static_cast<float>(x[i])));              \
  }                                                                         \
  template <class T, class Op>                                              \
  TARGET void backward_chunks(const Op& op, const T* x, const T* y,         \
                              const T* dy, T* dx, int64_t n, bool accum) {  \
    float xf[kChunk] = {}, yf[kChunk] = {}, dyf[kChunk], dxf[kChunk];       \
    int64_t i = 0;                                                          \
    for (; i + kChunk <= n; i += kChunk) {                                  \
      if constexpr (kStreamsBackward<Op>) {                                 \
        stream_ahead(x + i);                                                \
        stream_ahead(dy + i);                                               \
      }                                                                     \
      if constexpr (Op::grad_uses_x) CHUNKS::convert(x + i, xf);            \
      if constexpr (Op::grad_uses_y) CHUNKS::convert(y + i, yf);            \
      CHUNKS::convert(dy + i, dyf);                                         \
      backward_run(op, xf, yf, dyf, dxf, kChunk);                           \
      if (accum) {                                                          \
        CHUNKS::add(dxf, dx + i);                                           \
      } else {                                                              \
        CHUNKS::convert(dxf, dx + i);                                       \
      }                                                                     \
    }                                                                       \
    for (; i < n; ++i) {                                                    \
      const float g =                                                       \
          op.grad(Op::grad_uses_x ? static_cast<float>(x[i]) : 0.0f,        \
                  Op::grad_uses_y ? static_cast<float>(y[i]) : 0.0f,        \
                  static_cast<float>(dy[i]));                               \
      dx[i] = T(accum ? static_cast<float>(dx[i]) + g : g);                 \
    }                                                                       \
  }                                                                         \
  }
MG_UNARY_CHUNK_LOOPS(isa_avx512,
                     __attribute__((target("avx512f"), MG_NO_CONTRACT)),
                     ChunksAvx512)
MG_UNARY_CHUNK_LOOPS(isa_avx2,
                     __attribute__((target("avx2,f16c"), MG_NO_CONTRACT)),
                     ChunksAvx2)
#undef MG_UNARY_CHUNK_LOOPS
// clang-format on
}  // namespace unary_loops

/// y = op(x) over n half or bfloat16 elements in chunks; false where the
/// CPU has no chunk conversions (the caller converts blocks).
template <class T, class Op>
bool unary_forward_chunks(const Op& op, const T* x, T* y, int64_t n) {
  using namespace unary_loops;
  const VectorIsa isa = chunk_isa();
  if (isa == VectorIsa::baseline) return false;
  for_each_block(n, [&](int64_t begin, int64_t len) {
    if (isa == VectorIsa::avx512) {
      isa_avx512::forward_chunks(op, x + begin, y + begin, len);
    } else {
      isa_avx2::forward_chunks(op, x + begin, y + begin, len);
    }
  });
  return true;
}
/// dx (+)= op's grad over n half or bfloat16 elements in chunks (x or y
/// null where op's grad does not read it); false as above.
template <class T, class Op>
bool unary_backward_chunks(const Op& op, const T* x, const T* y, const T* dy,
                           T* dx, int64_t n, bool accum) {
  using namespace unary_loops;
  const VectorIsa isa = chunk_isa();
  if (isa == VectorIsa::baseline) return false;
  for_each_block(n, [&](int64_t b, int64_t len) {
    const T* xb = x ? x + b : nullptr;
    const T* yb = y ? y + b : nullptr;
    if (isa == VectorIsa::avx512) {
      isa_avx512::backward_chunks(op, xb, yb, dy + b, dx + b, len, accum);
    } else {
      isa_avx2::backward_chunks(op, xb, yb, dy + b, dx + b, len, accum);
    }
  });
  return true;
}

template <class Op>
void unary_forward(const Op& op, const float* x, float* y, int64_t n) {
  using namespace unary_loops;
  MG_CALL_VECTOR_ISA(forward(op, x, y, n));
}
template <class Op>
void unary_backward(const Op& op, const float* x, const float* y,
                    const float* dy, float* dx, int64_t n) {
  using namespace unary_loops;
  MG_CALL_VECTOR_ISA(backward(op, x, y, dy, dx, n));
}

/// y = op(x), in fp32 blocks.
template <class T, class Op>
class UnaryCpu : public UnaryFunction<Op> {
 public:
  using UnaryFunction<Op>::UnaryFunction;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const mg::Layout l = elementwise_layout({in[0]->data().get()});
    const T* x = in[0]->data()->template get<const T>(l);
    T* y = out[0]->data()->template cast<T>(true, l);
    if constexpr (kReluOnBits<T, Op>) {
      const Bits16* xs = bits16(x);
      Bits16* ys = bits16(y);
      for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
        relu_bits_forward(xs + begin, ys + begin, len, inf_bits_of<T>);
      });
      return;
    }
    const Op& op = this->op_;
    if constexpr (!std::is_same_v<T, float>) {
      if (unary_forward_chunks(op, x, y, in[0]->size())) return;
    }
    for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], yb[kBlock];
      const float* xf = load(x + begin, xb, len);
      float* yf = store_buffer(y + begin, yb);
      // x and y are one array or two that do not overlap.
      unary_forward(op, xf, yf, len);
      store(yf, y + begin, len);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    NdArray* xa = Op::grad_uses_x ? in[0]->data().get() : nullptr;
    NdArray* ya = Op::grad_uses_y ? out[0]->data().get() : nullptr;
    const mg::Layout l = elementwise_layout({out[0]->grad().get(), ya, xa});
    const T* x = xa ? xa->template get<const T>(l) : nullptr;
    const T* y = ya ? ya->template get<const T>(l) : nullptr;
    const T* dy = out[0]->grad()->template get<const T>(l);
    T* dx = in[0]->grad()->template cast<T>(!accum[0], l);
    if constexpr (kReluOnBits<T, Op>) {
      if (!accum[0]) {
        const Bits16 *ys = bits16(y), *dys = bits16(dy);
        Bits16* dxs = bits16(dx);
        for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
          relu_bits_backward(ys + begin, dys + begin, dxs + begin, len,
                             inf_bits_of<T>);
        });
        return;
      }
    }
    const Op& op = this->op_;
    if constexpr (!std::is_same_v<T, float>) {
      if (unary_backward_chunks(op, x, y, dy, dx, in[0]->size(), accum[0])) {
        return;
      }
    }
    for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], yb[kBlock], dyb[kBlock], dxb[kBlock];
      const float* xf = x ? load(x + begin, xb, len) : nullptr;
      const float* yf = y ? load(y + begin, yb, len) : nullptr;
      const float* dyf = load(dy + begin, dyb, len);
      // Without accum, float's dx is written where it goes (often over dy:
      // the same element read and written, which ivdep allows).
      float* dxf = accum[0] ? dxb : store_buffer(dx + begin, dxb);
      unary_backward(op, xf, yf, dyf, dxf, len);
      store(dxf, dx + begin, len, accum[0]);
    });
  }
};

// A binary op over fp32 runs, compiled per vector ISA as the unary loops
// are (the same bits on each). Compiled for the baseline alone, the ops
// ran 4 wide through a buffer, and float's y was copied after: 1 MB of
// half added took 0.117 ms against 0.059 now (float's add is bound by
// memory: 0.124 against 0.114; Intel Xeon, 2 threads, 2026-12-05). y may
// be a or b, and g dy (each element read before it is written, which
// ivdep allows).
namespace binary_loops {
// clang-format off
#define MG_BINARY_LOOPS(NS, TARGET)                                        \
  namespace NS {                                                           \
  template <class Op>                                                      \
  TARGET void forward(const Op& op, const float* a, const float* b,        \
                      float* y, int64_t n) {                               \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);                 \
  }                                                                        \
  /* g = the grad of input K (a and b null where op's grads do not read */ \
  /* them, y where they do not read y). */                                 \
  template <int K, class Op>                                               \
  TARGET void backward(const Op& op, const float* a, const float* b,       \
                       const float* y, const float* dy, float* g,          \
                       int64_t n) {                                        \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t i = 0; i < n; ++i) {                                      \
      const float av = Op::grad_uses_x ? a[i] : 0.0f;                      \
      const float bv = Op::grad_uses_x ? b[i] : 0.0f;                      \
      const float yv = Op::grad_uses_y ? y[i] : 0.0f;                      \
      g[i] = K == 0 ? op.grad0(av, bv, yv, dy[i])                          \
                    : op.grad1(av, bv, yv, dy[i]);                         \
    }                                                                      \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_BINARY_LOOPS)
#undef MG_BINARY_LOOPS
// clang-format on
}  // namespace binary_loops

template <class Op>
void binary_forward(const Op& op, const float* a, const float* b, float* y,
                    int64_t n) {
  using namespace binary_loops;
  MG_CALL_VECTOR_ISA(forward(op, a, b, y, n));
}
template <int K, class Op>
void binary_backward(const Op& op, const float* a, const float* b,
                     const float* y, const float* dy, float* g, int64_t n) {
  using namespace binary_loops;
  MG_CALL_VECTOR_ISA(template backward<K>(op, a, b, y, dy, g, n));
}

/// Visits the output in runs, chunked to kBlock, calling fn(out_offset,
/// offset0, step0, offset1, step1, len): step is 1 where the input runs
/// along with the output and 0 where it is broadcast. A run is the last
/// axis and every axis before it along which both inputs go on the same
/// way (each stride the run's size times the step, or a size of 1): two
/// arrays of one shape are one run, not a row per last axis (ResNet's
/// residual adds: 65,536 rows of 32, each converted on its own in half,
/// took 3.3x float's time). Chunks run in parallel unless `serial` (when
/// fn adds into shared sums; they then go in the output's order).
template <class Fn>
void for_each_broadcast_row(const BroadcastPlan& p, Fn&& fn,
                            bool serial = false) {
  const int nd = static_cast<int>(p.out_shape.size());
  const int64_t step0 = nd ? p.stride0[nd - 1] : 0;
  const int64_t step1 = nd ? p.stride1[nd - 1] : 0;
  int first = nd ? nd - 1 : 0;  // the run's first axis
  int64_t row = nd ? p.out_shape[nd - 1] : 1;
  while (first > 0) {
    const int d = first - 1;
    const int64_t n = p.out_shape[d];
    if (n != 1 && (p.stride0[d] != row * step0 || p.stride1[d] != row * step1))
      break;
    row *= n;
    first = d;
  }
  const int64_t rows = row ? shape_size(p.out_shape) / row : 0;
  const int64_t chunks = ceil_div(row, kBlock);  // per run
#pragma omp parallel for schedule(static) if (!serial && \
                                              rows * row >= parallel_min())
  for (int64_t k = 0; k < rows * chunks; ++k) {
    const int64_t r = k / chunks, c = (k % chunks) * kBlock;
    int64_t rem = r, off0 = 0, off1 = 0;
    for (int d = first - 1; d >= 0; --d) {
      const int64_t idx = rem % p.out_shape[d];
      rem /= p.out_shape[d];
      off0 += idx * p.stride0[d];
      off1 += idx * p.stride1[d];
    }
    fn(r * row + c, off0 + c * step0, step0, off1 + c * step1, step1,
       std::min(kBlock, row - c));
  }
}

/// Reads len elements starting at src with step 1 (a run) or 0 (one value
/// repeated) as floats.
template <class T>
const float* load_strided(const T* src, int64_t step, float* buf, int64_t len) {
  if (step) return load(src, buf, len);
  std::fill_n(buf, len, static_cast<float>(src[0]));
  return buf;
}

/// y = op(x0, x1) with broadcasting.
template <class T, class Op>
class BinaryCpu : public BinaryFunction<Op> {
 public:
  using BinaryFunction<Op>::BinaryFunction;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const mg::Layout l =
        same_shapes(in, out)
            ? elementwise_layout({in[0]->data().get(), in[1]->data().get()})
            : mg::Layout{};
    const T* a = in[0]->data()->template get<const T>(l);
    const T* b = in[1]->data()->template get<const T>(l);
    T* y = out[0]->data()->template cast<T>(true, l);
    const Op& op = this->op_;
    for_each_broadcast_row(
        this->plan_, [&](int64_t o, int64_t o0, int64_t s0, int64_t o1,
                         int64_t s1, int64_t len) {
          float ab[kBlock], bb[kBlock], yb[kBlock];
          const float* af = load_strided(a + o0, s0, ab, len);
          const float* bf = load_strided(b + o1, s1, bb, len);
          // float's y is written where it goes (over a or b in place).
          float* yf = store_buffer(y + o, yb);
          binary_forward(op, af, bf, yf, len);
          store(yf, y + o, len);
        });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int k = 0; k < 2; ++k) {
      if (propagate_down[k]) backward_input(k, in, out, accum[k]);
    }
  }

 private:
  // Whether both inputs have the output's size (no broadcasting): then the
  // arrays may be read in any one layout.
  static bool same_shapes(const Variables& in, const Variables& out) {
    return in[0]->size() == out[0]->size() && in[1]->size() == out[0]->size();
  }

  // dx_k = sum over the broadcast axes of op.grad_k(a, b, y, dy), in fp32.
  void backward_input(int k, const Variables& in, const Variables& out,
                      bool accum) {
    NdArray* aa = Op::grad_uses_x ? in[0]->data().get() : nullptr;
    NdArray* ba = Op::grad_uses_x ? in[1]->data().get() : nullptr;
    NdArray* ya = Op::grad_uses_y ? out[0]->data().get() : nullptr;
    const mg::Layout l =
        same_shapes(in, out)
            ? elementwise_layout({out[0]->grad().get(), ya, aa, ba})
            : mg::Layout{};
    const T* a = aa ? aa->template get<const T>(l) : nullptr;
    const T* b = ba ? ba->template get<const T>(l) : nullptr;
    const T* y = ya ? ya->template get<const T>(l) : nullptr;
    const T* dy = out[0]->grad()->template get<const T>(l);
    const Op& op = this->op_;
    const BroadcastPlan& p = this->plan_;
    const bool same_shape = in[k]->size() == out[0]->size();
    T* dx = in[k]->grad()->template cast<T>(!accum, l);
    if (std::is_same_v<Op, ops::Add2> && same_shape && !accum) {
      // dx = dy (a residual's grad): the bits copied, not a round trip of a
      // 16-bit type through fp32 nor a float through a buffer.
      if (dx != dy) {
        for_each_block(out[0]->size(), [&](int64_t begin, int64_t len) {
          std::memcpy(dx + begin, dy + begin, len * sizeof(T));
        });
      }
      return;
    }
    // With broadcasting several outputs add into one input element: sum in
    // an fp32 buffer of the input's size, serially, then store once.
    std::vector<float> sum(same_shape ? 0 : in[k]->size(), 0.0f);
    auto body = [&](int64_t o, int64_t o0, int64_t s0, int64_t o1, int64_t s1,
                    int64_t len) {
      float ab[kBlock], bb[kBlock], yb[kBlock], dyb[kBlock], g[kBlock];
      const float* af = a ? load_strided(a + o0, s0, ab, len) : nullptr;
      const float* bf = b ? load_strided(b + o1, s1, bb, len) : nullptr;
      const float* yf = y ? load(y + o, yb, len) : nullptr;
      const float* dyf = load(dy + o, dyb, len);
      // Without accum, float's dx of an input of y's shape is written where
      // it goes (often over dy).
      float* gf = same_shape && !accum ? store_buffer(dx + o, g) : g;
      if (k == 0) {
        binary_backward<0>(op, af, bf, yf, dyf, gf, len);
      } else {
        binary_backward<1>(op, af, bf, yf, dyf, gf, len);
      }
      if (same_shape) {
        store(gf, dx + o, len, accum);
        return;
      }
      const int64_t off = k == 0 ? o0 : o1, step = k == 0 ? s0 : s1;
      for (int64_t i = 0; i < len; ++i) sum[off + i * step] += g[i];
    };
    for_each_broadcast_row(p, body, /*serial=*/!same_shape);
    if (!same_shape) store(sum.data(), dx, in[k]->size(), accum);
  }
};

/// Registers UnaryCpu<T, Op> for float, half and bfloat16.
template <class Op>
void register_unary(FunctionRegistry& r) {
  register_one<UnaryCpu<float, Op>>(r, decl::unary<Op>, {"cpu", Dtype::f32});
  register_one<UnaryCpu<Half, Op>>(r, decl::unary<Op>, {"cpu", Dtype::f16});
  register_one<UnaryCpu<BFloat16, Op>>(r, decl::unary<Op>,
                                       {"cpu", Dtype::bf16});
}

/// Registers BinaryCpu<T, Op> for float, half and bfloat16.
template <class Op>
void register_binary(FunctionRegistry& r) {
  register_one<BinaryCpu<float, Op>>(r, decl::binary<Op>, {"cpu", Dtype::f32});
  register_one<BinaryCpu<Half, Op>>(r, decl::binary<Op>, {"cpu", Dtype::f16});
  register_one<BinaryCpu<BFloat16, Op>>(r, decl::binary<Op>,
                                        {"cpu", Dtype::bf16});
}

}  // namespace mg::cpu
