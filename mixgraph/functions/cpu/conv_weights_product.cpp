// A convolution's weight grad as matrix products of ours, for the small
// maps where oneDNN 2.6's weight-grad kernel is slow (on ResNet-18's 512
// channels of 4x4 it took 19.7 ms in float, twice its forward's 9.7; on
// maps of 8x8 and larger it won: RESULTS.md, 2026-12-03). Two ways:
// - one product over an im2col of x:
//     dW (OC, IC KH KW) = dy^T (OC, N P) col (N P, IC KH KW),
//   where col holds, for every output position of every image, the input
//   values its kernel window reads, zeros where it falls in the padding;
// - one product per kernel tap k over the output positions whose window
//   reads x at that tap, so that the padding's zeros are never multiplied:
//     dW[:, :, k] (OC, IC) = dy_k^T (OC, N P_k) x_k (N P_k, IC),
//   where row (n, p) of dy_k is dy[n, :, p] and of x_k the value tap k
//   reads for p, x[n, :, q(p, k)]: whole rows of channels-last copies of dy
//   and x, gathered, and a last pass that interleaves the taps into dW.
// The taps copy dy once for each tap and pay that pass, so they are taken
// where they skip at least a quarter of the window's products: on the
// 512 x 4x4 layers (3x3, pad 1: 100 of 144) they took 0.89-0.91x the
// im2col's time in bfloat16, 0.86-0.88x in half, 0.82-0.86x in float; on
// the 256 -> 512 stride-2 layer (121 of 144) 1.4x (RESULTS.md,
// 2026-12-06, late morning).
#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>

namespace mg::cpu {

bool weights_by_product(const ConvGeometry& g) {
  if (g.group != 1 || g.kernel.size() != 2) return false;
  const int64_t positions = shape_size(g.out_spatial);
  const int64_t window = shape_size(g.kernel);
  return positions <= 16 && window > 1;
}

namespace {

template <class T>
std::unique_ptr<Memory> scratch(int64_t n) {
  return CpuAllocator::instance().allocate(static_cast<size_t>(n) * sizeof(T));
}

// col (N P, IC KH KW): row (n, oh, ow) holds x[n, c, ih, iw] for every
// (c, kh, kw) of the window, 0 where the window is outside x. The window's
// offsets into a channel's map (or -1 outside it) are the same for every
// channel, so they are found once per position (a bounds check per element
// took 3.3 ms of the 512 x 4x4 layer's 16).
template <class T>
void im2col(const ConvGeometry& g, const T* x, T* col) {
  const int64_t N = g.batch, C = g.in_channels;
  const int64_t H = g.in_spatial[0], W = g.in_spatial[1];
  const int64_t OW = g.out_spatial[1], P = g.out_spatial[0] * OW;
  const int64_t KH = g.kernel[0], KW = g.kernel[1], K = KH * KW;
  const int64_t cols = C * K;
  std::vector<int64_t> offsets(P * K);
  for (int64_t p = 0; p < P; ++p) {
    const int64_t oh = p / OW, ow = p % OW;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * g.stride[0] - g.pad[0] + kh * g.dilation[0];
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t iw = ow * g.stride[1] - g.pad[1] + kw * g.dilation[1];
        const bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
        offsets[p * K + kh * KW + kw] = in ? ih * W + iw : -1;
      }
    }
  }
#pragma omp parallel for schedule(static) if (N * P * cols >= parallel_min())
  for (int64_t r = 0; r < N * P; ++r) {
    const int64_t* off = offsets.data() + r % P * K;
    const T* xn = x + r / P * C * H * W;
    T* out = col + r * cols;
    for (int64_t c = 0; c < C; ++c, out += K) {
      const T* xc = xn + c * H * W;
      for (int64_t k = 0; k < K; ++k) out[k] = off[k] >= 0 ? xc[off[k]] : T{};
    }
  }
}

// dyt (OC, N P) from dy (N, OC, P).
template <class T>
void transpose_dy(const ConvGeometry& g, const T* dy, T* dyt) {
  const int64_t N = g.batch, OC = g.out_channels;
  const int64_t P = shape_size(g.out_spatial);
#pragma omp parallel for schedule(static) if (N * OC * P >= parallel_min())
  for (int64_t oc = 0; oc < OC; ++oc) {
    for (int64_t n = 0; n < N; ++n) {
      const T* src = dy + (n * OC + oc) * P;
      std::copy(src, src + P, dyt + (oc * N + n) * P);
    }
  }
}

// A tap's rows: for each output position p whose window reads x inside
// its map at tap k, p and the input position q it reads there.
struct TapRows {
  std::vector<int64_t> p, q;
};

std::vector<TapRows> tap_rows(const ConvGeometry& g) {
  const int64_t H = g.in_spatial[0], W = g.in_spatial[1];
  const int64_t OH = g.out_spatial[0], OW = g.out_spatial[1];
  const int64_t KH = g.kernel[0], KW = g.kernel[1];
  std::vector<TapRows> taps(KH * KW);
  for (int64_t kh = 0; kh < KH; ++kh) {
    for (int64_t kw = 0; kw < KW; ++kw) {
      TapRows& t = taps[kh * KW + kw];
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t ih = oh * g.stride[0] - g.pad[0] + kh * g.dilation[0];
        if (ih < 0 || ih >= H) continue;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t iw = ow * g.stride[1] - g.pad[1] + kw * g.dilation[1];
          if (iw < 0 || iw >= W) continue;
          t.p.push_back(oh * OW + ow);
          t.q.push_back(ih * W + iw);
        }
      }
    }
  }
  return taps;
}

// to (N, S, C) from a (N, C, S): channels last.
template <class T>
void channels_last(const T* a, int64_t N, int64_t C, int64_t S, T* to) {
#pragma omp parallel for schedule(static) if (N * C * S >= parallel_min())
  for (int64_t ns = 0; ns < N * S; ++ns) {
    const T* src = a + ns / S * C * S + ns % S;
    T* dst = to + ns * C;
    for (int64_t c = 0; c < C; ++c) dst[c] = src[c * S];
  }
}

// The rows of all the taps' products, per image.
int64_t tap_rows_per_image(const std::vector<TapRows>& taps) {
  int64_t rows = 0;
  for (const TapRows& t : taps) rows += static_cast<int64_t>(t.p.size());
  return rows;
}

}  // namespace

bool weights_by_taps(const ConvGeometry& g) {
  if (!weights_by_product(g)) return false;
  const int64_t window = shape_size(g.out_spatial) * shape_size(g.kernel);
  return 4 * tap_rows_per_image(tap_rows(g)) <= 3 * window;
}

template <class T, class W>
void conv_backward_weights_im2col(const ConvGeometry& g, const T* x,
                                  const T* dy, W* dw, bool accum, float* db) {
  const int64_t P = shape_size(g.out_spatial), OC = g.out_channels;
  const int64_t cols = g.w_size() / OC;
  const int64_t x_image = g.x_size() / g.batch, dy_image = OC * P;
  // Images per product: the im2col bounded as the oneDNN path bounds its
  // chunks (conv_chunk_bytes(): ResNet-18's batch of 32 takes 9.4 MB of
  // it in float on the 512 layers, in one product).
  const int64_t per_image = P * cols * static_cast<int64_t>(sizeof(T));
  const int64_t nb =
      std::clamp<int64_t>(conv_chunk_bytes() / per_image, 1, g.batch);
  auto col = scratch<T>(nb * P * cols), dyt = scratch<T>(OC * nb * P);
  // fp32 sums: the grad itself where it is fp32, else rounded once after.
  std::unique_ptr<Memory> f;
  float* sum = nullptr;
  if constexpr (std::is_same_v<W, float>) {
    sum = dw;
  } else {
    f = scratch<float>(g.w_size());
    sum = static_cast<float*>(f->ptr());
  }
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
    ConvGeometry c = g;
    c.batch = std::min(nb, g.batch - n0);
    im2col(c, x + n0 * x_image, static_cast<T*>(col->ptr()));
    transpose_dy(c, dy + n0 * dy_image, static_cast<T*>(dyt->ptr()));
    const bool add = n0 > 0 || (accum && std::is_same_v<W, float>);
    gemm<float>(false, false, OC, cols, c.batch * P,
                Operand{dyt->ptr(), dtype_of<T>},
                Operand{col->ptr(), dtype_of<T>}, sum, nullptr, add);
  }
  if constexpr (!std::is_same_v<W, float>) store(sum, dw, g.w_size(), accum);
  if (db) channel_sums(dy, g.batch, OC, P, db);
}

template <class T, class W>
void conv_backward_weights_taps(const ConvGeometry& g, const T* x, const T* dy,
                                W* dw, bool accum, float* db) {
  const int64_t P = shape_size(g.out_spatial), S = shape_size(g.in_spatial);
  const int64_t OC = g.out_channels, IC = g.in_channels;
  const int64_t K = shape_size(g.kernel);
  const std::vector<TapRows> taps = tap_rows(g);
  const int64_t rows = tap_rows_per_image(taps);
  // Images per round of products: the copies bounded as the oneDNN path
  // bounds its chunks (conv_chunk_bytes(): ResNet-18's batch of 32 takes
  // 15.2 MB in float on the 512 layers, 7.6 in half and bfloat16, one
  // round).
  const int64_t per_image =
      (rows * (OC + IC) + P * OC + S * IC) * static_cast<int64_t>(sizeof(T));
  const int64_t nb = std::clamp<int64_t>(
      conv_chunk_bytes() / std::max<int64_t>(per_image, 1), 1, g.batch);
  auto x_last = scratch<T>(nb * S * IC), dy_last = scratch<T>(nb * P * OC);
  auto x_rows = scratch<T>(nb * rows * IC),
       dy_rows = scratch<T>(nb * rows * OC);
  auto sums = scratch<float>(K * OC * IC);  // (K, OC, IC): tap by tap
  float* sum = static_cast<float*>(sums->ptr());
  T* xl = static_cast<T*>(x_last->ptr());
  T* dyl = static_cast<T*>(dy_last->ptr());
  T* xr = static_cast<T*>(x_rows->ptr());
  T* dyr = static_cast<T*>(dy_rows->ptr());
  std::vector<int64_t> first(K + 1, 0);  // each tap's first row per image
  for (int64_t k = 0; k < K; ++k) {
    first[k + 1] = first[k] + static_cast<int64_t>(taps[k].p.size());
  }
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
    const int64_t n = std::min(nb, g.batch - n0);
    channels_last(x + n0 * IC * S, n, IC, S, xl);
    channels_last(dy + n0 * OC * P, n, OC, P, dyl);
    // Tap k's rows, image by image, from row n * first[k]: all the taps'
    // gathered by one team (a wake of it can cost 0.15 ms).
#pragma omp parallel for schedule(static) if (n * rows * (OC + IC) >= \
                                              parallel_min())
    for (int64_t r = 0; r < n * rows; ++r) {
      const int64_t k = std::upper_bound(first.begin(), first.end(), r / n) -
                        first.begin() - 1;
      const int64_t tr = first[k + 1] - first[k], rk = r - n * first[k];
      const int64_t i = rk / tr, j = rk % tr;
      std::copy_n(xl + (i * S + taps[k].q[j]) * IC, IC, xr + r * IC);
      std::copy_n(dyl + (i * P + taps[k].p[j]) * OC, OC, dyr + r * OC);
    }
    for (int64_t k = 0; k < K; ++k) {
      const int64_t tr = first[k + 1] - first[k];
      float* sk = sum + k * OC * IC;
      if (tr == 0) {  // the tap reads only padding
        if (n0 == 0) std::fill(sk, sk + OC * IC, 0.0f);
        continue;
      }
      gemm<float>(true, false, OC, IC, n * tr,
                  Operand{dyr + n * first[k] * OC, dtype_of<T>},
                  Operand{xr + n * first[k] * IC, dtype_of<T>}, sk, nullptr,
                  n0 > 0);
    }
  }
  // dW[o, c, k] (+)= sum[k, o, c], a row of dW at a time.
#pragma omp parallel if (OC * IC * K >= parallel_min())
  {
    std::vector<float> row(IC * K);
#pragma omp for schedule(static)
    for (int64_t o = 0; o < OC; ++o) {
      // Written in order, read from K rows at once (written tap by tap,
      // a store every K floats, it took 1 ms of the 512 layer's 7).
      const float* src = sum + o * IC;
      for (int64_t c = 0; c < IC; ++c) {
        for (int64_t k = 0; k < K; ++k) row[c * K + k] = src[k * OC * IC + c];
      }
      store(row.data(), dw + o * IC * K, IC * K, accum);
    }
  }
  if (db) channel_sums(dy, g.batch, OC, P, db);
}

template <class T, class W>
void conv_backward_weights_product(const ConvGeometry& g, const T* x,
                                   const T* dy, W* dw, bool accum, float* db) {
  if (weights_by_taps(g)) {
    return conv_backward_weights_taps(g, x, dy, dw, accum, db);
  }
  conv_backward_weights_im2col(g, x, dy, dw, accum, db);
}

#define MG_INSTANTIATE_PRODUCT(T, W)                              \
  template void conv_backward_weights_product<T, W>(              \
      const ConvGeometry&, const T*, const T*, W*, bool, float*); \
  template void conv_backward_weights_im2col<T, W>(               \
      const ConvGeometry&, const T*, const T*, W*, bool, float*); \
  template void conv_backward_weights_taps<T, W>(                 \
      const ConvGeometry&, const T*, const T*, W*, bool, float*);
MG_INSTANTIATE_PRODUCT(float, float)
MG_INSTANTIATE_PRODUCT(Half, Half)
MG_INSTANTIATE_PRODUCT(BFloat16, BFloat16)
MG_INSTANTIATE_PRODUCT(Half, float)
MG_INSTANTIATE_PRODUCT(BFloat16, float)
#undef MG_INSTANTIATE_PRODUCT

}  // namespace mg::cpu
