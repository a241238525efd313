#include <mixgraph/functions/deconvolution.hpp>

#include <limits>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Deconvolution::setup_impl(const Variables& in, const Variables& out) {
  setup_geometry(in, out, in[1]->shape(), opts_.group);
}

void Deconvolution::setup_geometry(const Variables& in, const Variables& out,
                                   const Shape& w, int group) {
  detail::check_channel_first(tag(), opts_.channel_last);
  const Shape& x = in[0]->shape();
  const int base = opts_.base_axis;
  ConvGeometry g = detail::conv_common(tag(), x, w, base, opts_.pad,
                                       opts_.stride, opts_.dilation, group);
  const size_t axes = g.kernel.size();
  const auto output_padding = detail::per_axis(
      tag(), "output_padding", opts_.output_padding, axes, 0, 0, x);
  for (size_t i = 0; i < axes; ++i) {
    if (output_padding[i] >= g.stride[i]) {
      throw std::invalid_argument(msg(tag(), "output_padding ",
                                      shape_str(output_padding),
                                      " must be smaller than stride ",
                                      shape_str(g.stride), " on every axis"));
    }
  }
  const int64_t c = x[base];
  if (w[0] != c) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has ", c, " channels, but W with shape ",
                                    shape_str(w), " expects ", w[0]));
  }
  if (c % g.group != 0) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has ", c, " channels, which group ",
                                    g.group, " does not divide"));
  }
  g.in_channels = w[1] * g.group;  // the convolution's input is our output
  g.out_channels = c;
  g.out_spatial.assign(x.begin() + base + 1, x.end());
  for (size_t i = 0; i < axes; ++i) {
    const int64_t span = g.dilation[i] * (g.kernel[i] - 1) + 1;
    const int64_t size = (g.out_spatial[i] - 1) * g.stride[i] - 2 * g.pad[i] +
                         span + output_padding[i];
    if (size <= 0) {
      throw std::invalid_argument(
          msg(tag(), "x with shape ", shape_str(x), ", W with shape ",
              shape_str(w), ", pad ", shape_str(g.pad), ", stride ",
              shape_str(g.stride), " and dilation ", shape_str(g.dilation),
              " give an empty output along spatial axis ", i, " (size ", size,
              ")"));
    }
    g.in_spatial.push_back(size);
  }
  if (in.size() == 3 && in[2]->shape() != Shape{g.in_channels}) {
    throw std::invalid_argument(
        msg(tag(), "b with shape ", shape_str(in[2]->shape()),
            " must have shape ", shape_str({g.in_channels}),
            " to match W with shape ", shape_str(w), " and group ", g.group));
  }
  geom_ = g;
  Shape y(x.begin(), x.begin() + base);
  y.push_back(g.in_channels);
  y.insert(y.end(), g.in_spatial.begin(), g.in_spatial.end());
  out[0]->reshape(y);
}

DepthwiseDeconvolution::DepthwiseDeconvolution(
    const DepthwiseDeconvolutionOptions& opts)
    : Deconvolution(DeconvolutionOptions{
          opts.base_axis, opts.pad, opts.stride, opts.dilation, 1, {}}),
      dw_opts_(opts) {}

void DepthwiseDeconvolution::setup_impl(const Variables& in,
                                        const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& w = in[1]->shape();
  const int base = dw_opts_.base_axis;
  const int d = dw_opts_.divisor;
  detail::check_conv_base_axis(tag(), x, base);
  const int64_t c = x[base];
  if (d <= 0 || c % d != 0) {
    throw std::invalid_argument(
        msg(tag(), "divisor ", d, " must be positive and divide the ", c,
            " channels of x with shape ", shape_str(x)));
  }
  const size_t axes = x.size() - static_cast<size_t>(base) - 1;
  if (w.size() != axes + 1 || w[0] != c) {
    throw std::invalid_argument(
        msg(tag(), "weight with shape ", shape_str(w), " must be (", c,
            ", kernel...) with ", axes, " kernel sizes: x with shape ",
            shape_str(x), " has ", c, " channels at base_axis ", base));
  }
  if (in.size() == 3 && in[2]->shape() != Shape{c / d}) {
    throw std::invalid_argument(msg(
        tag(), "bias with shape ", shape_str(in[2]->shape()),
        " must have shape ", shape_str({c / d}), ", one per output channel (",
        c, " channels over divisor ", d, ")"));
  }
  if (c / d > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " has too many channels"));
  }
  // The deconvolution's weight (C, OC / group = 1, kernel...), group = C / d.
  Shape wv{c, 1};
  wv.insert(wv.end(), w.begin() + 1, w.end());
  setup_geometry(in, out, wv, static_cast<int>(c / d));
}

namespace functions {

VariablePtr depthwise_deconvolution(const VariablePtr& x,
                                    const VariablePtr& weight,
                                    const VariablePtr& bias,
                                    const DepthwiseDeconvolutionOptions& opts) {
  std::vector<VariablePtr> inputs{x, weight};
  if (bias) inputs.push_back(bias);
  return apply_function1(decl::DepthwiseDeconvolution, opts, std::move(inputs));
}

VariablePtr deconvolution(const VariablePtr& x, const VariablePtr& W,
                          const VariablePtr& b,
                          const DeconvolutionOptions& opts) {
  std::vector<VariablePtr> inputs{x, W};
  if (b) inputs.push_back(b);
  return apply_function1(decl::Deconvolution, opts, std::move(inputs));
}

}  // namespace functions

namespace parametric_functions {

VariablePtr deconvolution(const VariablePtr& x, int64_t outmaps,
                          std::vector<int64_t> kernel, ParameterScope scope,
                          const DeconvolutionParams& params) {
  const std::string tag = "[deconvolution] ";
  const int base = params.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  if (outmaps <= 0 || params.group <= 0 || outmaps % params.group != 0) {
    throw std::invalid_argument(msg(tag, "outmaps ", outmaps,
                                    " must be a positive multiple of group ",
                                    params.group));
  }
  const int64_t k = shape_size(kernel);
  const int64_t out_per_group = outmaps / params.group;
  Shape wshape{xs[base], out_per_group};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  const auto [W, b] =
      detail::conv_layer_parameters(scope["deconv"], wshape, out_per_group * k,
                                    xs[base] * k, outmaps, params);
  return functions::deconvolution(
      x, W, b,
      DeconvolutionOptions{base, params.pad, params.stride, params.dilation,
                           params.group, params.output_padding});
}

VariablePtr depthwise_deconvolution(
    const VariablePtr& x, std::vector<int64_t> kernel, ParameterScope scope,
    const DepthwiseDeconvolutionParams& params) {
  const std::string tag = "[depthwise_deconvolution] ";
  const int base = params.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  const int d = params.divisor;
  if (d <= 0 || xs[base] % d != 0) {
    throw std::invalid_argument(
        msg(tag, "divisor ", d, " must be positive and divide the ", xs[base],
            " channels of x with shape ", shape_str(xs)));
  }
  const int64_t k = shape_size(kernel);
  Shape wshape{xs[base]};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  const auto [W, b] = detail::conv_layer_parameters(
      scope["depthwise_deconv"], wshape, k, k, xs[base] / d, params);
  return functions::depthwise_deconvolution(
      x, W, b,
      DepthwiseDeconvolutionOptions{base, params.pad, params.stride,
                                    params.dilation, d});
}

}  // namespace parametric_functions

}  // namespace mg
