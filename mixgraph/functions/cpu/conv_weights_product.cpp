// A convolution's weight grad as one matrix product, for the small maps
// where oneDNN 2.6's weight-grad kernel is slow: dW (OC, IC KH KW) =
// dy^T (OC, N P) col (N P, IC KH KW), where col holds, for every output
// position of every image, the input values its kernel window reads (an
// im2col), and P = OH OW. On ResNet-18's 512 channels of 4x4 oneDNN took
// 19.7 ms (twice its forward's 9.7) where this takes 0.63-0.69x that in
// float, 0.66-0.75x in half and 0.79-0.86x in bfloat16, and on the 256 ->
// 512 stride-2 layer 0.44-0.80x (2 threads of an AMD EPYC Zen 4); on maps
// of 8x8 and larger it lost, up to 2.5x (RESULTS.md, 2026-12-03).
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

template <class T>
std::unique_ptr<Memory> scratch(int64_t n) {
  return CpuAllocator::instance().allocate(static_cast<size_t>(n) * sizeof(T));
}

}  // namespace

template <class T, class W>
void conv_backward_weights_product(const ConvGeometry& g, const T* x,
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

#define MG_INSTANTIATE_PRODUCT(T, W)                 \
  template void conv_backward_weights_product<T, W>( \
      const ConvGeometry&, const T*, const T*, W*, bool, float*);
MG_INSTANTIATE_PRODUCT(float, float)
MG_INSTANTIATE_PRODUCT(Half, Half)
MG_INSTANTIATE_PRODUCT(BFloat16, BFloat16)
MG_INSTANTIATE_PRODUCT(Half, float)
MG_INSTANTIATE_PRODUCT(BFloat16, float)
#undef MG_INSTANTIATE_PRODUCT

}  // namespace mg::cpu
