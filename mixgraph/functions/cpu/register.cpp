// The one list of CPU functions.
#include <mixgraph/functions/cpu/cpu_functions.hpp>

namespace mg::cpu {

void register_cpu_functions(FunctionRegistry& r) {
  register_elementwise(r);
  register_affine(r);
  register_reduction(r);
  register_shape_ops(r);
  register_dropout(r);
  register_cast(r);
  register_batch_normalization(r);
  register_sync_batch_normalization(r);
  register_softmax(r);
  register_loss(r);
  register_convolution(r);
  register_deconvolution(r);
  register_pooling(r);
  register_array_ops(r);
  register_indexing(r);
  register_batch_matmul(r);
  register_min_argmax(r);
  register_normalization(r);
  register_generators(r);
  register_concat_activation(r);
  register_prelu(r);
  register_interpolate(r);
  register_matrix_ops(r);
  register_prune(r);
  register_nary(r);
  register_recurrent(r);
  register_cumulative(r);
  register_search_sorted(r);
  register_broadcast_to(r);
  register_sort(r);
  register_scatter_ops(r);
  register_bool_ops(r);
  register_data_shaped(r);
  register_assign(r);
  register_quantize_layers(r);
  register_clip_grad(r);
  register_mean_subtraction(r);
  register_norm_normalization(r);
  register_fused_batch_normalization(r);
  register_fused_convolution(r);
  register_shape_sink(r);
  register_integer_ops(r);
  register_einsum(r);
  register_batch_linalg(r);
  register_detection(r);
  register_max_pooling_backward(r);
  register_patch_correlation(r);
  register_vat_noise(r);
  register_deformable_convolution(r);
  register_adaptive_separable_convolution(r);
  register_geometric(r);
  register_onnx_resize(r);
  register_fft(r);
  register_stft(r);
  register_top_k(r);
  register_random_generators(r);
  register_random_augment(r);
}

}  // namespace mg::cpu
