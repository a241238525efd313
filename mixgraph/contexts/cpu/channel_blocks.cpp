#include <mixgraph/contexts/cpu/channel_blocks.hpp>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/cpu/convert_avx2.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/parallel_min.hpp>
#include <mixgraph/contexts/cpu/transpose_avx512.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/contexts/synced_array.hpp>

namespace mg::cpu {

namespace {

// Each function below takes the channels per block, kBlk (8 or 16), as a
// template argument.

// One (image, channel block) pair is a task: a kBlk x spatial tile, turned.
// run(row-major offset, blocked offset, first channel, channels in this
// block), the offsets in elements. Threaded only when the
// data is big enough to pay for waking the team.
template <int64_t kBlk, class Tile>
void for_each_tile(int64_t batch, int64_t channels, int64_t spatial,
                   Tile&& run) {
  if (batch <= 0 || channels <= 0 || spatial <= 0) return;
  const int64_t blocks = (channels + kBlk - 1) / kBlk;
  const int64_t tiles = batch * blocks;
#pragma omp parallel for schedule( \
    static) if (tiles * kBlk * spatial >= parallel_min() && tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t n = t / blocks, c0 = t % blocks * kBlk;
    run((n * channels + c0) * spatial, (n * blocks * kBlk + c0) * spatial, c0,
        std::min(kBlk, channels - c0));
  }
}

// Element s of channel c (< nc) of a tile, into and out of the blocks; the
// scalar path and the vector path's tails.
template <int64_t kBlk, class T, class B>
void to_block_element(const T* in, B* out, int64_t nc, int64_t spatial,
                      int64_t s) {
  for (int64_t c = 0; c < kBlk; ++c) {
    out[s * kBlk + c] =
        convert_one<B>(c < nc ? convert_one<float>(in[c * spatial + s]) : 0.0f);
  }
}

template <int64_t kBlk, class B, class T>
void from_block_element(const B* in, T* out, int64_t c, int64_t spatial,
                        int64_t s, bool accum, float bias) {
  float v = convert_one<float>(in[s * kBlk + c]) + bias;
  if (accum) v = convert_one<float>(out[c * spatial + s]) + v;
  out[c * spatial + s] = convert_one<T>(v);
}

template <int64_t kBlk, class T, class B>
void to_blocks_scalar(const T* src, B* dst, int64_t batch, int64_t channels,
                      int64_t spatial) {
  for_each_tile<kBlk>(batch, channels, spatial,
                      [&](int64_t in, int64_t out, int64_t, int64_t nc) {
                        for (int64_t s = 0; s < spatial; ++s) {
                          to_block_element<kBlk>(src + in, dst + out, nc,
                                                 spatial, s);
                        }
                      });
}

template <int64_t kBlk, class B, class T>
void from_blocks_scalar(const B* src, T* dst, int64_t batch, int64_t channels,
                        int64_t spatial, bool accum, const float* bias) {
  for_each_tile<kBlk>(batch, channels, spatial,
                      [&](int64_t out, int64_t in, int64_t c0, int64_t nc) {
                        for (int64_t c = 0; c < nc; ++c) {
                          const float b = bias ? bias[c0 + c] : 0.0f;
                          for (int64_t s = 0; s < spatial; ++s) {
                            from_block_element<kBlk>(src + in, dst + out, c,
                                                     spatial, s, accum, b);
                          }
                        }
                      });
}

// ---- AVX-512 ----

using avx512::load16;
using avx512::store16;
using avx512::transpose16;

constexpr int64_t k16 = 16;

// r[i][j] <- r[j][i] for a 16 x 16 tile of 16-bit values, a row a ymm:
// pairs of 16-, 32- and 64-bit values unpacked within each 128-bit lane
// (which leaves four 8 x 8 quarters turned), then the two off-diagonal
// quarters swapped across the lanes.
MG_TARGET_AVX512 inline void transpose16_bits(__m256i r[16]) {
  __m256i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm256_unpacklo_epi16(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi16(r[i], r[i + 1]);
  }
  // u[4q + m]: rows 4q .. 4q + 3 of columns 2m and 2m + 1 (lane 0), 2m + 8
  // and 2m + 9 (lane 1), four rows a 64-bit value.
  for (int q = 0; q < 16; q += 4) {
    u[q] = _mm256_unpacklo_epi32(t[q], t[q + 2]);
    u[q + 1] = _mm256_unpackhi_epi32(t[q], t[q + 2]);
    u[q + 2] = _mm256_unpacklo_epi32(t[q + 1], t[q + 3]);
    u[q + 3] = _mm256_unpackhi_epi32(t[q + 1], t[q + 3]);
  }
  // t[8g + 2m]: rows 8g .. 8g + 7 of column 2m (lane 0) and 2m + 8 (lane
  // 1); t[8g + 2m + 1] of columns 2m + 1 and 2m + 9.
  for (int g = 0; g < 16; g += 8) {
    for (int m = 0; m < 4; ++m) {
      t[g + 2 * m] = _mm256_unpacklo_epi64(u[g + m], u[g + 4 + m]);
      t[g + 2 * m + 1] = _mm256_unpackhi_epi64(u[g + m], u[g + 4 + m]);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm256_permute2x128_si256(t[j], t[j + 8], 0x20);
    r[j + 8] = _mm256_permute2x128_si256(t[j], t[j + 8], 0x31);
  }
}

// A 16 x 16 tile of bf16, rows in_ld apart, turned into rows out_ld apart,
// moved as bits: a bf16 value read into fp32 and rounded back is itself,
// so this is what the fp32 transpose makes (but for a signaling NaN, which
// no arithmetic makes: kept as it is, where that path quiets it), with
// none of its 32 conversions a tile. That path ran at a quarter of a
// copy's speed: on one thread of an AMD EPYC Zen 4, 0.39 ms into 16-channel
// blocks for a 4.2 MB activation against 0.09 for memcpy; this one 0.15.
MG_TARGET_AVX512 inline void bf16_tile16(const BFloat16* in, int64_t in_ld,
                                         BFloat16* out, int64_t out_ld) {
  __m256i r[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * in_ld));
  }
  transpose16_bits(r);
  for (int i = 0; i < 16; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * out_ld), r[i]);
  }
}

// Both types bf16: the tiles that bf16_tile16 moves.
template <class T, class B>
constexpr bool kBf16Bits = (std::is_same_v<T, BFloat16> &&
                            std::is_same_v<B, BFloat16>);

template <class T, class B>
MG_TARGET_AVX512 void to_blocks_tile16(const T* in, B* out, int64_t nc,
                                       int64_t spatial) {
  constexpr int64_t kBlk = k16;
  int64_t s = 0;
  if constexpr (kBf16Bits<T, B>) {
    for (; nc == kBlk && s + kBlk <= spatial; s += kBlk) {
      bf16_tile16(in + s, spatial, out + s * kBlk, kBlk);
    }
  }
  for (; s + kBlk <= spatial; s += kBlk) {
    __m512 r[16];
    for (int c = 0; c < kBlk; ++c) {
      r[c] = c < nc ? load16(in + c * spatial + s) : _mm512_setzero_ps();
    }
    transpose16(r);
    for (int j = 0; j < kBlk; ++j) store16(out + (s + j) * kBlk, r[j]);
  }
  for (; s < spatial; ++s) to_block_element<kBlk>(in, out, nc, spatial, s);
}

template <class B, class T>
MG_TARGET_AVX512 void from_blocks_tile16(const B* in, T* out, int64_t nc,
                                         int64_t spatial, bool accum,
                                         const float* bias) {
  constexpr int64_t kBlk = k16;
  int64_t s = 0;
  if constexpr (kBf16Bits<T, B>) {
    for (; nc == kBlk && !accum && !bias && s + kBlk <= spatial; s += kBlk) {
      bf16_tile16(in + s * kBlk, kBlk, out + s, spatial);
    }
  }
  for (; s + kBlk <= spatial; s += kBlk) {
    __m512 r[16];
    for (int j = 0; j < kBlk; ++j) r[j] = load16(in + (s + j) * kBlk);
    transpose16(r);
    for (int c = 0; c < nc; ++c) {
      __m512 v = r[c];
      if (bias) v = _mm512_add_ps(v, _mm512_set1_ps(bias[c]));
      T* o = out + c * spatial + s;
      if (accum) v = _mm512_add_ps(load16(o), v);
      store16(o, v);
    }
  }
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t i = s; i < spatial; ++i) {
      from_block_element<kBlk>(in, out, c, spatial, i, accum,
                               bias ? bias[c] : 0.0f);
    }
  }
}

// ---- AVX2 (8-channel blocks, oneDNN's nChw8c) ----

using avx2::load8;
using avx2::store8;

// r[i][j] <- r[j][i] for an 8 x 8 tile of floats.
MG_TARGET_AVX2_F16C inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x20);
    r[j + 4] = _mm256_permute2f128_ps(u[j], u[j + 4], 0x31);
  }
}

template <class T, class B>
MG_TARGET_AVX2_F16C void to_blocks_tile8(const T* in, B* out, int64_t nc,
                                         int64_t spatial) {
  constexpr int64_t kBlk = 8;
  int64_t s = 0;
  for (; s + kBlk <= spatial; s += kBlk) {
    __m256 r[8];
    for (int c = 0; c < kBlk; ++c) {
      r[c] = c < nc ? load8(in + c * spatial + s) : _mm256_setzero_ps();
    }
    transpose8(r);
    for (int j = 0; j < kBlk; ++j) store8(out + (s + j) * kBlk, r[j]);
  }
  for (; s < spatial; ++s) to_block_element<kBlk>(in, out, nc, spatial, s);
}

template <class B, class T>
MG_TARGET_AVX2_F16C void from_blocks_tile8(const B* in, T* out, int64_t nc,
                                           int64_t spatial, bool accum,
                                           const float* bias) {
  constexpr int64_t kBlk = 8;
  int64_t s = 0;
  for (; s + kBlk <= spatial; s += kBlk) {
    __m256 r[8];
    for (int j = 0; j < kBlk; ++j) r[j] = load8(in + (s + j) * kBlk);
    transpose8(r);
    for (int c = 0; c < nc; ++c) {
      __m256 v = r[c];
      if (bias) v = _mm256_add_ps(v, _mm256_set1_ps(bias[c]));
      T* o = out + c * spatial + s;
      if (accum) v = _mm256_add_ps(load8(o), v);
      store8(o, v);
    }
  }
  for (int64_t c = 0; c < nc; ++c) {
    for (int64_t i = s; i < spatial; ++i) {
      from_block_element<kBlk>(in, out, c, spatial, i, accum,
                               bias ? bias[c] : 0.0f);
    }
  }
}

// A vector pass: each tile through the ISA's tile function for its block.
template <int64_t kBlk, class T, class B>
void to_blocks_vector(const T* src, B* dst, int64_t batch, int64_t channels,
                      int64_t spatial) {
  for_each_tile<kBlk>(batch, channels, spatial,
                      [&](int64_t in, int64_t out, int64_t, int64_t nc) {
                        if constexpr (kBlk == 16) {
                          to_blocks_tile16(src + in, dst + out, nc, spatial);
                        } else {
                          to_blocks_tile8(src + in, dst + out, nc, spatial);
                        }
                      });
}

template <int64_t kBlk, class B, class T>
void from_blocks_vector(const B* src, T* dst, int64_t batch, int64_t channels,
                        int64_t spatial, bool accum, const float* bias) {
  for_each_tile<kBlk>(
      batch, channels, spatial,
      [&](int64_t out, int64_t in, int64_t c0, int64_t nc) {
        const float* b = bias ? bias + c0 : nullptr;
        if constexpr (kBlk == 16) {
          from_blocks_tile16(src + in, dst + out, nc, spatial, accum, b);
        } else {
          from_blocks_tile8(src + in, dst + out, nc, spatial, accum, b);
        }
      });
}

// ---- channels last (nwc, nhwc, ndhwc: a block of all the channels) ----

// A task is an image's 16 spatial positions (all its channels): the
// channels-last rows it writes, or reads, are then whole, 16 C values in a
// row, and each row-major read or write is 16 values.
template <class Tile>
void for_each_position_block(int64_t batch, int64_t channels, int64_t spatial,
                             Tile&& run) {
  if (batch <= 0 || channels <= 0 || spatial <= 0) return;
  const int64_t blocks = (spatial + 15) / 16, tasks = batch * blocks;
#pragma omp parallel for schedule( \
    static) if (tasks * 16 * channels >= parallel_min() && tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t n = t / blocks, s0 = t % blocks * 16;
    run(n * channels * spatial, s0, std::min<int64_t>(16, spatial - s0));
  }
}

template <class T, class B>
void to_last_scalar(const T* src, B* dst, int64_t batch, int64_t channels,
                    int64_t spatial) {
  for_each_position_block(
      batch, channels, spatial, [&](int64_t image, int64_t s0, int64_t ns) {
        for (int64_t s = s0; s < s0 + ns; ++s) {
          for (int64_t c = 0; c < channels; ++c) {
            dst[image + s * channels + c] = convert_one<B>(
                convert_one<float>(src[image + c * spatial + s]));
          }
        }
      });
}

template <class B, class T>
void from_last_scalar(const B* src, T* dst, int64_t batch, int64_t channels,
                      int64_t spatial, bool accum, const float* bias) {
  for_each_position_block(
      batch, channels, spatial, [&](int64_t image, int64_t s0, int64_t ns) {
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t s = s0; s < s0 + ns; ++s) {
            float v = convert_one<float>(src[image + s * channels + c]) +
                      (bias ? bias[c] : 0.0f);
            T& o = dst[image + c * spatial + s];
            if (accum) v = convert_one<float>(o) + v;
            o = convert_one<T>(v);
          }
        }
      });
}

// n (< 16) values at p as a vector, the rest zero; v's first n stored at p.
template <class T>
MG_TARGET_AVX512 __m512 load_part16(const T* p, int64_t n) {
  T buf[16] = {};
  std::copy(p, p + n, buf);
  return load16(buf);
}

template <class T>
MG_TARGET_AVX512 void store_part16(T* p, __m512 v, int64_t n) {
  T buf[16];
  store16(buf, v);
  std::copy(buf, buf + n, p);
}

// One task's 16 (ns) positions of an image: in at the image's first
// position s0, out at its row s0.
template <class T, class B>
MG_TARGET_AVX512 void to_last_tile16(const T* in, B* out, int64_t channels,
                                     int64_t spatial, int64_t ns) {
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    const int64_t nc = std::min<int64_t>(16, channels - c0);
    if constexpr (kBf16Bits<T, B>) {
      if (nc == 16 && ns == 16) {
        bf16_tile16(in + c0 * spatial, spatial, out + c0, channels);
        continue;
      }
    }
    __m512 r[16];
    for (int c = 0; c < 16; ++c) {
      const T* row = in + (c0 + c) * spatial;
      r[c] = c >= nc    ? _mm512_setzero_ps()
             : ns == 16 ? load16(row)
                        : load_part16(row, ns);
    }
    transpose16(r);
    for (int j = 0; j < ns; ++j) {
      B* o = out + j * channels + c0;
      nc == 16 ? store16(o, r[j]) : store_part16(o, r[j], nc);
    }
  }
}

template <class B, class T>
MG_TARGET_AVX512 void from_last_tile16(const B* in, T* out, int64_t channels,
                                       int64_t spatial, int64_t ns, bool accum,
                                       const float* bias) {
  for (int64_t c0 = 0; c0 < channels; c0 += 16) {
    const int64_t nc = std::min<int64_t>(16, channels - c0);
    if constexpr (kBf16Bits<T, B>) {
      if (nc == 16 && ns == 16 && !accum && !bias) {
        bf16_tile16(in + c0, channels, out + c0 * spatial, spatial);
        continue;
      }
    }
    __m512 r[16];
    for (int j = 0; j < 16; ++j) {
      const B* row = in + j * channels + c0;
      r[j] = j >= ns    ? _mm512_setzero_ps()
             : nc == 16 ? load16(row)
                        : load_part16(row, nc);
    }
    transpose16(r);
    for (int c = 0; c < nc; ++c) {
      __m512 v = r[c];
      if (bias) v = _mm512_add_ps(v, _mm512_set1_ps(bias[c0 + c]));
      T* o = out + (c0 + c) * spatial;
      if (ns == 16) {
        if (accum) v = _mm512_add_ps(load16(o), v);
        store16(o, v);
      } else {
        if (accum) v = _mm512_add_ps(load_part16(o, ns), v);
        store_part16(o, v, ns);
      }
    }
  }
}

template <class T, class B>
void to_last_vector(const T* src, B* dst, int64_t batch, int64_t channels,
                    int64_t spatial) {
  for_each_position_block(
      batch, channels, spatial, [&](int64_t image, int64_t s0, int64_t ns) {
        to_last_tile16(src + image + s0, dst + image + s0 * channels, channels,
                       spatial, ns);
      });
}

template <class B, class T>
void from_last_vector(const B* src, T* dst, int64_t batch, int64_t channels,
                      int64_t spatial, bool accum, const float* bias) {
  for_each_position_block(
      batch, channels, spatial, [&](int64_t image, int64_t s0, int64_t ns) {
        from_last_tile16(src + image + s0 * channels, dst + image + s0,
                         channels, spatial, ns, accum, bias);
      });
}

// Calls fn with the block size as a compile-time constant: 16, 8, or
// kAllChannels where the block is all the channels (channels last; 8 or 16
// channels in one block are the blocked layouts themselves).
constexpr int64_t kAllChannels = 0;

template <class Fn>
void with_block(int64_t block, int64_t channels, const char* who, Fn&& fn) {
  if (block == 16) return fn(std::integral_constant<int64_t, 16>{});
  if (block == 8) return fn(std::integral_constant<int64_t, 8>{});
  if (block == channels) {
    return fn(std::integral_constant<int64_t, kAllChannels>{});
  }
  throw std::invalid_argument(
      msg("[", who, "] blocks of ", block, " channels: 8, 16 or all of them"));
}

// The entry points' one dispatch: the element types from their Dtypes (the
// project's one Dtype -> type switch), then the vector or the scalar pass.
void to_blocks(bool vector, const void* src, Dtype type, void* dst,
               Dtype block_type, int64_t block, int64_t batch, int64_t channels,
               int64_t spatial) {
  const char* who = "to_channel_blocks";
  with_block(block, channels, who, [&](auto blk) {
    constexpr int64_t kBlk = decltype(blk)::value;
    dispatch_float_types(type, who, [&](auto t) {
      dispatch_float_types(block_type, who, [&](auto b) {
        using T = typename decltype(t)::type;
        using B = typename decltype(b)::type;
        const T* s = static_cast<const T*>(src);
        B* d = static_cast<B*>(dst);
        if constexpr (kBlk == kAllChannels) {
          vector ? to_last_vector(s, d, batch, channels, spatial)
                 : to_last_scalar(s, d, batch, channels, spatial);
        } else {
          vector ? to_blocks_vector<kBlk>(s, d, batch, channels, spatial)
                 : to_blocks_scalar<kBlk>(s, d, batch, channels, spatial);
        }
      });
    });
  });
}

void from_blocks(bool vector, const void* src, Dtype block_type, void* dst,
                 Dtype type, int64_t block, int64_t batch, int64_t channels,
                 int64_t spatial, bool accum, const float* bias) {
  const char* who = "from_channel_blocks";
  with_block(block, channels, who, [&](auto blk) {
    constexpr int64_t kBlk = decltype(blk)::value;
    dispatch_float_types(block_type, who, [&](auto b) {
      dispatch_float_types(type, who, [&](auto t) {
        using B = typename decltype(b)::type;
        using T = typename decltype(t)::type;
        const B* s = static_cast<const B*>(src);
        T* d = static_cast<T*>(dst);
        if constexpr (kBlk == kAllChannels) {
          vector
              ? from_last_vector(s, d, batch, channels, spatial, accum, bias)
              : from_last_scalar(s, d, batch, channels, spatial, accum, bias);
        } else {
          vector ? from_blocks_vector<kBlk>(s, d, batch, channels, spatial,
                                            accum, bias)
                 : from_blocks_scalar<kBlk>(s, d, batch, channels, spatial,
                                            accum, bias);
        }
      });
    });
  });
}

}  // namespace

bool channel_blocks_vectorized(int64_t block) {
  const CpuFeatures& cpu = cpu_features();
  return block == 8 ? cpu.avx2 && cpu.f16c : cpu.avx512f;
}

int64_t channel_block_vectorized() {
  return channel_blocks_vectorized(16)  ? 16
         : channel_blocks_vectorized(8) ? 8
                                        : 0;
}

void to_channel_blocks(const void* src, Dtype type, void* dst, Dtype block_type,
                       int64_t block, int64_t batch, int64_t channels,
                       int64_t spatial) {
  to_blocks(channel_blocks_vectorized(block), src, type, dst, block_type, block,
            batch, channels, spatial);
}

void from_channel_blocks(const void* src, Dtype block_type, void* dst,
                         Dtype type, int64_t block, int64_t batch,
                         int64_t channels, int64_t spatial, bool accum,
                         const float* bias) {
  from_blocks(channel_blocks_vectorized(block), src, block_type, dst, type,
              block, batch, channels, spatial, accum, bias);
}

void to_channel_blocks_scalar(const void* src, Dtype type, void* dst,
                              Dtype block_type, int64_t block, int64_t batch,
                              int64_t channels, int64_t spatial) {
  to_blocks(false, src, type, dst, block_type, block, batch, channels, spatial);
}

void from_channel_blocks_scalar(const void* src, Dtype block_type, void* dst,
                                Dtype type, int64_t block, int64_t batch,
                                int64_t channels, int64_t spatial, bool accum,
                                const float* bias) {
  from_blocks(false, src, block_type, dst, type, block, batch, channels,
              spatial, accum, bias);
}

}  // namespace mg::cpu

namespace mg {

// SyncedArray's conversions between a plain copy and a channel-blocked one
// (synced_array.hpp), type and layout in one pass.
void convert_layout(const void* src, Dtype src_type, const Layout& from,
                    void* dst, Dtype dst_type, const Layout& to, size_t n) {
  if (from == to) return convert(src, src_type, dst, dst_type, n);
  auto floating = [](Dtype t) {
    return t == Dtype::f32 || t == Dtype::f16 || t == Dtype::bf16;
  };
  if (!floating(src_type) || !floating(dst_type) ||
      (!from.plain() && !to.plain())) {
    // Another type (a double, an integer read of the data): the layout in
    // the blocked copy's type, then the type; between two blocked layouts
    // through a plain copy.
    const Dtype mid = from.plain() ? dst_type : src_type;
    const Dtype t = floating(mid) ? mid : Dtype::f32;
    std::vector<char> plain(n * dtype_size(t));
    convert_layout(src, src_type, from, plain.data(), t, Layout{}, n);
    convert_layout(plain.data(), t, Layout{}, dst, dst_type, to, n);
    return;
  }
  if (from.plain()) {
    return cpu::to_channel_blocks(src, src_type, dst, dst_type, to.block,
                                  to.batch, to.channels, to.spatial);
  }
  cpu::from_channel_blocks(src, src_type, dst, dst_type, from.block, from.batch,
                           from.channels, from.spatial, false, nullptr);
}

}  // namespace mg
