// Convolution and DepthwiseConvolution on the CPU: oneDNN through
// cpu/conv_dnnl.
#include <mixgraph/functions/convolution.hpp>

#include <vector>

#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Convolution and DepthwiseConvolution (a grouped convolution): both
// leave their geometry in this->geom_.
template <class T, class Base>
class ConvCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // The bias stays fp32: it is added to the fp32 accumulator.
    const float* b = in.size() == 3 ? input<float>(in[2]) : nullptr;
    conv_forward<T>(this->geom_, input<T>(in[0]), operand<T>(in[1]), b,
                    output<T>(out[0]));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const T* dy = output_grad<T>(out[0]);
    ConvStaging staging;  // dy brought into oneDNN's layout once for both
    if (propagate_down[0]) {
      conv_backward_data<T>(this->geom_, dy, operand<T>(in[1]),
                            input_grad<T>(in[0], accum[0]), accum[0], nullptr,
                            &staging);
    }
    // db = sum over N and space: from the weight grad's pass over dy when
    // there is one. Grads of fp32 master weights are written in fp32.
    const bool want_db = in.size() == 3 && propagate_down[2];
    std::vector<float> db(want_db ? this->geom_.out_channels : 0);
    if (propagate_down[1]) {
      const T* x = input<T>(in[0]);
      float* dbp = want_db ? db.data() : nullptr;
      if (grad_in_float<T>(in[1])) {
        conv_backward_weights<T>(this->geom_, x, dy,
                                 input_grad<float>(in[1], accum[1]), accum[1],
                                 dbp, &staging);
      } else {
        conv_backward_weights<T>(this->geom_, x, dy,
                                 input_grad<T>(in[1], accum[1]), accum[1], dbp,
                                 &staging);
      }
    } else if (want_db) {
      channel_sums(dy, this->geom_.batch, this->geom_.out_channels,
                   shape_size(this->geom_.out_spatial), db.data());
    }
    if (want_db) store_grad<T>(db.data(), in[2], accum[2]);
  }
};

template <class T>
using ConvolutionCpu = ConvCpu<T, Convolution>;
template <class T>
using DepthwiseConvolutionCpu = ConvCpu<T, DepthwiseConvolution>;

}  // namespace

void register_convolution(FunctionRegistry& r) {
  register_float_types<ConvolutionCpu>(r, decl::Convolution, "cpu");
  register_float_types<DepthwiseConvolutionCpu>(r, decl::DepthwiseConvolution,
                                                "cpu");
}

}  // namespace mg::cpu
