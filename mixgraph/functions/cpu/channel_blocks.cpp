#include <mixgraph/functions/cpu/channel_blocks.hpp>

#include <algorithm>
#include <type_traits>

#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/cpu/convert_avx512.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

namespace {

constexpr int64_t kBlk = 16;  // channels per block

int64_t padded_channels(int64_t channels) {
  return (channels + kBlk - 1) / kBlk * kBlk;
}

// One (image, channel block) pair is a task: a 16 x spatial tile, turned.
// run(row-major offset, blocked offset, first channel, channels in this
// block), the offsets in elements. Threaded only when the
// data is big enough to pay for waking the team.
template <class Tile>
void for_each_tile(int64_t batch, int64_t channels, int64_t spatial,
                   Tile&& run) {
  if (batch <= 0 || channels <= 0 || spatial <= 0) return;
  const int64_t blocks = padded_channels(channels) / kBlk;
  const int64_t tiles = batch * blocks;
#pragma omp parallel for schedule( \
    static) if (tiles * kBlk * spatial >= kParallelMin && tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t n = t / blocks, c0 = t % blocks * kBlk;
    run((n * channels + c0) * spatial, (n * blocks * kBlk + c0) * spatial, c0,
        std::min(kBlk, channels - c0));
  }
}

// Element s of channel c (< nc) of a tile, into and out of the blocks; the
// scalar path and the vector path's tails.
template <class T, class B>
void to_block_element(const T* in, B* out, int64_t nc, int64_t spatial,
                      int64_t s) {
  for (int64_t c = 0; c < kBlk; ++c) {
    out[s * kBlk + c] =
        convert_one<B>(c < nc ? convert_one<float>(in[c * spatial + s]) : 0.0f);
  }
}

template <class B, class T>
void from_block_element(const B* in, T* out, int64_t c, int64_t spatial,
                        int64_t s, bool accum, float bias) {
  float v = convert_one<float>(in[s * kBlk + c]) + bias;
  if (accum) v = convert_one<float>(out[c * spatial + s]) + v;
  out[c * spatial + s] = convert_one<T>(v);
}

template <class T, class B>
void to_blocks_scalar(const T* src, B* dst, int64_t batch, int64_t channels,
                      int64_t spatial) {
  for_each_tile(batch, channels, spatial,
                [&](int64_t in, int64_t out, int64_t, int64_t nc) {
                  for (int64_t s = 0; s < spatial; ++s) {
                    to_block_element(src + in, dst + out, nc, spatial, s);
                  }
                });
}

template <class B, class T>
void from_blocks_scalar(const B* src, T* dst, int64_t batch, int64_t channels,
                        int64_t spatial, bool accum, const float* bias) {
  for_each_tile(batch, channels, spatial,
                [&](int64_t out, int64_t in, int64_t c0, int64_t nc) {
                  for (int64_t c = 0; c < nc; ++c) {
                    const float b = bias ? bias[c0 + c] : 0.0f;
                    for (int64_t s = 0; s < spatial; ++s) {
                      from_block_element(src + in, dst + out, c, spatial, s,
                                         accum, b);
                    }
                  }
                });
}

// ---- AVX-512 ----

using avx512::load16;
using avx512::store16;

// r[i][j] <- r[j][i] for a 16 x 16 tile of floats.
MG_TARGET_AVX512 inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

template <class T, class B>
MG_TARGET_AVX512 void to_blocks_tile(const T* in, B* out, int64_t nc,
                                     int64_t spatial) {
  int64_t s = 0;
  for (; s + kBlk <= spatial; s += kBlk) {
    __m512 r[16];
    for (int c = 0; c < kBlk; ++c) {
      r[c] = c < nc ? load16(in + c * spatial + s) : _mm512_setzero_ps();
    }
    transpose16(r);
    for (int j = 0; j < kBlk; ++j) store16(out + (s + j) * kBlk, r[j]);
  }
  for (; s < spatial; ++s) to_block_element(in, out, nc, spatial, s);
}

template <class B, class T>
MG_TARGET_AVX512 void from_blocks_tile(const B* in, T* out, int64_t nc,
                                       int64_t spatial, bool accum,
                                       const float* bias) {
  int64_t s = 0;
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
      from_block_element(in, out, c, spatial, i, accum, bias ? bias[c] : 0.0f);
    }
  }
}

template <class T, class B>
void to_blocks_avx512(const T* src, B* dst, int64_t batch, int64_t channels,
                      int64_t spatial) {
  for_each_tile(batch, channels, spatial,
                [&](int64_t in, int64_t out, int64_t, int64_t nc) {
                  to_blocks_tile(src + in, dst + out, nc, spatial);
                });
}

template <class B, class T>
void from_blocks_avx512(const B* src, T* dst, int64_t batch, int64_t channels,
                        int64_t spatial, bool accum, const float* bias) {
  for_each_tile(batch, channels, spatial,
                [&](int64_t out, int64_t in, int64_t c0, int64_t nc) {
                  from_blocks_tile(src + in, dst + out, nc, spatial, accum,
                                   bias ? bias + c0 : nullptr);
                });
}

// The entry points' one dispatch: the element types from their Dtypes (the
// project's one Dtype -> type switch), then the vector or the scalar pass.
void to_blocks(bool vector, const void* src, Dtype type, void* dst,
               Dtype block_type, int64_t batch, int64_t channels,
               int64_t spatial) {
  dispatch_float_types(type, "to_channel_blocks", [&](auto t) {
    dispatch_float_types(block_type, "to_channel_blocks", [&](auto b) {
      using T = typename decltype(t)::type;
      using B = typename decltype(b)::type;
      const T* s = static_cast<const T*>(src);
      B* d = static_cast<B*>(dst);
      vector ? to_blocks_avx512(s, d, batch, channels, spatial)
             : to_blocks_scalar(s, d, batch, channels, spatial);
    });
  });
}

void from_blocks(bool vector, const void* src, Dtype block_type, void* dst,
                 Dtype type, int64_t batch, int64_t channels, int64_t spatial,
                 bool accum, const float* bias) {
  dispatch_float_types(block_type, "from_channel_blocks", [&](auto b) {
    dispatch_float_types(type, "from_channel_blocks", [&](auto t) {
      using B = typename decltype(b)::type;
      using T = typename decltype(t)::type;
      const B* s = static_cast<const B*>(src);
      T* d = static_cast<T*>(dst);
      vector ? from_blocks_avx512(s, d, batch, channels, spatial, accum, bias)
             : from_blocks_scalar(s, d, batch, channels, spatial, accum, bias);
    });
  });
}

}  // namespace

bool channel_blocks_vectorized() { return cpu_features().avx512f; }

void to_channel_blocks(const void* src, Dtype type, void* dst, Dtype block_type,
                       int64_t batch, int64_t channels, int64_t spatial) {
  to_blocks(channel_blocks_vectorized(), src, type, dst, block_type, batch,
            channels, spatial);
}

void from_channel_blocks(const void* src, Dtype block_type, void* dst,
                         Dtype type, int64_t batch, int64_t channels,
                         int64_t spatial, bool accum, const float* bias) {
  from_blocks(channel_blocks_vectorized(), src, block_type, dst, type, batch,
              channels, spatial, accum, bias);
}

void to_channel_blocks_scalar(const void* src, Dtype type, void* dst,
                              Dtype block_type, int64_t batch, int64_t channels,
                              int64_t spatial) {
  to_blocks(false, src, type, dst, block_type, batch, channels, spatial);
}

void from_channel_blocks_scalar(const void* src, Dtype block_type, void* dst,
                                Dtype type, int64_t batch, int64_t channels,
                                int64_t spatial, bool accum,
                                const float* bias) {
  from_blocks(false, src, block_type, dst, type, batch, channels, spatial,
              accum, bias);
}

}  // namespace mg::cpu
