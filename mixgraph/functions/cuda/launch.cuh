// Launches the bodies of cuda/index_kernels.hpp on the stream: an index
// body, body(i) for every i in [0, n), through a grid-stride loop; a row
// body, body(r, lane, 32, WarpJoin{}) for every row r, one warp a row.
#pragma once

#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/functions/cuda/index_kernels.hpp>

namespace mg::cuda {

template <class Body>
__global__ void index_kernel(int64_t n, Body body) {
  MG_GRID_STRIDE(i, n) { body(i); }
}

template <class Body>
void launch(int64_t n, const Body& body, cudaStream_t stream) {
  if (n <= 0) return;
  index_kernel<Body><<<blocks_for(n), kThreads, 0, stream>>>(n, body);
  MG_CUDA_CHECK_LAUNCH();
}

/// The threads that share a row of a row body.
constexpr int kWarp = 32;

/// A row body's join over a warp's lanes: each lane's partial becomes the
/// sum (or max) of all 32 by a butterfly, whose tree is the same in every
/// lane, so that every lane holds the same bits.
struct WarpJoin {
  __device__ void sum(float& a) const {
    for (int o = kWarp / 2; o > 0; o /= 2) {
      a += __shfl_xor_sync(0xffffffffu, a, o);
    }
  }
  __device__ void sum(float& a, float& b) const {
    sum(a);
    sum(b);
  }
  __device__ void max(float& a) const {
    for (int o = kWarp / 2; o > 0; o /= 2) {
      a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
    }
  }
};

template <class Body>
__global__ void row_kernel(int64_t rows, Body body) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  // r is the same in every lane of a warp: the warp leaves the loop whole.
  for (int64_t r =
           (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) /
           kWarp;
       r < rows; r += warps) {
    body(r, lane, kWarp, WarpJoin{});
  }
}

template <class Body>
void launch_rows(int64_t rows, const Body& body, cudaStream_t stream) {
  if (rows <= 0) return;
  row_kernel<Body>
      <<<blocks_for(rows * kWarp), kThreads, 0, stream>>>(rows, body);
  MG_CUDA_CHECK_LAUNCH();
}

}  // namespace mg::cuda
