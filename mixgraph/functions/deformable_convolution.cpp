#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/deformable_convolution.hpp>

#include <stdexcept>

namespace mg {

void DeformableConvolution::setup_impl(const Variables& in,
                                       const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& wt = in[1]->shape();
  if (opts_.channel_last) {
    throw std::invalid_argument(
        msg(tag(),
            "channel_last=true is not supported (as NNabla's CPU "
            "kernel): pass x as (N, C, H, W)"));
  }
  const int nd = static_cast<int>(x.size());
  const int base = opts_.base_axis < 0 ? opts_.base_axis + nd : opts_.base_axis;
  if (base < 0 || nd - base - 1 != 2) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " and base_axis ",
            opts_.base_axis,
            " must have a channel axis and exactly 2 spatial axes after the "
            "batch axes (2-D only, as NNabla's)"));
  }
  const Shape lead(x.begin(), x.begin() + base);
  batch_ = shape_size(lead);
  c_ = x[base], h_ = x[base + 1], w_ = x[base + 2];
  if (wt.size() != 4) {
    throw std::invalid_argument(msg(tag(), "weight with shape ", shape_str(wt),
                                    " must be 4-D (OC, C / group, kh, kw)"));
  }
  oc_ = wt[0], kh_ = wt[2], kw_ = wt[3];
  const int g = opts_.group, dg = opts_.deformable_group;
  if (g <= 0 || c_ % g != 0 || oc_ % g != 0 || wt[1] * g != c_) {
    throw std::invalid_argument(msg(tag(), "group ", g, " must divide x's ", c_,
                                    " channels and weight's ", oc_,
                                    " output channels, and weight "
                                    "with shape ",
                                    shape_str(wt), " must have C / group = ",
                                    g > 0 ? c_ / g : 0, " input channels"));
  }
  if (dg <= 0 || c_ % dg != 0 || oc_ % dg != 0) {
    throw std::invalid_argument(
        msg(tag(), "deformable_group ", dg, " must divide x's ", c_,
            " channels and the ", oc_, " output channels (NNabla's rule)"));
  }
  const auto pad = detail::per_axis(tag(), "pad", opts_.pad, 2, 0, 0, x);
  const auto stride =
      detail::per_axis(tag(), "stride", opts_.stride, 2, 1, 1, x);
  const auto dil =
      detail::per_axis(tag(), "dilation", opts_.dilation, 2, 1, 1, x);
  const int64_t k[2] = {kh_, kw_}, in_size[2] = {h_, w_};
  int64_t o[2];
  for (int a = 0; a < 2; ++a) {
    pad_[a] = pad[a], stride_[a] = stride[a], dil_[a] = dil[a];
    const int64_t span = dil[a] * (k[a] - 1) + 1;
    if (in_size[a] + 2 * pad[a] < span) {
      throw std::invalid_argument(msg(
          tag(), "the kernel spans ", span, " along spatial axis ", a,
          ", more than x with shape ", shape_str(x), " padded by ", pad[a]));
    }
    o[a] = (in_size[a] + 2 * pad[a] - span) / stride[a] + 1;
    if ((o[a] - 1) * stride[a] >= in_size[a]) {
      throw std::invalid_argument(
          msg(tag(), "output size ", o[a], " along spatial axis ", a,
              " with stride ", stride[a], " reads offset beyond x's size ",
              in_size[a],
              " (offset is read at output position x stride): "
              "pad less"));
    }
  }
  oh_ = o[0], ow_ = o[1];
  auto expect = [&](int i, int64_t channels, const char* name) {
    Shape s = lead;
    s.insert(s.end(), {channels, h_, w_});
    if (in[i]->shape() != s) {
      throw std::invalid_argument(
          msg(tag(), name, " with shape ", shape_str(in[i]->shape()),
              " must be ", shape_str(s), " for x with shape ", shape_str(x),
              " and weight with shape ", shape_str(wt)));
    }
  };
  expect(2, 2 * dg * kh_ * kw_, "offset");
  mask_index_ = bias_index_ = -1;
  if (in.size() == 5) {
    mask_index_ = 3, bias_index_ = 4;
  } else if (in.size() == 4) {
    (in[3]->shape().size() == 1 ? bias_index_ : mask_index_) = 3;
  }
  if (mask_index_ >= 0) {
    expect(mask_index_, dg * kh_ * kw_, "mask");
    if (!(pad_[0] < (kh_ + 1) / 2 || pad_[1] < (kw_ + 1) / 2)) {
      throw std::invalid_argument(msg(tag(), "pad ", shape_str(pad),
                                      " puts the kernel's centre in "
                                      "the padding (NNabla's rule with "
                                      "a mask): pad less"));
    }
  }
  if (bias_index_ >= 0 && in[bias_index_]->shape() != Shape{oc_}) {
    throw std::invalid_argument(msg(tag(), "bias with shape ",
                                    shape_str(in[bias_index_]->shape()),
                                    " must be (", oc_, ",)"));
  }
  Shape y = lead;
  y.insert(y.end(), {oc_, oh_, ow_});
  out[0]->reshape(y);
}

namespace functions {

VariablePtr deformable_convolution(const VariablePtr& x,
                                   const VariablePtr& weight,
                                   const VariablePtr& offset,
                                   const VariablePtr& mask,
                                   const VariablePtr& bias,
                                   const DeformableConvolutionOptions& opts) {
  std::vector<VariablePtr> inputs{x, weight, offset};
  if (mask) inputs.push_back(mask);
  if (bias) inputs.push_back(bias);
  return apply_function1(decl::DeformableConvolution, opts, std::move(inputs));
}

}  // namespace functions

namespace parametric_functions {

VariablePtr deformable_convolution(const VariablePtr& x, int64_t outmaps,
                                   std::vector<int64_t> kernel,
                                   const VariablePtr& offset,
                                   const VariablePtr& mask,
                                   ParameterScope scope,
                                   const DeformableConvolutionParams& params) {
  const std::string tag = decl::DeformableConvolution.tag();
  const int base = params.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  if (outmaps <= 0) {
    throw std::invalid_argument(
        msg(tag, "outmaps must be positive, got ", outmaps));
  }
  const int64_t channels = xs[base];
  if (params.group <= 0 || channels % params.group != 0) {
    throw std::invalid_argument(
        msg(tag, "x with shape ", shape_str(xs), " has ", channels,
            " channels, which group ", params.group, " does not divide"));
  }
  const int64_t k = shape_size(kernel);
  const int64_t in_per_group = channels / params.group;
  Shape wshape{outmaps, in_per_group};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  const auto [W, b] = detail::conv_layer_parameters(
      scope["deformable_conv"], wshape, in_per_group * k, outmaps * k, outmaps,
      params);
  DeformableConvolutionOptions o;
  o.base_axis = base;
  o.pad = params.pad, o.stride = params.stride, o.dilation = params.dilation;
  o.group = params.group;
  o.deformable_group = params.deformable_group;
  o.channel_last = params.channel_last;
  return functions::deformable_convolution(x, W, offset, mask, b, o);
}

}  // namespace parametric_functions

}  // namespace mg
