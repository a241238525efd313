// Launches an index body of cuda/index_kernels.hpp: body(i) for every i in
// [0, n), through a grid-stride loop on the stream.
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

}  // namespace mg::cuda
