// The direct kernel of a network's first convolution (conv_direct.hpp).
//
// Forward: a tile of P output positions of one row by Q blocks of
// channels is held in Q x P vector registers; each term of the window (an
// input channel, a kernel row, a kernel column) loads Q blocks of weights
// and broadcasts P inputs, Q x P multiply-adds. The image is first copied
// into fp32 with its padding as zeros, so the loop has no bounds to check.
// Weight grad: for an input channel, a register tile of Q blocks of dy by
// R kernel rows by J kernel columns of sums over every position of an
// image: each position loads Q blocks of dy (16-bit ones converted a row
// at a time into the L1 cache) and broadcasts R x J inputs.
#include <mixgraph/functions/cpu/conv_direct.hpp>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/channel_blocks.hpp>
#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/graph/profile.hpp>

namespace mg::cpu {

namespace {

std::atomic<bool> direct_allowed{[] {
  const char* v = std::getenv("MIXGRAPH_CONV_DIRECT");
  return !(v && std::string(v) == "0");
}()};

// The geometry in the kernels' terms; ph and pw are the padded image's
// rows and columns (every window inside it).
struct Dims {
  int64_t ic, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw;
  int64_t ih, iw, pad_h, pad_w;
  int64_t k() const { return ic * kh * kw; }
  int64_t plane() const { return ph * pw; }
  int64_t pixels() const { return oh * ow; }
};

Dims dims_of(const ConvGeometry& g) {
  Dims d{};
  d.ic = g.in_channels;
  d.kh = g.kernel[0], d.kw = g.kernel[1];
  d.oh = g.out_spatial[0], d.ow = g.out_spatial[1];
  d.sh = g.stride[0], d.sw = g.stride[1];
  d.dh = g.dilation[0], d.dw = g.dilation[1];
  d.ih = g.in_spatial[0], d.iw = g.in_spatial[1];
  d.pad_h = g.pad[0], d.pad_w = g.pad[1];
  d.ph =
      std::max(d.ih + 2 * d.pad_h, (d.oh - 1) * d.sh + (d.kh - 1) * d.dh + 1);
  d.pw =
      std::max(d.iw + 2 * d.pad_w, (d.ow - 1) * d.sw + (d.kw - 1) * d.dw + 1);
  return d;
}

// Scratch on the library's allocator, written before it is read: a call
// that repeats the last one's sizes takes its blocks again (fresh pages
// are faulted in and zeroed on every call).
using Floats = std::vector<float, CpuScratchAllocator<float>>;

// Image x (ic, ih, iw) of T into xp (ic, ph, pw) in fp32, the padding zero.
template <class T>
void pad_image(const T* x, const Dims& d, float* xp) {
  std::fill_n(xp, d.ic * d.plane(), 0.0f);
  for (int64_t c = 0; c < d.ic; ++c) {
    for (int64_t r = 0; r < d.ih; ++r) {
      const T* src = x + (c * d.ih + r) * d.iw;
      float* dst = xp + c * d.plane() + (r + d.pad_h) * d.pw + d.pad_w;
      if constexpr (std::is_same_v<T, float>) {
        std::memcpy(dst, src, d.iw * sizeof(float));
      } else {
        convert(src, dtype_of<T>, dst, Dtype::f32, static_cast<size_t>(d.iw));
      }
    }
  }
}

// A weight grad's register tile: q blocks of dy by r kernel rows by j
// kernel columns of sums, each block of dy loaded once for its r x j
// multiply-adds (tap_tile() picks one the kernels below have).
struct TapTile {
  int q, r, j;
  bool operator==(const TapTile& o) const {
    return q == o.q && r == o.r && j == o.j;
  }
};

// The positions of a forward tile for rows of ow positions: of kp (the
// most the registers hold), 2 kp / 3, kp / 2, 4 and 1, the one that
// computes the fewest positions (a row's last tile computes some of the
// one before it again), each tile counted 4 positions more for its loads
// and stores. The U-Net's rows of 28 took 2 tiles of 24 (48 positions,
// 2.6x oneDNN's time) where 2 of 16 serve.
int row_tile(int64_t ow, int kp) {
  int best = 1;
  int64_t best_cost = ow * 5;
  for (const int p : {kp, kp * 2 / 3, kp / 2, 4}) {
    if (p < 1 || p > ow) continue;
    const int64_t cost = (ow + p - 1) / p * (p + 4);
    if (cost < best_cost) best = p, best_cost = cost;
  }
  return best;
}

// clang-format off
// The kernels once per vector ISA: V a vector of kB floats, SET1 a
// broadcast, FMA(a, b, c) a * b + c, LOAD and STORE kB elements of T as
// fp32 (convert_avx512.hpp, convert_avx2.hpp: the one place their
// roundings are written). kPixels: a forward tile's positions for two
// blocks (twice that for one), 2 x kPixels registers of sums.
#define MG_CONV_DIRECT(NS, TARGET, LANES, PIXELS, VEC, SET1, FMA, LOAD, STORE) \
  namespace NS {                                                             \
  constexpr int kB = LANES;                                                  \
  constexpr int kPixels = PIXELS;                                            \
  using V = VEC;                                                             \
  TARGET inline V vload(const float* p) {                                    \
    V v;                                                                     \
    std::memcpy(&v, p, sizeof v);                                            \
    return v;                                                                \
  }                                                                          \
  TARGET inline void vstore(float* p, const V& v) {                          \
    std::memcpy(p, &v, sizeof v);                                            \
  }                                                                          \
  /* Positions ow0 .. ow0 + P - 1 of row oh, Q blocks: w the weights of */   \
  /* the Q blocks as (k, Q, kB), bias (Q, kB) or null, out (Q, pixels, */    \
  /* kB) with the blocks qs apart, written in T or added to (accum). */     \
  template <int Q, int P, int S, class T>                                    \
  TARGET void forward_tile(const Dims& d, const float* xp, const float* w,   \
                           const float* bias, int64_t oh, int64_t ow0,       \
                           T* out, int64_t qs, bool accum) {                 \
    const int64_t s = S ? S : d.sw;                                          \
    V acc[Q][P];                                                             \
    for (int q = 0; q < Q; ++q) {                                            \
      const V b = bias ? vload(bias + q * kB) : SET1(0.0f);                  \
      for (int p = 0; p < P; ++p) acc[q][p] = b;                             \
    }                                                                        \
    for (int64_t c = 0; c < d.ic; ++c) {                                     \
      for (int64_t i = 0; i < d.kh; ++i) {                                   \
        const float* r =                                                     \
            xp + c * d.plane() + (oh * d.sh + i * d.dh) * d.pw + ow0 * s;    \
        for (int64_t j = 0; j < d.kw; ++j, r += d.dw, w += Q * kB) {         \
          V wv[Q];                                                           \
          for (int q = 0; q < Q; ++q) wv[q] = vload(w + q * kB);             \
          for (int p = 0; p < P; ++p) {                                      \
            const V xv = SET1(r[p * s]);                                     \
            for (int q = 0; q < Q; ++q) acc[q][p] = FMA(wv[q], xv, acc[q][p]); \
          }                                                                  \
        }                                                                    \
      }                                                                      \
    }                                                                        \
    for (int q = 0; q < Q; ++q) {                                            \
      for (int p = 0; p < P; ++p) {                                          \
        T* at = out + q * qs + (oh * d.ow + ow0 + p) * kB;                   \
        STORE(at, accum ? acc[q][p] + LOAD(at) : acc[q][p]);                 \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* Every row in tiles of P (d.ow >= P); a row's last tile ends at its */   \
  /* end, computing positions of the tile before again (with accum, */       \
  /* only its new positions are added). */                                  \
  template <int Q, int P, int S, class T>                                    \
  TARGET void forward_rows(const Dims& d, const float* xp, const float* w,   \
                           const float* bias, T* out, int64_t qs,            \
                           bool accum) {                                     \
    for (int64_t oh = 0; oh < d.oh; ++oh) {                                  \
      int64_t ow0 = 0;                                                       \
      for (; ow0 + P <= d.ow; ow0 += P) {                                    \
        forward_tile<Q, P, S>(d, xp, w, bias, oh, ow0, out, qs, accum);      \
      }                                                                      \
      if (ow0 < d.ow && !accum) {                                            \
        forward_tile<Q, P, S>(d, xp, w, bias, oh, d.ow - P, out, qs, false); \
      }                                                                      \
      for (; ow0 < d.ow && accum; ++ow0) {                                   \
        forward_tile<Q, 1, S>(d, xp, w, bias, oh, ow0, out, qs, true);       \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* A row's tiles of P positions, P one of a few (row_tile() picks it: */   \
  /* the fewest positions computed, a tile's fixed cost counted). */         \
  template <int Q, int S, class T>                                           \
  TARGET void forward_strided(const Dims& d, const float* xp, const float* w, \
                              const float* bias, T* out, int64_t qs,         \
                              bool accum) {                                  \
    constexpr int kP = kPixels * 2 / Q;                                      \
    const int p = row_tile(d.ow, kP);                                        \
    if (p == kP) {                                                           \
      return forward_rows<Q, kP, S>(d, xp, w, bias, out, qs, accum);         \
    }                                                                        \
    if (p == kP * 2 / 3) {                                                   \
      return forward_rows<Q, kP * 2 / 3, S>(d, xp, w, bias, out, qs, accum); \
    }                                                                        \
    if (p == kP / 2) {                                                       \
      return forward_rows<Q, kP / 2, S>(d, xp, w, bias, out, qs, accum);     \
    }                                                                        \
    if (p == 4) return forward_rows<Q, 4, S>(d, xp, w, bias, out, qs, accum); \
    forward_rows<Q, 1, S>(d, xp, w, bias, out, qs, accum);                   \
  }                                                                          \
  /* Stride 1 unrolled with its offsets known; any other at run time. */     \
  template <class T>                                                         \
  TARGET void forward(int q, const Dims& d, const float* xp, const float* w, \
                      const float* bias, T* out, int64_t qs, bool accum) {   \
    if (q == 2 && d.sw == 1) {                                               \
      return forward_strided<2, 1>(d, xp, w, bias, out, qs, accum);          \
    }                                                                        \
    if (q == 2) return forward_strided<2, 0>(d, xp, w, bias, out, qs, accum); \
    if (d.sw == 1) {                                                         \
      return forward_strided<1, 1>(d, xp, w, bias, out, qs, accum);          \
    }                                                                        \
    forward_strided<1, 0>(d, xp, w, bias, out, qs, accum);                   \
  }                                                                          \
  /* A row of dy's Q blocks, (Q, n, kB) qs apart, into fp32 at out (Q, */  \
  /* n, kB): not inlined, so that the sums around the call stay in */        \
  /* registers (LOAD's 16-bit loads may alias anything: inlined, GCC kept */ \
  /* the sums in memory and stored them at every position, 1.8x the */       \
  /* pass's time). */                                                        \
  template <class T>                                                         \
  __attribute__((noinline)) TARGET void row_to_float(                        \
      const T* g, int64_t qs, int q_blocks, int64_t n, float* out) {         \
    for (int q = 0; q < q_blocks; ++q) {                                     \
      for (int64_t i = 0; i < n; ++i) {                                      \
        vstore(out + (q * n + i) * kB, LOAD(g + q * qs + i * kB));           \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* dw (Q, k, kB) += the image's sums of dy (Q, pixels, kB; the blocks */   \
  /* qs apart) times xp's inputs, for kernel rows i0 .. i0 + R - 1 and */    \
  /* columns j0 .. j0 + J - 1 of input channel c: Q x R x J sums held in */  \
  /* registers over the image, each block of dy loaded once for them. */     \
  /* 16-bit dy is converted a row at a time into `row` (Q x ow x kB). */     \
  template <int Q, int R, int J, class T>                                    \
  TARGET void weights_taps(const Dims& d, const float* xp, const T* g,       \
                           int64_t qs, float* dw, int64_t c, int64_t i0,     \
                           int64_t j0, float* row) {                         \
    V acc[Q][R][J];                                                          \
    for (int q = 0; q < Q; ++q) {                                            \
      for (int i = 0; i < R; ++i) {                                          \
        for (int j = 0; j < J; ++j) acc[q][i][j] = SET1(0.0f);               \
      }                                                                      \
    }                                                                        \
    const int64_t ow_n = d.ow, sw = d.sw, dil = d.dw;                        \
    const auto row_bytes = static_cast<std::uintptr_t>(ow_n * kB * sizeof(T)); \
    for (int64_t oh = 0; oh < d.oh; ++oh) {                                  \
      const float* r[R];                                                     \
      for (int i = 0; i < R; ++i) {                                          \
        r[i] = xp + c * d.plane() + (oh * d.sh + (i0 + i) * d.dh) * d.pw +   \
               j0 * d.dw;                                                    \
      }                                                                      \
      const T* src = g + oh * ow_n * kB;                                     \
      /* dy's rows two ahead, asked for while this one is summed. */         \
      for (int q = 0; q < Q; ++q) {                                          \
        ask_for_lines(src + q * qs, 2 * row_bytes, row_bytes);               \
      }                                                                      \
      const float* gr = nullptr;                                             \
      int64_t gs = 0;                                                        \
      if constexpr (std::is_same_v<T, float>) {                              \
        gr = src, gs = qs;                                                   \
      } else {                                                               \
        row_to_float(src, qs, Q, ow_n, row);                                 \
        gr = row, gs = ow_n * kB;                                            \
      }                                                                      \
      for (int64_t ow = 0; ow < ow_n; ++ow, gr += kB) {                      \
        V gv[Q];                                                             \
        for (int q = 0; q < Q; ++q) gv[q] = vload(gr + q * gs);              \
        const int64_t at = ow * sw;                                          \
        for (int i = 0; i < R; ++i) {                                        \
          for (int j = 0; j < J; ++j) {                                      \
            const V xv = SET1(r[i][at + j * dil]);                           \
            for (int q = 0; q < Q; ++q) {                                    \
              acc[q][i][j] = FMA(gv[q], xv, acc[q][i][j]);                   \
            }                                                                \
          }                                                                  \
        }                                                                    \
      }                                                                      \
    }                                                                        \
    const int64_t k = d.k();                                                 \
    for (int q = 0; q < Q; ++q) {                                            \
      for (int i = 0; i < R; ++i) {                                          \
        for (int j = 0; j < J; ++j) {                                        \
          const int64_t tap = (c * d.kh + i0 + i) * d.kw + j0 + j;           \
          float* p = dw + (q * k + tap) * kB;                                \
          vstore(p, vload(p) + acc[q][i][j]);                                \
        }                                                                    \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* Input channel c's taps: the window's rows R at a time (the rest one */  \
  /* at a time), J columns at once; J = 1 steps through any width. */        \
  template <int Q, int R, int J, class T>                                    \
  TARGET void weights_channel(const Dims& d, const float* xp, const T* g,    \
                              int64_t qs, float* dw, int64_t c, float* row) { \
    for (int64_t j0 = 0; j0 < d.kw; j0 += J) {                               \
      int64_t i0 = 0;                                                        \
      for (; i0 + R <= d.kh; i0 += R) {                                      \
        weights_taps<Q, R, J>(d, xp, g, qs, dw, c, i0, j0, row);             \
      }                                                                      \
      for (; i0 < d.kh; ++i0) {                                              \
        weights_taps<Q, 1, J>(d, xp, g, qs, dw, c, i0, j0, row);             \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  template <class T>                                                         \
  TARGET void weights(const TapTile& t, const Dims& d, const float* xp,      \
                      const T* g, int64_t qs, float* dw, float* row) {       \
    for (int64_t c = 0; c < d.ic; ++c) {                                     \
      if (t == TapTile{2, 3, 3}) {                                           \
        weights_channel<2, 3, 3>(d, xp, g, qs, dw, c, row);                  \
      } else if (t == TapTile{1, 3, 3}) {                                    \
        weights_channel<1, 3, 3>(d, xp, g, qs, dw, c, row);                  \
      } else if (t == TapTile{1, 5, 5}) {                                    \
        weights_channel<1, 5, 5>(d, xp, g, qs, dw, c, row);                  \
      } else if (t == TapTile{1, 2, 5}) {                                    \
        weights_channel<1, 2, 5>(d, xp, g, qs, dw, c, row);                  \
      } else if (t == TapTile{1, 3, 7}) {                                    \
        weights_channel<1, 3, 7>(d, xp, g, qs, dw, c, row);                  \
      } else if (t == TapTile{1, 1, 7}) {                                    \
        weights_channel<1, 1, 7>(d, xp, g, qs, dw, c, row);                  \
      } else {                                                               \
        weights_channel<1, 1, 1>(d, xp, g, qs, dw, c, row);                  \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  /* sums (Q, kB) += dy's blocks summed over the image's positions. */       \
  template <class T>                                                         \
  TARGET void block_sums(int q, int64_t pixels, const T* g, int64_t qs,      \
                         float* sums) {                                      \
    for (int b = 0; b < q; ++b) {                                            \
      V s = vload(sums + b * kB);                                            \
      for (int64_t p = 0; p < pixels; ++p) s += LOAD(g + b * qs + p * kB);   \
      vstore(sums + b * kB, s);                                              \
    }                                                                        \
  }                                                                          \
  /* The entry points as one value, for with_kernels(). */                  \
  struct Kernels {                                                           \
    template <class T>                                                       \
    static void forward(int q, const Dims& d, const float* xp,               \
                        const float* w, const float* bias, T* out,           \
                        int64_t qs, bool accum) {                            \
      NS::forward(q, d, xp, w, bias, out, qs, accum);                        \
    }                                                                        \
    template <class T>                                                       \
    static void weights(const TapTile& t, const Dims& d, const float* xp,    \
                        const T* g, int64_t qs, float* dw, float* row) {     \
      NS::weights(t, d, xp, g, qs, dw, row);                                 \
    }                                                                        \
    template <class T>                                                       \
    static void block_sums(int q, int64_t pixels, const T* g, int64_t qs,    \
                           float* sums) {                                    \
      NS::block_sums(q, pixels, g, qs, sums);                                \
    }                                                                        \
  };                                                                         \
  }
MG_CONV_DIRECT(isa_avx2, __attribute__((target("avx2,fma,f16c"))), 8, 6,
               __m256, _mm256_set1_ps, _mm256_fmadd_ps, avx2::load8,
               avx2::store8)
MG_CONV_DIRECT(isa_avx512, __attribute__((target("avx512f"))), 16, 12,
               __m512, _mm512_set1_ps, _mm512_fmadd_ps, avx512::load16,
               avx512::store16)
#undef MG_CONV_DIRECT
// clang-format on

bool avx512_kernels() { return vector_isa() == VectorIsa::avx512; }

// fn(kernels) with the kernels of the ISA the CPU runs (AVX-512, else AVX2).
template <class Fn>
void with_kernels(Fn&& fn) {
  if (avx512_kernels()) return fn(isa_avx512::Kernels{});
  fn(isa_avx2::Kernels{});
}

// A forward tile's blocks: 2 where they pair, else 1.
int blocks_per_tile(int64_t blocks) { return blocks % 2 == 0 ? 2 : 1; }

// The weight grad's register tile for a kernel of width kw: as many sums
// as the registers hold (25 of AVX-512's 32, 12 of AVX2's 16, the rest
// for dy's blocks and a broadcast input), whole kernel rows. LeNet's 5 x 5
// kernels: all 25 taps of one block, so that each block of dy is read
// once; ResNet's 3 x 3: 2 blocks by 9 taps.
TapTile tap_tile(int64_t kw, int64_t blocks) {
  const bool wide = avx512_kernels();
  if (kw == 3) return TapTile{wide && blocks % 2 == 0 ? 2 : 1, 3, 3};
  if (kw == 5) return wide ? TapTile{1, 5, 5} : TapTile{1, 2, 5};
  if (kw == 7) return wide ? TapTile{1, 3, 7} : TapTile{1, 1, 7};
  return TapTile{1, 1, 1};
}

// W (out, k) as fp32 in tiles of q blocks: (out / (q kB), k, q, kB).
std::vector<float> packed_weights(Operand w, int64_t out, int64_t k, int q,
                                  int64_t block) {
  std::vector<float> converted;
  const auto* f = static_cast<const float*>(w.data);  // an fp32 master
  if (w.dtype != Dtype::f32) {
    converted.resize(static_cast<size_t>(out * k));
    convert(w.data, w.dtype, converted.data(), Dtype::f32, converted.size());
    f = converted.data();
  }
  std::vector<float> p(static_cast<size_t>(out * k));
  const int64_t tile = q * block;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t t = o / tile, within = o % tile;
    for (int64_t i = 0; i < k; ++i)
      p[(t * k + i) * tile + within] = f[o * k + i];
  }
  return p;
}

// Whether a pass of `work` multiply-adds takes the team: 16 x
// parallel_min() of them (16M under the passive policy) take about 0.15 ms
// on one AVX-512 core, what a wake of the sleeping team costs.
bool team_for(double work) {
  return omp_get_max_threads() > 1 && !omp_in_parallel() &&
         work >= 16.0 * static_cast<double>(parallel_min());
}

// The passes behind conv_direct_forward and conv_direct_backward_weights,
// here in the anonymous namespace with the kernels they pass around (as
// public functions, their lambdas holding Dims warn -Wsubobject-linkage).
template <class T>
void forward_pass(const ConvGeometry& g, const T* x, Operand w, const float* b,
                  T* y, bool accum, bool y_blocked) {
  const FunctionProfile::ProductScope timed;
  const Dims d = dims_of(g);
  const int64_t block = conv_direct_block();
  const int64_t blocks = g.out_channels / block, k = d.k();
  const int q = blocks_per_tile(blocks);
  const std::vector<float> wp = packed_weights(w, g.out_channels, k, q, block);
  const int64_t pixels = d.pixels(), tiles = blocks / q;
  const int64_t image = g.out_channels * pixels, tile = q * pixels * block;
  const bool team = team_for(static_cast<double>(g.y_size()) * k);
#pragma omp parallel if (team)
  {
    const TeamShare share =
        team_share(g.batch, omp_get_thread_num(), omp_get_num_threads());
    Floats xp(static_cast<size_t>(d.ic * d.plane()));
    // A row-major y's tile goes through fp32 blocks.
    Floats buf(y_blocked ? 0 : static_cast<size_t>(tile));
    for (int64_t n = share.begin; n < share.end; ++n) {
      pad_image(x + n * d.ic * d.ih * d.iw, d, xp.data());
      for (int64_t t = 0; t < tiles; ++t) {
        const float* wt = wp.data() + t * k * q * block;
        const float* bt = b ? b + t * q * block : nullptr;
        T* yt = y + n * image + t * tile;
        const int64_t qs = pixels * block;
        with_kernels([&](auto kernels) {
          if (y_blocked) {
            kernels.forward(q, d, xp.data(), wt, bt, yt, qs, accum);
          } else {
            kernels.forward(q, d, xp.data(), wt, bt, buf.data(), qs, false);
          }
        });
        if (!y_blocked) {  // the tile's channels are rows of y
          from_channel_blocks(buf.data(), Dtype::f32, yt, dtype_of<T>, block, 1,
                              q * block, pixels, accum, nullptr);
        }
      }
    }
  }
}

template <class T, class W>
void weights_pass(const ConvGeometry& g, const T* x, const T* dy,
                  bool dy_blocked, W* dw, bool accum, float* db) {
  const FunctionProfile::ProductScope timed;
  const Dims d = dims_of(g);
  const int64_t block = conv_direct_block();
  const int64_t blocks = g.out_channels / block, k = d.k();
  const TapTile taps = tap_tile(d.kw, blocks);
  const int q = taps.q;
  const int64_t pixels = d.pixels(), tiles = blocks / q;
  const int64_t image = g.out_channels * pixels, tile = q * pixels * block;
  const bool team = team_for(static_cast<double>(g.y_size()) * k);
  const int threads = team ? omp_get_max_threads() : 1;
  // Each thread's sums: (blocks, k, block) and (blocks, block).
  const int64_t sums = g.out_channels * (k + 1);
  Floats partial(static_cast<size_t>(threads * sums), 0.0f);
#pragma omp parallel num_threads(threads) if (team)
  {
    const int64_t t_id = omp_get_thread_num();
    const TeamShare share = team_share(g.batch, t_id, omp_get_num_threads());
    float* mine = partial.data() + t_id * sums;
    float* mine_db = mine + g.out_channels * k;
    Floats xp(static_cast<size_t>(d.ic * d.plane()));
    // A row-major dy's tile is brought into blocks first. 16-bit blocks
    // the kernel reads once (all of a channel's taps in one register tile)
    // it converts a row at a time into `row`; read in several passes, the
    // tile is converted once into fp32 (`whole`, in the L2 cache): each pass
    // converting its rows again, ResNet's stem (3 channels in) and AVX2's
    // 5x5 tiles (2 kernel rows) took 1.1-1.3x the time.
    const int64_t passes =
        d.ic * (d.kh / taps.r + d.kh % taps.r) * ((d.kw + taps.j - 1) / taps.j);
    const bool once = !std::is_same_v<T, float> && passes > 1;
    std::vector<T, CpuVectorAllocator<T>> buf(
        dy_blocked ? 0 : static_cast<size_t>(tile));
    Floats row(static_cast<size_t>(q * d.ow * block));
    Floats whole(once ? static_cast<size_t>(tile) : 0);
    for (int64_t n = share.begin; n < share.end; ++n) {
      pad_image(x + n * d.ic * d.ih * d.iw, d, xp.data());
      for (int64_t t = 0; t < tiles; ++t) {
        const T* gt = dy + n * image + t * tile;
        if (!dy_blocked) {  // the tile's channels are rows of dy
          to_channel_blocks(gt, dtype_of<T>, buf.data(), dtype_of<T>, block, 1,
                            q * block, pixels);
          gt = buf.data();
        }
        float* wt = mine + t * q * k * block;
        float* st = mine_db + t * q * block;
        const int64_t qs = pixels * block;
        // The kernels on dy as it is, or on its fp32 copy.
        auto sum = [&](auto kernels, const auto* g) {
          kernels.weights(taps, d, xp.data(), g, qs, wt, row.data());
          if (db) kernels.block_sums(q, pixels, g, qs, st);
        };
        if (once) {
          convert(gt, dtype_of<T>, whole.data(), Dtype::f32,
                  static_cast<size_t>(tile));
          with_kernels([&](auto kernels) { sum(kernels, whole.data()); });
        } else {
          with_kernels([&](auto kernels) { sum(kernels, gt); });
        }
      }
    }
  }
  // The threads' sums added in thread order, then brought to W's layout
  // (out, k): output channel o is lane o % block of block o / block.
  for (int i = 1; i < threads; ++i) {
    const float* p = partial.data() + i * sums;
    for (int64_t j = 0; j < sums; ++j) partial[j] += p[j];
  }
  std::vector<float> f(static_cast<size_t>(g.out_channels * k));
  for (int64_t o = 0; o < g.out_channels; ++o) {
    for (int64_t i = 0; i < k; ++i) {
      f[o * k + i] = partial[((o / block) * k + i) * block + o % block];
    }
  }
  store(f.data(), dw, g.out_channels * k, accum);
  if (db) std::copy_n(partial.data() + g.out_channels * k, g.out_channels, db);
}

}  // namespace

int64_t conv_direct_block() {
  const VectorIsa isa = vector_isa();
  if (isa == VectorIsa::avx512) return 16;
  if (isa == VectorIsa::avx2 && cpu_features().f16c &&
      __builtin_cpu_supports("fma")) {
    return 8;
  }
  return 0;
}

template <class T>
bool conv_direct_weights_runs(const ConvGeometry& g) {
  const int64_t block = conv_direct_block();
  if (!conv_direct() || block == 0 || compute_type<T>() != Dtype::f32) {
    return false;
  }
  if (g.kernel.size() != 2 || g.group != 1 || g.in_channels < 1 ||
      g.in_channels > 4 || g.out_channels % block != 0) {
    return false;
  }
  // float's on AVX-512 stays oneDNN's (as fast; its dy is read as it is).
  if (std::is_same_v<T, float> && avx512_kernels()) return false;
  return g.x_size() > 0 && g.y_size() > 0 && g.w_size() > 0;
}

template <class T>
bool conv_direct_forward_runs(const ConvGeometry& g) {
  // On AVX2 (tiles of 12 sums, half AVX-512's) one channel in only: held
  // to AVX2, ResNet's stem (3 in) took 1.3x oneDNN's time.
  return !std::is_same_v<T, float> && conv_direct_weights_runs<T>(g) &&
         (avx512_kernels() || g.in_channels == 1);
}

void set_conv_direct(bool allowed) {
  direct_allowed.store(allowed, std::memory_order_relaxed);
}

bool conv_direct() { return direct_allowed.load(std::memory_order_relaxed); }

template <class T>
void conv_direct_forward(const ConvGeometry& g, const T* x, Operand w,
                         const float* b, T* y, bool accum, bool y_blocked) {
  forward_pass(g, x, w, b, y, accum, y_blocked);
}

template <class T, class W>
void conv_direct_backward_weights(const ConvGeometry& g, const T* x,
                                  const T* dy, bool dy_blocked, W* dw,
                                  bool accum, float* db) {
  weights_pass(g, x, dy, dy_blocked, dw, accum, db);
}

#define MG_INSTANTIATE_CONV_DIRECT(T)                                          \
  template bool conv_direct_weights_runs<T>(const ConvGeometry&);              \
  template bool conv_direct_forward_runs<T>(const ConvGeometry&);              \
  template void conv_direct_forward<T>(const ConvGeometry&, const T*, Operand, \
                                       const float*, T*, bool, bool);
MG_INSTANTIATE_CONV_DIRECT(float)
MG_INSTANTIATE_CONV_DIRECT(Half)
MG_INSTANTIATE_CONV_DIRECT(BFloat16)
#undef MG_INSTANTIATE_CONV_DIRECT

#define MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(T, W)    \
  template void conv_direct_backward_weights<T, W>( \
      const ConvGeometry&, const T*, const T*, bool, W*, bool, float*);
MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(float, float)
MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(Half, Half)
MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(BFloat16, BFloat16)
MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(Half, float)
MG_INSTANTIATE_CONV_DIRECT_WEIGHTS(BFloat16, float)
#undef MG_INSTANTIATE_CONV_DIRECT_WEIGHTS

}  // namespace mg::cpu
