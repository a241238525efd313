// FusedConvolution on the CPU: the chain of inner functions (their CPU
// kernels, in the context's types); nothing of its own.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/fused_convolution.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class FusedConvolutionCpu : public FusedConvolution {
 public:
  using FusedConvolution::FusedConvolution;
};

}  // namespace

void register_fused_convolution(FunctionRegistry& r) {
  register_float_types<FusedConvolutionCpu>(r, decl::FusedConvolution, "cpu");
}

}  // namespace mg::cpu
