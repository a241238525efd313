// The LeNet every tutorial trains on Fashion-MNIST.
#pragma once

#include <mixgraph/mixgraph.hpp>

namespace tutorial {

/// conv 5x5 32 -> relu -> max-pool 2 -> conv 5x5 64 -> relu -> max-pool 2
/// -> affine 512 -> relu -> affine 10, on x of shape (N, 1, 28, 28); the
/// parameters live in `params` under NNabla's names ("conv1/conv/W", ...,
/// "fc4/affine/b"), so NNabla's PF code of the same network loads them.
mg::VariablePtr lenet(const mg::VariablePtr& x,
                      const mg::ParameterScope& params);

}  // namespace tutorial
