// The list of CPU function groups. Each register_* lives in the .cpp of the
// same name in this folder; register_cpu_functions calls them all.
#pragma once

namespace mg {
class FunctionRegistry;
}

namespace mg::cpu {

void register_cpu_functions(FunctionRegistry& r);

void register_elementwise(FunctionRegistry& r);
void register_affine(FunctionRegistry& r);
void register_reduction(FunctionRegistry& r);
void register_shape_ops(FunctionRegistry& r);
void register_dropout(FunctionRegistry& r);
void register_cast(FunctionRegistry& r);
void register_batch_normalization(FunctionRegistry& r);
void register_sync_batch_normalization(FunctionRegistry& r);
void register_softmax(FunctionRegistry& r);
void register_loss(FunctionRegistry& r);
void register_convolution(FunctionRegistry& r);
void register_deconvolution(FunctionRegistry& r);
void register_pooling(FunctionRegistry& r);
void register_array_ops(FunctionRegistry& r);
void register_indexing(FunctionRegistry& r);
void register_batch_matmul(FunctionRegistry& r);
void register_min_argmax(FunctionRegistry& r);
void register_normalization(FunctionRegistry& r);
void register_generators(FunctionRegistry& r);
void register_concat_activation(FunctionRegistry& r);
void register_prelu(FunctionRegistry& r);
void register_interpolate(FunctionRegistry& r);
void register_matrix_ops(FunctionRegistry& r);
void register_prune(FunctionRegistry& r);
void register_nary(FunctionRegistry& r);
void register_recurrent(FunctionRegistry& r);
void register_cumulative(FunctionRegistry& r);
void register_search_sorted(FunctionRegistry& r);
void register_broadcast_to(FunctionRegistry& r);
void register_sort(FunctionRegistry& r);
void register_scatter_ops(FunctionRegistry& r);
void register_bool_ops(FunctionRegistry& r);
void register_data_shaped(FunctionRegistry& r);
void register_assign(FunctionRegistry& r);
void register_quantize_layers(FunctionRegistry& r);
void register_clip_grad(FunctionRegistry& r);
void register_mean_subtraction(FunctionRegistry& r);
void register_norm_normalization(FunctionRegistry& r);
void register_fused_batch_normalization(FunctionRegistry& r);
void register_fused_convolution(FunctionRegistry& r);
void register_shape_sink(FunctionRegistry& r);
void register_integer_ops(FunctionRegistry& r);
void register_einsum(FunctionRegistry& r);
void register_batch_linalg(FunctionRegistry& r);
void register_detection(FunctionRegistry& r);
void register_max_pooling_backward(FunctionRegistry& r);
void register_patch_correlation(FunctionRegistry& r);
void register_vat_noise(FunctionRegistry& r);
void register_deformable_convolution(FunctionRegistry& r);
void register_adaptive_separable_convolution(FunctionRegistry& r);
void register_geometric(FunctionRegistry& r);
void register_onnx_resize(FunctionRegistry& r);
void register_fft(FunctionRegistry& r);
void register_stft(FunctionRegistry& r);
void register_top_k(FunctionRegistry& r);
void register_random_generators(FunctionRegistry& r);
void register_random_augment(FunctionRegistry& r);

}  // namespace mg::cpu
