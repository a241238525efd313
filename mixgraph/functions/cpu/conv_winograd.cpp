// Winograd F(2x2, 3x3) convolutions (conv_winograd.hpp): the transforms in
// AVX2 over blocks of 8 channels, the products on PackedB.
#include <mixgraph/functions/cpu/conv_winograd.hpp>

#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

// As convert_avx2.hpp: GCC 12's AVX-512 headers trip -W(maybe-)uninitialized
// on their own helpers (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <mixgraph/contexts/cpu/channel_blocks.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
#include <mixgraph/graph/profile.hpp>

#define MG_TARGET_WINOGRAD __attribute__((target("avx2,fma")))

namespace mg::cpu {
// Named, not anonymous: the unity build sees other files' kLanes.
namespace f2x2 {

// The transforms run on blocks of 8 channels, one ymm register, read from
// and written to the channel-blocked layout (nChw8c) of channel_blocks.hpp.
constexpr int64_t kLanes = 8;
// A tile: 4x4 inputs, 4x4 transformed values (one product each), 2x2 outputs.
constexpr int kPoints = 16;
// Tiles per block of the products (a multiple of the AVX2 tile's 6 rows):
// enough rows to amortize each transformed weight matrix's trip from the
// cache (2 x 96 flops a weight), few enough that a block's 16 transformed
// tiles stay in L2 beside the products.
constexpr int64_t kBlockTiles = 96;
constexpr int64_t kTileRows = 6;

// A convolution as the transforms see it: `ins` channels of ih x iw in,
// `outs` of oh x ow out, each output 2x2 block from the 4x4 inputs at
// (2 ty - pad_h, 2 tx - pad_w).
struct Plane {
  int64_t batch, ins, outs, ih, iw, oh, ow, pad_h, pad_w;
  int64_t tiles_h() const { return ceil_div(oh, 2); }
  int64_t tiles_w() const { return ceil_div(ow, 2); }
  int64_t tiles() const { return batch * tiles_h() * tiles_w(); }
  int64_t in_image() const { return ins * ih * iw; }
  int64_t out_image() const { return outs * oh * ow; }
  // Images per chunk of the batch, as conv_dnnl.cpp cuts it: a chunk's
  // blocked copies of its input and output about conv_chunk_bytes().
  int64_t chunk_images() const {
    return conv_chunk_images(batch, in_image() + out_image());
  }
  // Tile t's image and its first output's row and column; the tiles run
  // along the rows of each image, image after image.
  struct Tile {
    int64_t image, y, x;
  };
  Tile tile(int64_t t) const {
    const int64_t tw = tiles_w(), per_image = tiles_h() * tw;
    return {t / per_image, 2 * ((t % per_image) / tw), 2 * (t % tw)};
  }
};

// The transformed kernels (G g G^T)[p] of lanes 8 kernels g, the 9 taps
// of lane l at w + l * lane_stride (fp32), into t[p], with
// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
MG_TARGET_WINOGRAD void transform_kernels(const float* w, int64_t lane_stride,
                                          __m256 (&t)[kPoints]) {
  const __m256i lanes =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                         _mm256_set1_epi32(static_cast<int>(lane_stride)));
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256 g[9];
  for (int tap = 0; tap < 9; ++tap) {
    g[tap] = _mm256_i32gather_ps(w + tap, lanes, 4);
  }
  __m256 s[4][3];  // G g
  for (int c = 0; c < 3; ++c) {
    s[0][c] = g[c];
    s[1][c] = _mm256_mul_ps(
        half, _mm256_add_ps(_mm256_add_ps(g[c], g[3 + c]), g[6 + c]));
    s[2][c] = _mm256_mul_ps(
        half, _mm256_add_ps(_mm256_sub_ps(g[c], g[3 + c]), g[6 + c]));
    s[3][c] = g[6 + c];
  }
  for (int r = 0; r < 4; ++r) {  // (G g) G^T
    t[4 * r] = s[r][0];
    t[4 * r + 1] = _mm256_mul_ps(
        half, _mm256_add_ps(_mm256_add_ps(s[r][0], s[r][1]), s[r][2]));
    t[4 * r + 2] = _mm256_mul_ps(
        half, _mm256_add_ps(_mm256_sub_ps(s[r][0], s[r][1]), s[r][2]));
    t[4 * r + 3] = s[r][2];
  }
}

// The point of the turned kernel's transform that is point p of the
// kernel's: G J = P G with J the reversal and P the swap of rows 0 and 3.
int turned_point(int p) {
  constexpr int swap03[4] = {3, 1, 2, 0};
  return 4 * swap03[p / 4] + swap03[p % 4];
}

// v[p][r][c] = (B^T d B)[p] for the tiles t0 .. t0 + rows of xb (the
// plane's input, channel-blocked, fp32) and each channel c, with
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; inputs outside the
// plane (its padding) are 0. Row r of point p at v + (p rows_max + r) ins.
MG_TARGET_WINOGRAD void transform_tiles(const Plane& s, const float* xb,
                                        int64_t t0, int64_t rows,
                                        int64_t rows_max, float* v) {
  const int64_t blocks = s.ins / kLanes, map = s.ih * s.iw * kLanes;
  const int64_t point_stride = rows_max * s.ins;
  for (int64_t r = 0; r < rows; ++r) {
    const Plane::Tile tile = s.tile(t0 + r);
    const int64_t y0 = tile.y - s.pad_h, x0 = tile.x - s.pad_w;
    // The tile's inputs that lie in the plane, as offsets (-1: padding).
    int64_t at[4][4];
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        const int64_t y = y0 + a, x = x0 + b;
        const bool in = y >= 0 && y < s.ih && x >= 0 && x < s.iw;
        at[a][b] = in ? (y * s.iw + x) * kLanes : -1;
      }
    }
    const float* image = xb + tile.image * blocks * map;
    float* dst = v + r * s.ins;
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const float* base = image + cb * map;
      __m256 d[4][4];
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          d[a][b] = at[a][b] < 0 ? _mm256_setzero_ps()
                                 : _mm256_loadu_ps(base + at[a][b]);
        }
      }
      __m256 e[4][4];  // B^T d
      for (int b = 0; b < 4; ++b) {
        e[0][b] = _mm256_sub_ps(d[0][b], d[2][b]);
        e[1][b] = _mm256_add_ps(d[1][b], d[2][b]);
        e[2][b] = _mm256_sub_ps(d[2][b], d[1][b]);
        e[3][b] = _mm256_sub_ps(d[1][b], d[3][b]);
      }
      for (int a = 0; a < 4; ++a) {  // (B^T d) B
        float* p = dst + 4 * a * point_stride + cb * kLanes;
        _mm256_storeu_ps(p, _mm256_sub_ps(e[a][0], e[a][2]));
        _mm256_storeu_ps(p + point_stride, _mm256_add_ps(e[a][1], e[a][2]));
        _mm256_storeu_ps(p + 2 * point_stride, _mm256_sub_ps(e[a][2], e[a][1]));
        _mm256_storeu_ps(p + 3 * point_stride, _mm256_sub_ps(e[a][1], e[a][3]));
      }
    }
  }
}

// The outputs of the tiles t0 .. t0 + rows from their products m (point p,
// row r at m + (p rows_max + r) outs): (A^T m A) with
// A^T = [1 1 1 0; 0 1 -1 -1], written to yb (the plane's output,
// channel-blocked, fp32) where they lie in the plane.
MG_TARGET_WINOGRAD void untransform_tiles(const Plane& s, const float* m,
                                          int64_t t0, int64_t rows,
                                          int64_t rows_max, float* yb) {
  const int64_t blocks = s.outs / kLanes, map = s.oh * s.ow * kLanes;
  const int64_t point_stride = rows_max * s.outs;
  for (int64_t r = 0; r < rows; ++r) {
    const Plane::Tile tile = s.tile(t0 + r);
    const bool second_row = tile.y + 1 < s.oh, second_col = tile.x + 1 < s.ow;
    float* image =
        yb + tile.image * blocks * map + (tile.y * s.ow + tile.x) * kLanes;
    const float* src = m + r * s.outs;
    for (int64_t kb = 0; kb < blocks; ++kb) {
      __m256 q[4][4];
      for (int p = 0; p < kPoints; ++p) {
        q[p / 4][p % 4] = _mm256_loadu_ps(src + p * point_stride + kb * kLanes);
      }
      __m256 e[2][4];  // A^T q
      for (int b = 0; b < 4; ++b) {
        e[0][b] = _mm256_add_ps(_mm256_add_ps(q[0][b], q[1][b]), q[2][b]);
        e[1][b] = _mm256_sub_ps(_mm256_sub_ps(q[1][b], q[2][b]), q[3][b]);
      }
      float* dst = image + kb * map;
      for (int a = 0; a < (second_row ? 2 : 1); ++a) {  // (A^T q) A
        float* row = dst + a * s.ow * kLanes;
        _mm256_storeu_ps(
            row, _mm256_add_ps(_mm256_add_ps(e[a][0], e[a][1]), e[a][2]));
        if (second_col) {
          _mm256_storeu_ps(
              row + kLanes,
              _mm256_sub_ps(_mm256_sub_ps(e[a][1], e[a][2]), e[a][3]));
        }
      }
    }
  }
}

// e[p][r][k] = (A d A^T)[p] for the 2x2 blocks d of dy at the tiles t0 ..
// t0 + rows (the grads of their outputs; those outside the plane 0), the
// weight grad's side of the products: A = [1 0; 1 1; 1 -1; 0 -1], A^T the
// output transform's. dy is the plane's output, channel-blocked, fp32; row
// r of point p at e + (p rows_max + r) outs.
MG_TARGET_WINOGRAD void expand_tiles(const Plane& s, const float* dyb,
                                     int64_t t0, int64_t rows, int64_t rows_max,
                                     float* e) {
  const int64_t blocks = s.outs / kLanes, map = s.oh * s.ow * kLanes;
  const int64_t point_stride = rows_max * s.outs;
  for (int64_t r = 0; r < rows; ++r) {
    const Plane::Tile tile = s.tile(t0 + r);
    const bool second_row = tile.y + 1 < s.oh, second_col = tile.x + 1 < s.ow;
    const float* image =
        dyb + tile.image * blocks * map + (tile.y * s.ow + tile.x) * kLanes;
    const int64_t below = s.ow * kLanes;
    float* dst = e + r * s.outs;
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const float* d = image + kb * map;
      const __m256 zero = _mm256_setzero_ps();
      const __m256 d00 = _mm256_loadu_ps(d);
      const __m256 d01 = second_col ? _mm256_loadu_ps(d + kLanes) : zero;
      const __m256 d10 = second_row ? _mm256_loadu_ps(d + below) : zero;
      const __m256 d11 =
          second_row && second_col ? _mm256_loadu_ps(d + below + kLanes) : zero;
      // A d: rows d0, d0 + d1, d0 - d1, -d1 (2 columns each)
      const __m256 a[4][2] = {
          {d00, d01},
          {_mm256_add_ps(d00, d10), _mm256_add_ps(d01, d11)},
          {_mm256_sub_ps(d00, d10), _mm256_sub_ps(d01, d11)},
          {_mm256_sub_ps(zero, d10), _mm256_sub_ps(zero, d11)}};
      for (int i = 0; i < 4; ++i) {  // (A d) A^T: the same on the columns
        float* p = dst + 4 * i * point_stride + kb * kLanes;
        _mm256_storeu_ps(p, a[i][0]);
        _mm256_storeu_ps(p + point_stride, _mm256_add_ps(a[i][0], a[i][1]));
        _mm256_storeu_ps(p + 2 * point_stride, _mm256_sub_ps(a[i][0], a[i][1]));
        _mm256_storeu_ps(p + 3 * point_stride, _mm256_sub_ps(zero, a[i][1]));
      }
    }
  }
}

// dw[o][i] (3x3, fp32) = G^T (the sum over the sets of du[p][o][i]) G
// for the kernels of W (outs x ins): the products' sums over tiles (a set
// of 16 points' each) added up and brought back from the transformed
// kernel's 16 points to its 9 taps, 8 kernels at a time, with
// G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1].
MG_TARGET_WINOGRAD void gather_kernels(const std::vector<const float*>& sets,
                                       int64_t outs, int64_t ins, float* dw) {
  const int64_t plane = outs * ins;
#pragma omp parallel for schedule(static) if (kPoints * plane >= parallel_min())
  for (int64_t o = 0; o < outs; ++o) {
    for (int64_t i = 0; i < ins; i += kLanes) {
      const int64_t at = o * ins + i;
      __m256 u[4][4];
      for (int p = 0; p < kPoints; ++p) {
        __m256 v = _mm256_loadu_ps(sets[0] + p * plane + at);
        for (size_t q = 1; q < sets.size(); ++q) {
          v = _mm256_add_ps(v, _mm256_loadu_ps(sets[q] + p * plane + at));
        }
        u[p / 4][p % 4] = v;
      }
      const __m256 half = _mm256_set1_ps(0.5f);
      __m256 s[3][4];  // G^T u
      for (int c = 0; c < 4; ++c) {
        const __m256 sum = _mm256_mul_ps(half, _mm256_add_ps(u[1][c], u[2][c]));
        s[0][c] = _mm256_add_ps(u[0][c], sum);
        s[1][c] = _mm256_mul_ps(half, _mm256_sub_ps(u[1][c], u[2][c]));
        s[2][c] = _mm256_add_ps(sum, u[3][c]);
      }
      alignas(32) float taps[9][kLanes];  // (G^T u) G, tap by tap
      for (int r = 0; r < 3; ++r) {
        const __m256 sum = _mm256_mul_ps(half, _mm256_add_ps(s[r][1], s[r][2]));
        _mm256_store_ps(taps[3 * r], _mm256_add_ps(s[r][0], sum));
        _mm256_store_ps(taps[3 * r + 1],
                        _mm256_mul_ps(half, _mm256_sub_ps(s[r][1], s[r][2])));
        _mm256_store_ps(taps[3 * r + 2], _mm256_add_ps(sum, s[r][3]));
      }
      float* kernel = dw + (o * ins + i) * 9;
      for (int64_t l = 0; l < kLanes; ++l) {
        for (int tap = 0; tap < 9; ++tap) kernel[l * 9 + tap] = taps[tap][l];
      }
    }
  }
}

// A block from the allocator: counted in its peak, as oneDNN's scratch is.
float* scratch(std::unique_ptr<Memory>& mem, int64_t floats) {
  mem = CpuAllocator::instance().allocate(
      static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float));
  return static_cast<float*>(mem->ptr());
}

// The 16 transformed kernels packed as the products' B, computed straight
// into the packs: the forward pass's (k = W's ins, n = its outs) or the
// backward data pass's (k = W's outs, n = its ins: the turned kernels'
// transforms, each transposed). Each row of B is a kernel row of W's
// (forward: an input channel; backward: an output channel), its columns
// eight kernels at a time.
MG_TARGET_WINOGRAD void transform_into(const float* w, int64_t outs,
                                       int64_t ins, bool backward,
                                       PackedB* const* packed) {
  const int64_t rows = backward ? outs : ins, cols = backward ? ins : outs;
  const int64_t row_stride = backward ? ins * 9 : 9;
  const int64_t col_stride = backward ? 9 : ins * 9;
  const int64_t width = packed[0]->panel_width();
#pragma omp parallel for schedule(static) if (outs * ins * 9 >= parallel_min())
  for (int64_t q = 0; q < rows; ++q) {
    // Row q of each pack: its first panel's, and the distance between
    // panels (the same in every pack).
    float* row[kPoints];
    for (int p = 0; p < kPoints; ++p) {
      row[p] = packed[backward ? turned_point(p) : p]->panel_row(q, 0);
    }
    const int64_t panel_stride = cols > width ? packed[0]->panel_row(q, width) -
                                                    packed[0]->panel_row(q, 0)
                                              : 0;
    for (int64_t j = 0; j < cols; j += kLanes) {
      __m256 t[kPoints];
      transform_kernels(w + q * row_stride + j * col_stride, col_stride, t);
      const int64_t at = j / width * panel_stride + j % width;
      for (int p = 0; p < kPoints; ++p) _mm256_storeu_ps(row[p] + at, t[p]);
    }
  }
}

std::vector<std::unique_ptr<PackedB>> packed_weights(Operand w, int64_t outs,
                                                     int64_t ins,
                                                     bool backward) {
  std::unique_ptr<Memory> wf_mem;
  const float* wf = static_cast<const float*>(w.data);
  const int64_t taps = outs * ins * 9;
  if (w.dtype != Dtype::f32) {
    float* f = scratch(wf_mem, taps);
    convert(w.data, w.dtype, f, Dtype::f32, static_cast<size_t>(taps));
    wf = f;
  }
  std::vector<std::unique_ptr<PackedB>> packed(kPoints);
  PackedB* raw[kPoints];
  for (int p = 0; p < kPoints; ++p) {
    packed[p] = backward ? std::make_unique<PackedB>(ins, outs)
                         : std::make_unique<PackedB>(outs, ins);
    raw[p] = packed[p].get();
  }
  transform_into(wf, outs, ins, backward, raw);
  return packed;
}

// out = the convolution of `in` (s.ins channels, row-major, T) with the
// packed transformed kernels [+ bias] [+ out], in chunks of the batch.
template <class T>
void run_planes(const Plane& s, const T* in, Operand w, bool backward,
                const float* bias, T* out, bool accum) {
  const int64_t w_outs = backward ? s.ins : s.outs;
  const int64_t w_ins = backward ? s.outs : s.ins;
  const auto packed = packed_weights(w, w_outs, w_ins, backward);
  const int64_t in_image = s.in_image(), out_image = s.out_image();
  const int64_t nb_max = s.chunk_images();
  std::unique_ptr<Memory> xb_mem, yb_mem, work_mem;
  float* xb = scratch(xb_mem, nb_max * in_image);
  float* yb = scratch(yb_mem, nb_max * out_image);
  // Blocks of tiles: equal, whole tiles of the product's rows, a multiple
  // of the team where there are enough of them.
  Plane chunk = s;
  chunk.batch = nb_max;
  const int64_t tiles_max = chunk.tiles();
  const int team = omp_get_max_threads();
  int64_t blocks = ceil_div(tiles_max, kBlockTiles);
  blocks = std::min(ceil_div(blocks, team) * team,
                    std::max<int64_t>(1, tiles_max / kTileRows));
  const int64_t rows_max =
      ceil_div(ceil_div(tiles_max, blocks), kTileRows) * kTileRows;
  const int64_t per_thread = kPoints * rows_max * (s.ins + s.outs);
  const int threads =
      static_cast<int>(std::min<int64_t>(team, ceil_div(tiles_max, rows_max)));
  float* work = scratch(work_mem, per_thread * threads);
  for (int64_t n0 = 0; n0 < s.batch; n0 += nb_max) {
    chunk.batch = std::min(nb_max, s.batch - n0);
    to_channel_blocks(in + n0 * in_image, dtype_of<T>, xb, Dtype::f32, kLanes,
                      chunk.batch, s.ins, s.ih * s.iw);
    const int64_t tiles = chunk.tiles();
#pragma omp parallel num_threads(threads)
    {
      float* v = work + omp_get_thread_num() * per_thread;
      float* m = v + kPoints * rows_max * s.ins;
#pragma omp for schedule(static)
      for (int64_t t0 = 0; t0 < tiles; t0 += rows_max) {
        const int64_t rows = std::min(rows_max, tiles - t0);
        transform_tiles(chunk, xb, t0, rows, rows_max, v);
        for (int p = 0; p < kPoints; ++p) {
          packed[p]->multiply_columns(rows, v + p * rows_max * s.ins,
                                      m + p * rows_max * s.outs, nullptr, false,
                                      0, s.outs);
        }
        untransform_tiles(chunk, m, t0, rows, rows_max, yb);
      }
    }
    from_channel_blocks(yb, Dtype::f32, out + n0 * out_image, dtype_of<T>,
                        kLanes, chunk.batch, s.outs, s.oh * s.ow, accum, bias);
  }
}

// dw (+)= the weight grad of the convolution of x (s.ins channels) giving
// dy (s.outs), as W (s.outs x s.ins x 3 x 3): per block of tiles, x's
// tiles transformed as the forward pass does and dy's 2x2 blocks expanded
// (A dy A^T), then for each point the product e^T v (outs x ins, the sum
// over the block's tiles) added to the point's sums, which are brought
// back to 3x3 at the end. Where a set of sums is at most 1 MB (up to 128
// channels in and out), each thread keeps its own, for its own blocks;
// larger, there is one set and the threads share its points out.
template <class T, class W>
void run_weight_grad(const Plane& s, const T* x, const T* dy, W* dw,
                     bool accum) {
  const int64_t in_image = s.in_image(), out_image = s.out_image();
  const int64_t nb_max = s.chunk_images();
  std::unique_ptr<Memory> xb_mem, dyb_mem, work_mem, du_mem, dw_mem;
  float* xb = scratch(xb_mem, nb_max * in_image);
  float* dyb = scratch(dyb_mem, nb_max * out_image);
  Plane chunk = s;
  chunk.batch = nb_max;
  const int64_t tiles_max = chunk.tiles();
  const int team = omp_get_max_threads();
  const int64_t rows_max = std::min(kBlockTiles, tiles_max);
  const int threads =
      static_cast<int>(std::min<int64_t>(team, ceil_div(tiles_max, rows_max)));
  const int64_t per_thread =
      kPoints * rows_max * (s.ins + s.outs) + gemm_packed_scratch_floats(s.ins);
  const int64_t plane = s.outs * s.ins;
  float* work = scratch(work_mem, per_thread * threads);
  // Held to AVX2 (an Intel Xeon, 2 threads, batch 32), one set shared
  // against a set a thread: 64 channels at 32x32 13.7 against 12.7 ms (the
  // products then read the other core's transformed tiles), 256 at 8x8 8.8
  // against 9.8, 512 at 4x4 8.8 against 13.0; and a set a thread (16 MB
  // each at 512 channels) raised ResNet-18's peak by 30 MB.
  const bool own_sets = kPoints * plane * int64_t{4} <= (int64_t{1} << 20);
  const int sets = own_sets ? threads : 1;
  float* du = scratch(du_mem, kPoints * plane * sets);
  // Whether a set's point holds a block's sums yet: its first block writes
  // them, so that no pass zeroes them first.
  std::vector<char> started(kPoints * sets, 0);
  auto add_products = [&](int set, int p, const float* v, const float* e,
                          int64_t rows, float* pack) {
    char& first = started[set * kPoints + p];
    gemm_packed_here(true, false, s.outs, s.ins, rows,
                     Operand{e + p * rows_max * s.outs, Dtype::f32},
                     Operand{v + p * rows_max * s.ins, Dtype::f32},
                     du + (set * kPoints + p) * plane, first != 0, pack);
    first = 1;
  };
  for (int64_t n0 = 0; n0 < s.batch; n0 += nb_max) {
    chunk.batch = std::min(nb_max, s.batch - n0);
    to_channel_blocks(x + n0 * in_image, dtype_of<T>, xb, Dtype::f32, kLanes,
                      chunk.batch, s.ins, s.ih * s.iw);
    to_channel_blocks(dy + n0 * out_image, dtype_of<T>, dyb, Dtype::f32, kLanes,
                      chunk.batch, s.outs, s.oh * s.ow);
    const int64_t tiles = chunk.tiles(), blocks = ceil_div(tiles, rows_max);
    auto rows_of = [&](int64_t b) {
      return std::min(rows_max, tiles - b * rows_max);
    };
#pragma omp parallel num_threads(threads)
    {
      const int tid = omp_get_thread_num();
      float* const v_own = work + tid * per_thread;
      float* const e_own = v_own + kPoints * rows_max * s.ins;
      float* const pack = e_own + kPoints * rows_max * s.outs;
      auto transform = [&](int64_t b) {
        transform_tiles(chunk, xb, b * rows_max, rows_of(b), rows_max, v_own);
        expand_tiles(chunk, dyb, b * rows_max, rows_of(b), rows_max, e_own);
      };
      if (own_sets) {
#pragma omp for schedule(static)
        for (int64_t b = 0; b < blocks; ++b) {
          transform(b);
          for (int p = 0; p < kPoints; ++p) {
            add_products(tid, p, v_own, e_own, rows_of(b), pack);
          }
        }
      } else {  // in rounds of a block a thread
        for (int64_t b0 = 0; b0 < blocks; b0 += threads) {
          if (b0 + tid < blocks) transform(b0 + tid);
#pragma omp barrier
          for (int p = tid; p < kPoints; p += threads) {
            for (int q = 0; q < threads && b0 + q < blocks; ++q) {
              const float* v = work + q * per_thread;
              add_products(0, p, v, v + kPoints * rows_max * s.ins,
                           rows_of(b0 + q), pack);
            }
          }
#pragma omp barrier
        }
      }
    }
  }
  std::vector<const float*> filled;  // the sets that some block wrote
  for (int set = 0; set < sets; ++set) {
    if (started[set * kPoints]) filled.push_back(du + set * kPoints * plane);
  }
  const bool direct = std::is_same_v<W, float> && !accum;
  float* f = direct ? reinterpret_cast<float*>(dw) : scratch(dw_mem, plane * 9);
  gather_kernels(filled, s.outs, s.ins, f);
  if (!direct) store(f, dw, plane * 9, accum);
}

}  // namespace f2x2

template <class T>
bool winograd_f2_runs(const ConvGeometry& g) {
  const CpuFeatures& cpu = cpu_features();
  if (!conv_winograd() || cpu.avx512f || !gemm_packed_available() ||
      compute_type<T>() != Dtype::f32) {
    return false;
  }
  if (g.kernel.size() != 2 || g.group != 1) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (g.kernel[i] != 3 || g.stride[i] != 1 || g.dilation[i] != 1 ||
        g.pad[i] < 0 || g.pad[i] > 2) {
      return false;
    }
  }
  // Channels in whole panels of our AVX2 tile (16 columns): with 24 or 8
  // channels, where the products end in half a panel, every pass ran
  // 0.05-0.5x oneDNN's direct time; with 32, 1.05-1.12x in the data passes
  // (the products' k of 32 is short), with 48, 1.6-1.8x (batch 32, 32x32
  // and 16x16 maps, held to AVX2).
  constexpr int64_t kPanel = 16;  // gemm_packed.cpp's AVX2 tile's columns
  for (const int64_t c : {g.in_channels, g.out_channels}) {
    if (c < 32 || c % kPanel != 0) return false;
  }
  return g.batch > 0 && g.x_size() > 0 && g.y_size() > 0;
}

template <class T>
void winograd_forward(const ConvGeometry& g, const T* x, Operand w,
                      const float* b, T* y, bool accum) {
  // Timed whole: its transforms are its arithmetic (its products, timed on
  // their own, would be 2.25x fewer multiply-adds than the direct count).
  const FunctionProfile::ProductScope timed;
  const f2x2::Plane s{g.batch,          g.in_channels,   g.out_channels,
                      g.in_spatial[0],  g.in_spatial[1], g.out_spatial[0],
                      g.out_spatial[1], g.pad[0],        g.pad[1]};
  f2x2::run_planes(s, x, w, false, b, y, accum);
}

template <class T>
void winograd_backward_data(const ConvGeometry& g, const T* dy, Operand w,
                            T* dx, bool accum, const float* b) {
  const FunctionProfile::ProductScope timed;
  const f2x2::Plane s{g.batch,          g.out_channels,   g.in_channels,
                      g.out_spatial[0], g.out_spatial[1], g.in_spatial[0],
                      g.in_spatial[1],  2 - g.pad[0],     2 - g.pad[1]};
  f2x2::run_planes(s, dy, w, true, b, dx, accum);
}

template <class T, class W>
void winograd_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                               W* dw, bool accum, float* db) {
  const FunctionProfile::ProductScope timed;
  const f2x2::Plane s{g.batch,          g.in_channels,   g.out_channels,
                      g.in_spatial[0],  g.in_spatial[1], g.out_spatial[0],
                      g.out_spatial[1], g.pad[0],        g.pad[1]};
  f2x2::run_weight_grad(s, x, dy, dw, accum);
  if (db) {
    channel_sums(dy, g.batch, g.out_channels, shape_size(g.out_spatial), db);
  }
}

#define MG_INSTANTIATE_WINOGRAD(T)                                             \
  template bool winograd_f2_runs<T>(const ConvGeometry&);                      \
  template void winograd_forward<T>(const ConvGeometry&, const T*, Operand,    \
                                    const float*, T*, bool);                   \
  template void winograd_backward_data<T>(const ConvGeometry&, const T*,       \
                                          Operand, T*, bool, const float*);    \
  template void winograd_backward_weights<T, T>(const ConvGeometry&, const T*, \
                                                const T*, T*, bool, float*);
MG_INSTANTIATE_WINOGRAD(float)
MG_INSTANTIATE_WINOGRAD(Half)
MG_INSTANTIATE_WINOGRAD(BFloat16)
#undef MG_INSTANTIATE_WINOGRAD
template void winograd_backward_weights<Half, float>(const ConvGeometry&,
                                                     const Half*, const Half*,
                                                     float*, bool, float*);
template void winograd_backward_weights<BFloat16, float>(const ConvGeometry&,
                                                         const BFloat16*,
                                                         const BFloat16*,
                                                         float*, bool, float*);

}  // namespace mg::cpu
