// The U-Net of unet_fashion_mnist.cpp, shared with benchmarks/bench_models
// (which times its training step against PyTorch's twin): a convolution,
// two downsampling stages of depthwise-separable convolutions after max
// pooling, and a decoder that upsamples by F::interpolate (bilinear,
// PyTorch's half-pixel rule) to 14x14 and F::unpooling (nearest, x2) to
// 28x28, each concatenated with the encoder's map of that size.
#pragma once

#include <mixgraph/mixgraph.hpp>

namespace example {

/// A convolution with `maps` outputs and a square kernel, padded to keep
/// the size.
inline mg::VariablePtr unet_conv(const mg::VariablePtr& x, int64_t maps,
                                 int64_t kernel, mg::ParameterScope scope) {
  mg::parametric_functions::ConvolutionParams p;
  p.pad = {kernel / 2, kernel / 2};
  return mg::parametric_functions::convolution(x, maps, {kernel, kernel}, scope,
                                               p);
}

/// relu(1x1 conv(relu(depthwise 3x3 conv(x)))): a depthwise-separable block.
inline mg::VariablePtr unet_separable(const mg::VariablePtr& x, int64_t maps,
                                      mg::ParameterScope scope) {
  namespace F = mg::functions;
  mg::parametric_functions::DepthwiseConvolutionParams dw;
  dw.pad = {1, 1};
  auto h = F::relu(mg::parametric_functions::depthwise_convolution(
      x, {3, 3}, scope["dw"], dw));
  return F::relu(unet_conv(h, maps, 1, scope["pw"]));
}

/// Logits (N, labels, 28, 28) for images x (N, 1, 28, 28).
inline mg::VariablePtr unet(const mg::VariablePtr& x, int64_t labels,
                            mg::ParameterScope params) {
  namespace F = mg::functions;
  auto e1 = F::relu(unet_conv(x, 16, 3, params["enc1"]));  // 28x28
  auto e2 = unet_separable(F::max_pooling(e1, {2, 2}), 32, params["enc2"]);
  auto mid = unet_separable(F::max_pooling(e2, {2, 2}), 64, params["mid1"]);
  mid = unet_separable(mid, 64, params["mid2"]);  // the whole image's context
  auto u2 = F::interpolate(mid, {14, 14}, "linear", /*align_corners=*/false,
                           /*half_pixel=*/true);
  auto d2 =
      F::relu(unet_conv(F::concatenate({u2, e2}, 1), 32, 3, params["dec2"]));
  auto u1 = F::unpooling(d2, {2, 2});
  auto d1 =
      F::relu(unet_conv(F::concatenate({u1, e1}, 1), 16, 3, params["dec1"]));
  return unet_conv(d1, labels, 1, params["head"]);
}

}  // namespace example
