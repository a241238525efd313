// Deconvolution on the CPU through the convolution primitives of
// cpu/conv_dnnl: its forward is a convolution's backward-data, its
// backward-data a convolution's forward, and its weight gradient a
// convolution's weight gradient with the roles of x and y swapped.
#include <mixgraph/functions/deconvolution.hpp>

#include <vector>

#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Deconvolution and DepthwiseDeconvolution (a grouped deconvolution): both
// leave their geometry in this->geom_.
template <class T, class Base>
class DeconvCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const float* b = in.size() == 3 ? input<float>(in[2]) : nullptr;
    conv_backward_data<T>(this->geom_, input<T>(in[0]), operand<T>(in[1]),
                          output<T>(out[0]), false, b);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const T* dy = output_grad<T>(out[0]);
    ConvStaging staging;  // dy brought into oneDNN's layout once for both
    if (propagate_down[0]) {
      conv_forward<T>(this->geom_, dy, operand<T>(in[1]), nullptr,
                      input_grad<T>(in[0], accum[0]), accum[0], &staging);
    }
    if (propagate_down[1]) {  // fp32 for an fp32 master weight
      if (grad_in_float<T>(in[1])) {
        conv_backward_weights<T>(this->geom_, dy, input<T>(in[0]),
                                 input_grad<float>(in[1], accum[1]), accum[1],
                                 nullptr, &staging);
      } else {
        conv_backward_weights<T>(this->geom_, dy, input<T>(in[0]),
                                 input_grad<T>(in[1], accum[1]), accum[1],
                                 nullptr, &staging);
      }
    }
    if (in.size() == 3 && propagate_down[2]) {  // db = sum over N and space
      std::vector<float> db(this->geom_.in_channels);
      channel_sums(dy, this->geom_.batch, this->geom_.in_channels,
                   shape_size(this->geom_.in_spatial), db.data());
      store_grad<T>(db.data(), in[2], accum[2]);
    }
  }
};

template <class T>
using DeconvolutionCpu = DeconvCpu<T, Deconvolution>;
template <class T>
using DepthwiseDeconvolutionCpu = DeconvCpu<T, DepthwiseDeconvolution>;

}  // namespace

void register_deconvolution(FunctionRegistry& r) {
  register_float_types<DeconvolutionCpu>(r, decl::Deconvolution, "cpu");
  register_float_types<DepthwiseDeconvolutionCpu>(
      r, decl::DepthwiseDeconvolution, "cpu");
}

}  // namespace mg::cpu
