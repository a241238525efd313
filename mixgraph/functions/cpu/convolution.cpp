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

// g's x (or y) in channel blocks of `block` (0: plain).
Layout activation_layout(const ConvGeometry& g, bool x, int64_t block) {
  if (block == 0) return {};
  return x ? Layout{block, g.batch, g.in_channels, shape_size(g.in_spatial)}
           : Layout{block, g.batch, g.out_channels, shape_size(g.out_spatial)};
}

// a as a pass reads it: in `layout` where a holds a copy so (written so by
// the function before), handed over through st; else plain.
template <class T>
const T* read_held(const NdArrayPtr& a, const Layout& layout, ConvStaging& st) {
  if (!layout.plain() && a->array().has_copy(dtype_of<T>, "cpu", layout)) {
    const T* p = a->template get<const T>(layout);
    st.hold_blocked(p);
    return p;
  }
  return a->template get<const T>();
}

// Convolution and DepthwiseConvolution (a grouped convolution): both
// leave their geometry in this->geom_.
template <class T, class Base>
class ConvCpu : public Base {
 public:
  using Base::Base;

 protected:
  // Activations stay in oneDNN's channel-blocked layout between functions
  // that keep it (SyncedArray's Layout): each pass reads x or dy so where
  // it is held so, and writes y or dx so where its kernel does.
  void forward_impl(const Variables& in, const Variables& out) override {
    const ConvGeometry& g = this->geom_;
    // The bias stays fp32: it is added to the fp32 accumulator.
    const float* b = in.size() == 3 ? input<float>(in[2]) : nullptr;
    const ConvBlocks blocks =
        conv_activation_blocks<T>(g, "forward", b != nullptr);
    ConvStaging st;
    const T* x =
        read_held<T>(in[0]->data(), activation_layout(g, true, blocks.in), st);
    T* y = nullptr;
    if (blocks.out != 0) {
      y = out[0]->data()->template cast<T>(
          true, activation_layout(g, false, blocks.out));
      st.write_blocked();
    } else {
      y = output<T>(out[0]);
    }
    conv_forward<T>(g, x, operand<T>(in[1]), b, y, false, &st);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const ConvGeometry& g = this->geom_;
    // dy brought into oneDNN's layout once for both passes (or taken as it
    // is held).
    ConvStaging staging;
    const bool want_db = in.size() == 3 && propagate_down[2];
    const ConvBlocks data =
        propagate_down[0] ? conv_activation_blocks<T>(g, "backward_data", false)
                          : ConvBlocks{};
    const ConvBlocks weights =
        propagate_down[1]
            ? conv_activation_blocks<T>(g, "backward_weights", want_db)
            : ConvBlocks{};
    const NdArrayPtr& dy_array = out[0]->grad();
    const T* dy = nullptr;
    if (propagate_down[0]) {
      dy =
          read_held<T>(dy_array, activation_layout(g, false, data.in), staging);
      // dx written blocked; added to where it is held so (a residual's
      // grad), else to its plain copy.
      const Layout dxl = activation_layout(g, true, data.out);
      const SyncedArray& dxa = in[0]->grad()->array();
      T* dx = nullptr;
      if (data.out != 0 &&
          (!accum[0] || (dxa.layout() == dxl && dxa.dtype() == dtype_of<T>))) {
        dx = in[0]->grad()->template cast<T>(!accum[0], dxl);
        staging.write_blocked();
      } else {
        dx = input_grad<T>(in[0], accum[0]);
      }
      conv_backward_data<T>(g, dy, operand<T>(in[1]), dx, accum[0], nullptr,
                            &staging);
    }
    if (propagate_down[1] && (!propagate_down[0] || weights.in2 != data.in)) {
      dy = read_held<T>(dy_array, activation_layout(g, false, weights.in2),
                        staging);
    }
    // db = sum over N and space: from the weight grad's pass over dy when
    // there is one. Grads of fp32 master weights are written in fp32.
    std::vector<float> db(want_db ? g.out_channels : 0);
    if (propagate_down[1]) {
      const T* x = read_held<T>(
          in[0]->data(), activation_layout(g, true, weights.in), staging);
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
      dy = output_grad<T>(out[0]);
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
