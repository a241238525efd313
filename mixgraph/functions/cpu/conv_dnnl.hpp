// Convolutions on the CPU through oneDNN: forward, backward data and
// backward weights, shared by Convolution and Deconvolution (the weight
// grads of small maps by a product of ours, conv_weights_product.cpp; the
// 3x3 convolutions on CPUs without AVX-512 by our Winograd,
// conv_winograd.hpp; a network's first layer by our direct kernel,
// conv_direct.hpp).
#pragma once

#include <cstdint>
#include <memory>

#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

// All of these take plain row-major arrays laid out as ConvGeometry says, T
// float, Half or BFloat16, and accumulate in fp32. Results are written in T
// (added to the destination with accum).
//
// oneDNN picks its own (blocked) layouts; an activation is brought into its
// layout and compute type in one pass (channel_blocks.hpp) and back the same
// way. A big batch is cut into chunks of at most conv_chunk_bytes(), so the
// scratch memory is a few chunks, not copies of whole activations.
// The compute type is bf16 for BFloat16 where the CPU has AVX512-BF16 (or
// AMX), else fp32 (Half too: Debian's oneDNN 2.6 has no fp16 kernels, and
// fp16 hardware that accumulates in fp32 is AMX-FP16 and AVX10.2). The
// weights may be given in fp32 (a parameter's master copy) for any T.
// Primitives and reorders are cached per geometry.

/// The activations one pass brought into oneDNN's layouts, for a later pass
/// of the same layer that reads the same array in the same layout and type:
/// a convolution's backward reads dy in its data pass and in its weight
/// pass, a deconvolution's its dy in its forward and weight passes. Given
/// to both, the second takes the first's copy instead of making its own
/// (one pass over the activation fewer: 3-4 ms of ResNet-18's bfloat16
/// step, 4-6 of float's and half's). Only whole batches are kept (a batch cut
/// into chunks is staged chunk by chunk, as without one), and the arrays must
/// not change between the passes. It holds its copies' memory while it lives:
/// make one per backward call.
class ConvStaging {
 public:
  ConvStaging();
  ~ConvStaging();
  ConvStaging(const ConvStaging&) = delete;
  ConvStaging& operator=(const ConvStaging&) = delete;
  /// How many times a pass took a copy from here instead of making one.
  int64_t reused() const;
  /// The caller holds `array` (an input of the pass: x, dy) in the layout
  /// conv_activation_blocks() named: the pass reads it as it is.
  void hold_blocked(const void* array);
  /// The pass writes its output (y, dx) in that layout, straight into the
  /// caller's array (with accum, adds its fp32 result to it there).
  void write_blocked();
  struct Kept;  // conv_dnnl.cpp's
  Kept& kept() { return *kept_; }

 private:
  std::unique_ptr<Kept> kept_;
};

/// The layouts in which conv_forward() ("forward"), conv_backward_data()
/// ("backward_data") or conv_backward_weights() ("backward_weights") on T
/// reads its activations (x; dy; x and dy) and writes its output (y; dx)
/// for g, with a bias (or its grad) or not, when the caller holds them
/// channel-blocked (SyncedArray's Layout; ConvStaging::hold_blocked() and
/// write_blocked() hand them over): the block of oneDNN's layout (16, or
/// the channels for channels last), or 0 where the pass wants plain arrays
/// (a batch in chunks, our own kernels; for one activation, its channels
/// not a multiple of 16). The held arrays stay in T: where the kernel
/// computes in fp32 (half; bfloat16 on CPUs without fast bf16 kernels) the
/// pass converts them element by element. Another pass name throws
/// std::invalid_argument (as conv_implementation() does).
struct ConvBlocks {
  int64_t in = 0, in2 = 0, out = 0;  // in2: backward_weights' dy
};
template <class T>
ConvBlocks conv_activation_blocks(const ConvGeometry& g, const std::string& op,
                                  bool bias);

/// Allows conv_activation_blocks() to name blocked layouts (the default)
/// or makes it say 0 everywhere, for plain arrays between all functions:
/// for tests and benchmarks. MIXGRAPH_BLOCKED_ACTIVATIONS=0 in the
/// environment starts with it off.
void set_blocked_activations(bool allowed);
bool conv_blocked_activations();

/// y = conv(x, W) [+ b (out_channels,), fp32].
template <class T>
void conv_forward(const ConvGeometry& g, const T* x, Operand w, const float* b,
                  T* y, bool accum = false, ConvStaging* staging = nullptr);
template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, const float* b,
                  T* y, bool accum = false) {
  conv_forward<T>(g, x, Operand{w, dtype_of<T>}, b, y, accum);
}

/// dx = conv_backward_data(dy, W) [+ b (in_channels,), fp32]: the
/// transposed convolution; the bias serves Deconvolution's forward.
template <class T>
void conv_backward_data(const ConvGeometry& g, const T* dy, Operand w, T* dx,
                        bool accum = false, const float* b = nullptr,
                        ConvStaging* staging = nullptr);
template <class T>
void conv_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx,
                        bool accum = false, const float* b = nullptr) {
  conv_backward_data<T>(g, dy, Operand{w, dtype_of<T>}, dx, accum, b);
}

/// dW = conv_backward_weights(x, dy), written as W: T, or float (the grad of
/// an fp32 master weight, summed in fp32 and never rounded to T); with db,
/// also db[c] = the fp32 sum of dy over the batch and space (the bias
/// gradient, overwritten), from oneDNN's pass over dy (the small maps'
/// product sums dy in a pass of its own: dy is small there).
template <class T, class W>
void conv_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                           W* dw, bool accum = false, float* db = nullptr,
                           ConvStaging* staging = nullptr);

/// Whether conv_backward_weights computes dW by matrix products of ours
/// (conv_weights_product.cpp) instead of oneDNN's kernel: 2-D, one group, a
/// window larger than one position and output maps of at most 16
/// positions, where oneDNN 2.6's kernel is slow.
bool weights_by_product(const ConvGeometry& g);
/// Whether those products go tap by tap, skipping the padding (where it
/// holds at least a quarter of the windows' positions: ResNet-18's 4x4
/// maps), rather than as one product over an im2col of x.
bool weights_by_taps(const ConvGeometry& g);
/// conv_backward_weights by those products (the way weights_by_taps()
/// says), whatever the geometry.
template <class T, class W>
void conv_backward_weights_product(const ConvGeometry& g, const T* x,
                                   const T* dy, W* dw, bool accum = false,
                                   float* db = nullptr);
/// The two ways, whatever the geometry (for tests and benchmarks).
template <class T, class W>
void conv_backward_weights_im2col(const ConvGeometry& g, const T* x,
                                  const T* dy, W* dw, bool accum = false,
                                  float* db = nullptr);
template <class T, class W>
void conv_backward_weights_taps(const ConvGeometry& g, const T* x, const T* dy,
                                W* dw, bool accum = false, float* db = nullptr);
/// conv_backward_weights by oneDNN's kernel, whatever the maps (for the
/// tests and benchmarks that set the two side by side).
template <class T, class W>
void conv_backward_weights_dnnl(const ConvGeometry& g, const T* x, const T* dy,
                                W* dw, bool accum = false, float* db = nullptr,
                                ConvStaging* staging = nullptr);

/// sums[c] = the fp32 sum of a[n, c, s] over n and s, for a laid out
/// (batch, channels, spatial): the bias gradient.
template <class T>
void channel_sums(const T* a, int64_t batch, int64_t channels, int64_t spatial,
                  float* sums);

/// The bytes of fp32 activations a chunk of the batch is cut to: the L3
/// cache as the CPU reports it, between 16 MB and 64 MB; or what
/// set_conv_chunk_bytes() gave.
int64_t conv_chunk_bytes();

/// Images per chunk of a batch whose images each hold `floats_per_image`
/// fp32 floats of scratch copies: about conv_chunk_bytes() a chunk (at
/// least one image), the chunks of equal size or nearly.
int64_t conv_chunk_images(int64_t batch, int64_t floats_per_image);

/// Fixes the chunk size (bytes > 0) or gives it back to the L3 rule (0): for
/// tests that need a batch cut into chunks, and for tuning.
void set_conv_chunk_bytes(int64_t bytes);

/// Whether an fp32 convolution of g takes oneDNN's Winograd kernel
/// (F(4x4, 3x3), AVX-512 only) where the CPU has it: 2-D, 3x3, stride 1, no
/// dilation, one group, at least 64 channels in and out, and at least 64
/// tiles of 4x4 outputs over the batch, three quarters of them used. There
/// it took 0.45-0.7x the direct kernel's time in each pass on ResNet-18's
/// maps (64 channels at 32x32 to 256 at 8x8, batch 32) and lost on fewer
/// channels, fewer tiles or smaller maps (benchmarks/RESULTS.md). Its
/// rounding differs from the direct sum: still fp32, with an error that
/// measured 6.5e-7 of the sum of the terms' magnitudes against 8.4e-8 for
/// the direct kernel. Half runs its convolutions in fp32 and takes it too;
/// bf16 kernels stay direct (oneDNN has no bf16 Winograd).
bool winograd_pays(const ConvGeometry& g);

/// Allows Winograd where winograd_pays() (the default; without AVX-512,
/// ours where winograd_f2_runs(), conv_winograd.hpp) or forbids it, for the
/// direct kernel's rounding everywhere. MIXGRAPH_CONV_WINOGRAD=0 in the
/// environment starts with it forbidden.
void set_conv_winograd(bool allowed);
bool conv_winograd();

/// Allows (the default) or forbids running passes "by thread": where T is
/// a 16-bit type that the kernel computes in fp32 (half; bfloat16 without
/// AVX512-BF16), the whole batch in one chunk, each image of the pass's
/// activations in one piece (held channel-blocked, or row-major where the
/// kernel reads it so) and conv_by_thread(g), each thread of the team
/// converts its share of the images, runs a one-thread kernel on it and
/// converts or sums its result in one parallel region, where the usual
/// pass wakes the team for each conversion and the kernel.
/// MIXGRAPH_CONV_BY_THREAD=0 in the environment starts with it forbidden.
void set_conv_by_thread(bool allowed);
/// Whether passes of g are of the size that runs by thread (where the rest
/// of set_conv_by_thread()'s conditions hold): a team of at least two
/// threads and at least an image for each, more multiply-adds than
/// one_thread_pass() runs alone and fewer than 1024 x parallel_min().
bool conv_by_thread(const ConvGeometry& g);
/// The passes that ran by thread since the process started, for tests.
int64_t conv_by_thread_passes();

/// The implementation that runs `op` ("forward", "backward_data",
/// "backward_weights") on T for g: oneDNN's, e.g. "jit:avx512_core", or
/// "mixgraph:im2col_gemm" or "mixgraph:tap_gemm" for a weight grad by our
/// products; for tests and benchmarks. Another pass name throws
/// std::invalid_argument naming it.
template <class T>
std::string conv_implementation(const ConvGeometry& g, const std::string& op);

}  // namespace mg::cpu
