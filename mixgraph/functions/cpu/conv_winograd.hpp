// Our Winograd convolution, F(2x2, 3x3), for the CPUs where oneDNN 2.6 has
// none (its Winograd kernels are AVX-512 only): the three passes of a 3x3,
// stride 1 convolution, in fp32 on our packed product (gemm_packed.hpp),
// for float, half and bfloat16 data.
#pragma once

#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// Whether conv_forward(), conv_backward_data() and conv_backward_weights()
/// (conv_dnnl.hpp) take the functions below for g on T (the weight grad of
/// maps of at most 4 positions stays weights_by_product()'s): Winograd
/// allowed (set_conv_winograd()), the CPU without AVX-512 (AVX2, FMA and
/// F16C; with AVX-512 oneDNN's own F(4x4, 3x3) runs), T computing in fp32,
/// g 2-D, 3x3, stride 1, no dilation, one group, pads of at most 2, in and
/// out channels multiples of 16 and at least 32 (conv_winograd.cpp says
/// why); the weight grad also wants at least 48 each way and maps of more
/// than 4 positions (conv_dnnl.cpp's weights_by_winograd()).
template <class T>
bool winograd_f2_runs(const ConvGeometry& g);

/// y = conv(x, W) [+ b], as conv_forward(): each 2x2 block of y's outputs
/// from a 4x4 tile of x, transformed (B^T d B), multiplied by the
/// transformed weights (G g G^T) in 16 products of (tiles x C) by (C x K),
/// and transformed back (A^T m A). 16 products of C x K per 4 outputs where
/// the direct sum takes 36: 2.25x fewer multiply-adds, for the transforms'
/// passes. Its rounding differs from the direct sum's; still fp32 (the
/// transforms only add and halve), with an error that measured as small as
/// the direct kernel's (ConvWinograd.ErrorWithinAFewUlps). Needs
/// winograd_f2_runs<T>(g).
template <class T>
void winograd_forward(const ConvGeometry& g, const T* x, Operand w,
                      const float* b, T* y, bool accum);

/// dx = conv_backward_data(dy, W) [+ b], as conv_backward_data(): for
/// stride 1, the convolution of dy with W's kernels turned 180 degrees and
/// its channels swapped, pad 2 - pad; the turned kernels' transforms are
/// the forward ones' with their rows and columns permuted (G J = P G), so
/// the same weight transform serves, its points read in another order.
/// Needs winograd_f2_runs<T>(g).
template <class T>
void winograd_backward_data(const ConvGeometry& g, const T* dy, Operand w,
                            T* dx, bool accum, const float* b);

/// dW (+)= conv_backward_weights(x, dy), as conv_backward_weights(): dW =
/// G^T (the sum over tiles of (A dy A^T) . (B^T x B)) G: the products' 16
/// sums over tiles (K x C each; a set per thread up to 1 MB a set, else one
/// set whose points the threads share) brought back to the 3x3 kernels;
/// with db, db[c] = the fp32 sum of dy's channel c. Needs
/// winograd_f2_runs<T>(g).
template <class T, class W>
void winograd_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                               W* dw, bool accum, float* db);

}  // namespace mg::cpu
