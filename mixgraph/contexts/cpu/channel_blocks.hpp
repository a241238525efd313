// Conversions between our row-major activations (batch, channels, spatial)
// and oneDNN's channel-blocked layouts (nCw16c, nChw16c, nCdhw16c: channels
// in blocks of 16, the 16 innermost; nChw8c and its kin, blocks of 8, on
// AVX2 CPUs; and channels last, nwc, nhwc, ndhwc, one block of all the
// channels, which its AMX kernels read) in fp32 or bf16, with the element
// type
// converted in the same pass. A half activation that a convolution reads in
// fp32 would otherwise be converted and then reordered, two passes and two
// thread team wake-ups; the way back adds a third (the store into T, with
// its accumulation and bias). oneDNN 2.6's own reorders of 16-bit data are
// also slower than this pass (bfloat16 ResNet-18 spent 20% of its oneDNN
// time in them).
#pragma once

#include <cstdint>

#include <mixgraph/contexts/dtype.hpp>

namespace mg::cpu {

/// Whether the passes below run vectorized here for blocks of `block`
/// channels: 8 with AVX2 and F16C, 16 or all of them (channels last) with
/// AVX-512F. Where they do not,
/// callers should keep oneDNN's reorders; the passes still give the same
/// results, one element at a time.
bool channel_blocks_vectorized(int64_t block);
/// The widest block that runs vectorized here (16, 8), or 0.
int64_t channel_block_vectorized();

/// dst[n][c / block][s][c % block] = src[n][c][s], src of `type` and dst of
/// `block_type` (each f32, f16 or bf16; a narrowing rounds to nearest
/// even); block is 8, 16 or `channels` (channels last); the channels past
/// `channels` in the last block are zero, as oneDNN requires of a padded
/// blocked layout.
void to_channel_blocks(const void* src, Dtype type, void* dst, Dtype block_type,
                       int64_t block, int64_t batch, int64_t channels,
                       int64_t spatial);

/// dst[n][c][s] (+)= src[n][c / block][s][c % block] (+ bias[c]), rounded
/// to `type` once: the sum is formed in fp32 (accum adds the old dst), then
/// rounded. bias (fp32, per channel) may be null.
void from_channel_blocks(const void* src, Dtype block_type, void* dst,
                         Dtype type, int64_t block, int64_t batch,
                         int64_t channels, int64_t spatial, bool accum,
                         const float* bias);

/// The same one element at a time: the reference the tests hold the
/// vector paths to, bit for bit.
void to_channel_blocks_scalar(const void* src, Dtype type, void* dst,
                              Dtype block_type, int64_t block, int64_t batch,
                              int64_t channels, int64_t spatial);
void from_channel_blocks_scalar(const void* src, Dtype block_type, void* dst,
                                Dtype type, int64_t block, int64_t batch,
                                int64_t channels, int64_t spatial, bool accum,
                                const float* bias);

}  // namespace mg::cpu
