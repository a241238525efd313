// The max pooling kernels of one map (max_pooling_kernels.cpp), per ISA:
// fp32 maps whose windows all lie inside them, the 2x2 stride-2 windows
// (LeNet's) in fp32 and on the bits of half and bfloat16, and any windows
// over a group of maps held channel-blocked. A window's maximum is its
// first largest element, the first nan winning.
#pragma once

#include <cstdint>

#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/pooling_windows.hpp>

namespace mg::cpu::pooling {

/// 2x2 windows with stride 2 over the last two axes: LeNet's pooling.
inline bool is_2x2_stride_2(const Dims3& d) {
  return d.in[0] == 1 && d.k[1] == 2 && d.k[2] == 2 && d.s[1] == 2 &&
         d.s[2] == 2;
}

/// Max pooling of one map whose windows all lie inside it (no padding, none
/// cut at the end).
void max_forward_inside(const float* x, float* y, const Dims3& d);

/// dx[argmax] += dy for every window of one map whose windows all lie
/// inside it; dx holds what to add to (zeros, or the grad to accumulate on).
void max_backward_inside(const float* x, const float* dy, float* dx,
                         const Dims3& d);

/// The 2x2 stride-2 forward of one fp32 map, on the widest path the CPU has.
void max_forward_2x2(const float* x, float* y, const Dims3& d);

/// Puts each 2x2 window's dy where its maximum came from: added to dx (add),
/// else written, the window's other three elements set to zero (dx's
/// elements in no window are left as they are).
void max_backward_2x2(const float* x, const float* dy, float* dx,
                      const Dims3& d, bool add);

/// The 2x2 windows of one 16-bit map on its bits (inf_bits: the type's
/// infinity), forward (y set) or backward (dy, dx set), on AVX-512BW or
/// AVX2: the caller checks that the CPU has one of them.
void max_2x2_bits(const Bits16* x, const Bits16* dy, Bits16* y, Bits16* dx,
                  const Dims3& d, uint16_t inf_bits);

/// Max pooling of a group of `block` maps (a multiple of 8: 16, as our
/// convolutions hand their outputs over, or all of an image's channels,
/// channels-last) held interleaved, as channels in oneDNN's
/// blocked layout: x (in_size, block), y (out_size, block); any windows
/// (padding, past the end). A window's maximum per channel by the rule
/// above; 0 where a window lies wholly in the padding. E is float (every
/// vector ISA), or half and bfloat16 where blocks_16_loop(block): pooled as
/// they are, each block converted in registers, the bits of pooling fp32
/// copies (a maximum is a value of x).
template <class E>
void max_forward_blocked(const E* x, E* y, const Dims3& d, int64_t block);

/// dx[argmax] += dy per window and channel, in the windows' order (as the
/// plain maps add them); dx holds what to add to. With `write`, where the
/// windows tile the map (tiles()), dx is written instead: dy where the
/// maximum came from, 0 in the window's other elements (as the plain 2x2
/// kernels write it; a dy of -0 stays -0, where the general plain loop's
/// 0 + dy makes it +0). Half and bfloat16 as max_forward_blocked(), their
/// windows tiling the map: an element takes one sum at most, rounded once,
/// as an fp32 copy's would be.
template <class E>
void max_backward_blocked(const E* x, const E* dy, E* dx, const Dims3& d,
                          int64_t block, bool write);

/// Whether this CPU has the loops that pool half or bfloat16 maps held in
/// blocks of `block` channels as they are (AVX-512 for multiples of 16,
/// AVX2 with F16C for multiples of 8); else the caller converts the maps
/// to fp32 and back.
bool blocks_16_loop(int64_t block);

/// Whether the windows tile the map: no padding, stride = kernel, every
/// element in exactly one window.
inline bool tiles(const Dims3& d) {
  for (int a = 0; a < 3; ++a) {
    if (d.p[a] != 0 || d.s[a] != d.k[a] || d.out[a] * d.k[a] != d.in[a]) {
      return false;
    }
  }
  return true;
}

}  // namespace mg::cpu::pooling
