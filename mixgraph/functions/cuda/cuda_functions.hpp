// The one list of CUDA and cuDNN function groups. Each register_* lives in
// the file of the same name under functions/cuda/ or functions/cudnn/;
// functions/backends.cpp calls register_cuda_functions when it is built.
// No CUDA header here.
#pragma once

namespace mg {
class FunctionRegistry;
}

namespace mg::cuda {

void register_cuda_functions(FunctionRegistry& r);

void register_elementwise(FunctionRegistry& r);  // cuda/elementwise.cu
void register_reduction(FunctionRegistry& r);    // cuda/reduction.cu
void register_affine(FunctionRegistry& r);       // cuda/affine.cpp
void register_convolution(FunctionRegistry& r);  // cudnn/convolution.cpp
void register_pooling(FunctionRegistry& r);      // cudnn/pooling.cpp
void register_batch_normalization(
    FunctionRegistry& r);                    // cudnn/batch_normalization.cpp
void register_softmax(FunctionRegistry& r);  // cudnn/softmax.cpp

}  // namespace mg::cuda
