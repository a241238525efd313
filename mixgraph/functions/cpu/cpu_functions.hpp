// The one list of CPU function groups: one line each. Group g is a
// function `void register_g(FunctionRegistry&)` in functions/cpu/g.cpp that
// registers its functions' CPU kernels; this list declares them all and
// register_cpu_functions (register.cpp) calls them all in this order. A new
// group is one line here.
#pragma once

// clang-format off
#define MG_CPU_FUNCTION_GROUPS(X) \
  X(elementwise) \
  X(affine) \
  X(reduction) \
  X(shape_ops) \
  X(dropout) \
  X(cast) \
  X(batch_normalization) \
  X(sync_batch_normalization) \
  X(softmax) \
  X(loss) \
  X(convolution) \
  X(deconvolution) \
  X(pooling) \
  X(array_ops) \
  X(indexing) \
  X(batch_matmul) \
  X(attention) \
  X(min_argmax) \
  X(normalization) \
  X(generators) \
  X(concat_activation) \
  X(prelu) \
  X(interpolate) \
  X(matrix_ops) \
  X(prune) \
  X(nary) \
  X(recurrent) \
  X(cumulative) \
  X(search_sorted) \
  X(broadcast_to) \
  X(sort) \
  X(scatter_ops) \
  X(bool_ops) \
  X(data_shaped) \
  X(assign) \
  X(quantize_layers) \
  X(clip_grad) \
  X(mean_subtraction) \
  X(norm_normalization) \
  X(fused_batch_normalization) \
  X(fused_convolution) \
  X(shape_sink) \
  X(integer_ops) \
  X(einsum) \
  X(batch_linalg) \
  X(detection) \
  X(max_pooling_backward) \
  X(patch_correlation) \
  X(vat_noise) \
  X(deformable_convolution) \
  X(adaptive_separable_convolution) \
  X(geometric) \
  X(onnx_resize) \
  X(fft) \
  X(stft) \
  X(top_k) \
  X(random_generators) \
  X(random_augment)
// clang-format on

namespace mg {
class FunctionRegistry;
}

namespace mg::cpu {

void register_cpu_functions(FunctionRegistry& r);

#define MG_DECLARE_CPU_GROUP(g) void register_##g(FunctionRegistry& r);
MG_CPU_FUNCTION_GROUPS(MG_DECLARE_CPU_GROUP)
#undef MG_DECLARE_CPU_GROUP

}  // namespace mg::cpu
