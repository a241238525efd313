// A network's first convolution (an image's gray, RGB or RGBA planes in)
// by a direct kernel of ours: its forward pass and its weight grad, the
// passes it has (its x needs no grad). A sum of a few dozen terms per
// output (LeNet's 1 x 5 x 5, ResNet's 3 x 3 x 3) over a large output map,
// bound by writing y and reading dy. oneDNN 2.6 computes half in fp32 and
// wrote y in fp32 for a pass of ours to convert (LeNet's first layer 1.4x
// float's time), and its AVX2 weight grad of one channel in is slow (5.7
// ms of LeNet's step). Here y leaves the registers in T, channel-blocked,
// and dy is read in T, a row at a time converted in the L1 cache.
#pragma once

#include <cstdint>

#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// The block of channels this kernel writes y and reads dy in (the layout
/// oneDNN's kernels keep activations in on this CPU, so the next
/// convolution reads y as it is): 16 with AVX-512, 8 with AVX2; 0 on a CPU
/// with neither, where the kernel never runs.
int64_t conv_direct_block();

/// Whether the weight grad of g on T runs here: 2-D, one group, at most 4
/// channels in, the channels out a multiple of conv_direct_block(), T
/// computed in fp32 (half; bfloat16 where oneDNN's bf16 kernels do not
/// pay, compute_type(); float where the CPU has no AVX-512), allowed by
/// set_conv_direct(). On AVX2, oneDNN 2.6's weight grad of one or three
/// channels in took 1.3x to 7x ours (LeNet's first layer: 5.7 ms against
/// 0.82, float); on AVX-512 float's ran as fast as ours or faster (ResNet's
/// stem 0.51 ms against 0.58) and stays oneDNN's, half's took 1.1x to 1.4x.
template <class T>
bool conv_direct_weights_runs(const ConvGeometry& g);

/// Whether the forward pass of g on T runs here: T 16-bit (half; bfloat16
/// computed in fp32), g as conv_direct_weights_runs() asks and, on AVX2,
/// one channel in. oneDNN wrote their y in fp32 for a pass of ours to
/// convert (LeNet's first layer in half: 0.85 ms against ours 0.50; held
/// to AVX2 1.05 against 0.76). Held to AVX2, ResNet's stem (3 channels in)
/// took 0.84 ms in oneDNN's and 1.09 in ours, whose register tile there is
/// half AVX-512's. float's stays oneDNN's, which writes fp32 as fast. The
/// backward data pass is always oneDNN's (a first layer's x rarely needs a
/// grad).
template <class T>
bool conv_direct_forward_runs(const ConvGeometry& g);

/// Allows the kernel (the default) or leaves every pass to oneDNN, for
/// tests and benchmarks that set the two side by side.
/// MIXGRAPH_CONV_DIRECT=0 in the environment starts with it forbidden.
void set_conv_direct(bool allowed);
bool conv_direct();

/// y = conv(x, W) [+ b (out_channels,), fp32], added to y with accum: x
/// row-major, W (out, in, kh, kw) in fp32 or T, y in blocks of
/// conv_direct_block() channels (y_blocked) or row-major. Sums in fp32, in
/// the order (input channel, kernel row, kernel column). Needs
/// conv_direct_weights_runs<T>(g) (the geometry; any T).
template <class T>
void conv_direct_forward(const ConvGeometry& g, const T* x, Operand w,
                         const float* b, T* y, bool accum, bool y_blocked);

/// dW (+)= conv_backward_weights(x, dy), W's layout, in W (T, or float for
/// an fp32 master weight's grad, never rounded to T); with db, also db[c] =
/// the fp32 sum of dy's channel c (overwritten). dy in blocks of
/// conv_direct_block() channels (dy_blocked) or row-major. Each image's
/// sums are taken in registers and added to a thread's sums, which are
/// added in thread order. Needs conv_direct_weights_runs<T>(g).
template <class T, class W>
void conv_direct_backward_weights(const ConvGeometry& g, const T* x,
                                  const T* dy, bool dy_blocked, W* dw,
                                  bool accum, float* db);

}  // namespace mg::cpu
