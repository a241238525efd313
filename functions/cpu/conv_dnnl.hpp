// Convolutions on the CPU through oneDNN: forward, backward data and
// backward weights, shared by Convolution and Deconvolution.
#pragma once

#include <cstdint>

#include <mixgraph/functions/convolution.hpp>

namespace mg::cpu {

// All three take plain row-major arrays laid out as ConvGeometry says, T
// float, Half or BFloat16, and accumulate in fp32. Results are written in T
// (added to the destination with accum). Primitives are cached per geometry;
// where oneDNN has no optimized kernel for T on this CPU (fp16 here, bf16
// without AVX-512) the operands go through fp32 buffers.

/// y = conv(x, W) [+ b (out_channels,), fp32].
template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, const float* b,
                  T* y, bool accum = false);

/// dx = conv_backward_data(dy, W) [+ b (in_channels,), fp32]: the
/// transposed convolution; the bias serves Deconvolution's forward.
template <class T>
void conv_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx,
                        bool accum = false, const float* b = nullptr);

/// dW = conv_backward_weights(x, dy).
template <class T>
void conv_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                           T* dw, bool accum = false);

/// sums[c] = the fp32 sum of a[n, c, s] over n and s, for a laid out
/// (batch, channels, spatial): the bias gradient.
template <class T>
void channel_sums(const T* a, int64_t batch, int64_t channels, int64_t spatial,
                  float* sums);

}  // namespace mg::cpu
