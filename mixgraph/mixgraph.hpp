// mixgraph: the umbrella header. Include this and nothing else: it holds
// every public header of the library (tests/utils/test_umbrella.cpp checks
// that none is missing and compiles a program that uses each through it).
// Only the internal HDF5 plumbing (utils/hdf5/hdf5_file.hpp,
// parameters_io.hpp, which include hdf5.h), utils/onnx/ (ONNX's protobuf
// classes), utils/nnp/ and utils/network_graph.hpp (the network files'
// plumbing) and the backend folders (cpu/, cuda/, cudnn/, ops/) are left out.
#pragma once

#include <mixgraph/contexts/caching_allocator.hpp>
#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/contexts/context.hpp>
#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/contexts/transfers.hpp>

#include <mixgraph/graph/check_finite.hpp>
#include <mixgraph/graph/fields.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_args.hpp>
#include <mixgraph/graph/function_decl.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/graph/initializer.hpp>
#include <mixgraph/graph/ndarray.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/profile.hpp>
#include <mixgraph/graph/random.hpp>
#include <mixgraph/graph/shape.hpp>
#include <mixgraph/graph/variable.hpp>

#include <mixgraph/functions/adaptive_separable_convolution.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/args_codec.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/assign.hpp>
#include <mixgraph/functions/attention.hpp>
#include <mixgraph/functions/batch_linalg.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/bool_ops.hpp>
#include <mixgraph/functions/broadcast_to.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/cast.hpp>
#include <mixgraph/functions/clip_grad.hpp>
#include <mixgraph/functions/concat_activation.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/cumulative.hpp>
#include <mixgraph/functions/data_shaped.hpp>
#include <mixgraph/functions/deconvolution.hpp>
#include <mixgraph/functions/deformable_convolution.hpp>
#include <mixgraph/functions/detection.hpp>
#include <mixgraph/functions/dropout.hpp>
#include <mixgraph/functions/einsum.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/fft.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>
#include <mixgraph/functions/fused_convolution.hpp>
#include <mixgraph/functions/generators.hpp>
#include <mixgraph/functions/geometric.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/integer_ops.hpp>
#include <mixgraph/functions/interpolate.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/lstm.hpp>
#include <mixgraph/functions/matrix_ops.hpp>
#include <mixgraph/functions/max_pooling_backward.hpp>
#include <mixgraph/functions/mean_subtraction.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/nary.hpp>
#include <mixgraph/functions/norm_normalization.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/onnx_resize.hpp>
#include <mixgraph/functions/patch_correlation.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/precision_policy.hpp>
#include <mixgraph/functions/prelu.hpp>
#include <mixgraph/functions/prune.hpp>
#include <mixgraph/functions/quantize_layers.hpp>
#include <mixgraph/functions/random_augment.hpp>
#include <mixgraph/functions/random_generators.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/scatter_ops.hpp>
#include <mixgraph/functions/search_sorted.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/shape_sink.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/functions/sort.hpp>
#include <mixgraph/functions/stft.hpp>
#include <mixgraph/functions/top_k.hpp>
#include <mixgraph/functions/vat_noise.hpp>

#include <mixgraph/solvers/adabound.hpp>
#include <mixgraph/solvers/adagrad.hpp>
#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/adam_variants.hpp>
#include <mixgraph/solvers/data_parallel.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/lamb.hpp>
#include <mixgraph/solvers/lars.hpp>
#include <mixgraph/solvers/lion.hpp>
#include <mixgraph/solvers/loss_scaling.hpp>
#include <mixgraph/solvers/nesterov.hpp>
#include <mixgraph/solvers/norms.hpp>
#include <mixgraph/solvers/rmsprop.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/solvers/sgdw.hpp>
#include <mixgraph/solvers/solver.hpp>
#include <mixgraph/solvers/update_rule.hpp>
#include <mixgraph/solvers/weight_decay_rule.hpp>

#include <mixgraph/utils/csv.hpp>
#include <mixgraph/utils/data/batch_iterator.hpp>
#include <mixgraph/utils/data/fashion_mnist.hpp>
#include <mixgraph/utils/data/feed.hpp>
#include <mixgraph/utils/data/idx.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/inference.hpp>
#include <mixgraph/utils/interrupt.hpp>
#include <mixgraph/utils/nnp.hpp>
#include <mixgraph/utils/onnx.hpp>
#include <mixgraph/utils/progress.hpp>
#include <mixgraph/utils/yaml/network.hpp>

namespace mg {
namespace F = functions;
namespace PF = parametric_functions;
}  // namespace mg
