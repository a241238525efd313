// mixgraph: the umbrella header. Include this and nothing else.
#pragma once

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/graph/initializer.hpp>
#include <mixgraph/graph/ndarray.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/random.hpp>
#include <mixgraph/graph/variable.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/cast.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/deconvolution.hpp>
#include <mixgraph/functions/dropout.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/precision_policy.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/solvers/adabound.hpp>
#include <mixgraph/solvers/adagrad.hpp>
#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/adam_variants.hpp>
#include <mixgraph/solvers/lamb.hpp>
#include <mixgraph/solvers/lars.hpp>
#include <mixgraph/solvers/lion.hpp>
#include <mixgraph/solvers/loss_scaling.hpp>
#include <mixgraph/solvers/nesterov.hpp>
#include <mixgraph/solvers/rmsprop.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/solvers/sgdw.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/attention.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/lstm.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/normalization.hpp>

namespace mg {
namespace F = functions;
namespace PF = parametric_functions;
}  // namespace mg
