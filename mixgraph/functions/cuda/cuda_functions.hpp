// The one list of CUDA and cuDNN function groups: one line each. Group g is
// `void register_g(FunctionRegistry&)`, in the file named beside it;
// register_cuda_functions (cuda/register.cpp) calls them all in this order;
// functions/backends.cpp calls it when the build has CUDA.
// No CUDA header here.
#pragma once

// clang-format off
#define MG_CUDA_FUNCTION_GROUPS(X) \
  X(elementwise)          /* cuda/elementwise.cu */ \
  X(reduction)            /* cuda/reduction.cu */ \
  X(affine)               /* cuda/affine.cpp */ \
  X(batch_matmul)         /* cuda/batch_matmul.cpp */ \
  X(convolution)          /* cudnn/convolution.cpp */ \
  X(pooling)              /* cudnn/pooling.cpp */ \
  X(batch_normalization)  /* cudnn/batch_normalization.cpp */ \
  X(softmax)              /* cudnn/softmax.cpp */ \
  X(shape_ops)            /* cuda/shape_ops.cu */ \
  X(array_ops)            /* cuda/array_ops.cu */ \
  X(interpolate)          /* cuda/interpolate.cu */ \
  X(loss)                 /* cuda/loss.cu */ \
  X(normalization)        /* cuda/normalization.cu */ \
  X(indexing)             /* cuda/indexing.cu */ \
  X(recurrent)            /* cuda/recurrent.cu */
// clang-format on

namespace mg {
class FunctionRegistry;
}

namespace mg::cuda {

void register_cuda_functions(FunctionRegistry& r);

#define MG_DECLARE_CUDA_GROUP(g) void register_##g(FunctionRegistry& r);
MG_CUDA_FUNCTION_GROUPS(MG_DECLARE_CUDA_GROUP)
#undef MG_DECLARE_CUDA_GROUP

}  // namespace mg::cuda
