#include <mixgraph/functions/convolution.hpp>

#include <limits>
#include <stdexcept>
#include <tuple>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

int64_t ConvGeometry::x_size() const {
  return batch * in_channels * shape_size(in_spatial);
}
int64_t ConvGeometry::w_size() const {
  return out_channels * (in_channels / group) * shape_size(kernel);
}
int64_t ConvGeometry::y_size() const {
  return batch * out_channels * shape_size(out_spatial);
}

bool ConvGeometry::operator<(const ConvGeometry& o) const {
  return std::tie(batch, in_channels, out_channels, group, in_spatial,
                  out_spatial, kernel, pad, stride, dilation) <
         std::tie(o.batch, o.in_channels, o.out_channels, o.group, o.in_spatial,
                  o.out_spatial, o.kernel, o.pad, o.stride, o.dilation);
}

namespace detail {

std::vector<int64_t> per_axis(const std::string& tag, const char* name,
                              const std::vector<int64_t>& v, size_t axes,
                              int64_t fallback, int64_t min, const Shape& x) {
  if (v.empty()) return std::vector<int64_t>(axes, fallback);
  if (v.size() != axes) {
    throw std::invalid_argument(
        msg(tag, name, " ", shape_str(v), " must have ", axes,
            " values, one per spatial axis of x with shape ", shape_str(x)));
  }
  for (int64_t e : v) {
    if (e < min) {
      throw std::invalid_argument(
          msg(tag, name, " ", shape_str(v),
              (min > 0 ? " must be positive" : " must be non-negative")));
    }
  }
  return v;
}

void check_conv_base_axis(const std::string& tag, const Shape& x,
                          int base_axis) {
  const int nd = static_cast<int>(x.size());
  if (base_axis < 0 || base_axis > nd - 2) {
    throw std::invalid_argument(
        msg(tag, "base_axis ", base_axis, " must be in [0, ", nd - 2,
            "] for x with shape ", shape_str(x),
            ", which needs a channel axis and at least one spatial axis from "
            "base_axis on"));
  }
}

ConvGeometry conv_common(const std::string& tag, const Shape& x, const Shape& w,
                         int base_axis, const std::vector<int64_t>& pad,
                         const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& dilation, int group) {
  check_conv_base_axis(tag, x, base_axis);
  const int nd = static_cast<int>(x.size());
  const size_t axes = static_cast<size_t>(nd - base_axis - 1);
  if (axes > 3) {
    throw std::invalid_argument(msg(tag, "x with shape ", shape_str(x),
                                    " and base_axis ", base_axis, " has ", axes,
                                    " spatial axes; 1 to 3 are supported"));
  }
  if (w.size() != axes + 2) {
    throw std::invalid_argument(
        msg(tag, "W with shape ", shape_str(w), " must have ", axes + 2,
            " dimensions (two channel axes, then the kernel) for x with shape ",
            shape_str(x), " and base_axis ", base_axis));
  }
  for (int64_t e : w) {
    if (e <= 0) {
      throw std::invalid_argument(msg(tag, "W with shape ", shape_str(w),
                                      " must have no empty dimension"));
    }
  }
  if (group <= 0) {
    throw std::invalid_argument(msg(tag, "group ", group, " must be positive"));
  }
  ConvGeometry g;
  g.batch = shape_size(x, 0, base_axis);
  g.group = group;
  g.kernel.assign(w.begin() + 2, w.end());
  g.pad = per_axis(tag, "pad", pad, axes, 0, 0, x);
  g.stride = per_axis(tag, "stride", stride, axes, 1, 1, x);
  g.dilation = per_axis(tag, "dilation", dilation, axes, 1, 1, x);
  return g;
}

const Shape& conv_layer_input_shape(const std::string& tag,
                                    const VariablePtr& x, int base_axis,
                                    const Shape& kernel) {
  if (!x) throw std::invalid_argument(msg(tag, "x is a null variable"));
  const Shape& xs = x->shape();
  check_conv_base_axis(tag, xs, base_axis);
  // Checked before W is made, so a bad kernel leaves nothing in the scope.
  const size_t axes = xs.size() - static_cast<size_t>(base_axis) - 1;
  bool positive = true;
  for (int64_t k : kernel) positive = positive && k > 0;
  if (kernel.size() != axes || !positive) {
    throw std::invalid_argument(
        msg(tag, "kernel ", shape_str(kernel), " must have ", axes,
            " positive sizes, one per spatial axis of x with shape ",
            shape_str(xs), " and base_axis ", base_axis));
  }
  return xs;
}

}  // namespace detail

void detail::check_channel_first(const std::string& tag, bool channel_last) {
  if (channel_last) {
    throw std::invalid_argument(msg(
        tag,
        "channel_last=true is not supported: the kernels are channel-first; "
        "transpose x to (batch, channels, spatial...) and pass false"));
  }
}

void Convolution::setup_impl(const Variables& in, const Variables& out) {
  setup_geometry(in, out, in[1]->shape(), opts_.group);
}

void Convolution::setup_geometry(const Variables& in, const Variables& out,
                                 const Shape& w, int group) {
  detail::check_channel_first(tag(), opts_.channel_last);
  const Shape& x = in[0]->shape();
  const int base = opts_.base_axis;
  geom_ = detail::conv_common(tag(), x, w, base, opts_.pad, opts_.stride,
                              opts_.dilation, group);
  const int64_t c = x[base], g = group;
  if (c % g != 0) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has ", c, " channels, which group ", g,
                                    " does not divide"));
  }
  if (w[0] % g != 0) {
    throw std::invalid_argument(
        msg(tag(), "W with shape ", shape_str(w), " has ", w[0],
            " output channels, which group ", g, " does not divide"));
  }
  if (w[1] * g != c) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has ", c, " channels, but W with shape ",
                                    shape_str(w), " and group ", g, " expects ",
                                    w[1] * g));
  }
  geom_.in_channels = c;
  geom_.out_channels = w[0];
  geom_.in_spatial.assign(x.begin() + base + 1, x.end());
  geom_.out_spatial.clear();
  for (size_t i = 0; i < geom_.kernel.size(); ++i) {
    const int64_t span = geom_.dilation[i] * (geom_.kernel[i] - 1) + 1;
    const int64_t padded = geom_.in_spatial[i] + 2 * geom_.pad[i];
    if (span > padded) {
      throw std::invalid_argument(msg(
          tag(), "W with shape ", shape_str(w), " and dilation ",
          shape_str(geom_.dilation), " spans ", span, " along spatial axis ", i,
          ", more than the padded input's ", padded, " (x with shape ",
          shape_str(x), ", pad ", shape_str(geom_.pad), ")"));
    }
    geom_.out_spatial.push_back((padded - span) / geom_.stride[i] + 1);
  }
  if (in.size() == 3 && in[2]->shape() != Shape{w[0]}) {
    throw std::invalid_argument(msg(
        tag(), "b with shape ", shape_str(in[2]->shape()), " must have shape ",
        shape_str({w[0]}), " to match W with shape ", shape_str(w)));
  }
  Shape y(x.begin(), x.begin() + base);
  y.push_back(w[0]);
  y.insert(y.end(), geom_.out_spatial.begin(), geom_.out_spatial.end());
  out[0]->reshape(y);
}

DepthwiseConvolution::DepthwiseConvolution(
    const DepthwiseConvolutionOptions& opts)
    : Convolution(ConvolutionOptions{opts.base_axis, opts.pad, opts.stride,
                                     opts.dilation, 1}),
      dw_opts_(opts) {}

void DepthwiseConvolution::setup_impl(const Variables& in,
                                      const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& w = in[1]->shape();
  const int base = dw_opts_.base_axis;
  const int m = dw_opts_.multiplier;
  detail::check_conv_base_axis(tag(), x, base);
  if (m <= 0) {
    throw std::invalid_argument(
        msg(tag(), "multiplier ", m, " must be positive"));
  }
  const int64_t c = x[base];
  const size_t axes = x.size() - static_cast<size_t>(base) - 1;
  if (w.size() != axes + 1 || w[0] != c * m) {
    throw std::invalid_argument(
        msg(tag(), "weight with shape ", shape_str(w), " must be (", c * m,
            ", kernel...) with ", axes, " kernel sizes: x with shape ",
            shape_str(x), " has ", c, " channels at base_axis ", base,
            " and multiplier is ", m));
  }
  if (c > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " has too many channels"));
  }
  if (in.size() == 3 && in[2]->shape() != Shape{c * m}) {
    throw std::invalid_argument(msg(
        tag(), "bias with shape ", shape_str(in[2]->shape()),
        " must have shape ", shape_str({c * m}), ", one per output channel (",
        c, " channels times multiplier ", m, ")"));
  }
  // The convolution's weight (C * m, C / group = 1, kernel...), group = C.
  Shape wv{w[0], 1};
  wv.insert(wv.end(), w.begin() + 1, w.end());
  setup_geometry(in, out, wv, static_cast<int>(c));
}

namespace functions {

VariablePtr convolution(const VariablePtr& x, const VariablePtr& W,
                        const VariablePtr& b, const ConvolutionOptions& opts) {
  std::vector<VariablePtr> inputs{x, W};
  if (b) inputs.push_back(b);
  return apply_function1(decl::Convolution, opts, std::move(inputs));
}

VariablePtr depthwise_convolution(const VariablePtr& x,
                                  const VariablePtr& weight,
                                  const VariablePtr& bias,
                                  const DepthwiseConvolutionOptions& opts) {
  std::vector<VariablePtr> inputs{x, weight};
  if (bias) inputs.push_back(bias);
  return apply_function1(decl::DepthwiseConvolution, opts, std::move(inputs));
}

}  // namespace functions

namespace parametric_functions {

VariablePtr convolution(const VariablePtr& x, int64_t outmaps,
                        std::vector<int64_t> kernel, ParameterScope scope,
                        const ConvolutionParams& params) {
  const std::string tag = "[convolution] ";
  const int base = params.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  if (outmaps <= 0) {
    throw std::invalid_argument(
        msg(tag, "outmaps must be positive, got ", outmaps));
  }
  if (params.group <= 0 || xs[base] % params.group != 0) {
    throw std::invalid_argument(
        msg(tag, "x with shape ", shape_str(xs), " has ", xs[base],
            " channels, which group ", params.group, " does not divide"));
  }
  const int64_t k = shape_size(kernel);
  const int64_t in_per_group = xs[base] / params.group;
  Shape wshape{outmaps, in_per_group};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  const auto [W, b] = detail::conv_layer_parameters(
      scope["conv"], wshape, in_per_group * k, outmaps * k, outmaps, params);
  return functions::convolution(
      x, W, b,
      ConvolutionOptions{base, params.pad, params.stride, params.dilation,
                         params.group});
}

VariablePtr depthwise_convolution(const VariablePtr& x,
                                  std::vector<int64_t> kernel,
                                  ParameterScope scope,
                                  const DepthwiseConvolutionParams& params) {
  const std::string tag = "[depthwise_convolution] ";
  const int base = params.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  if (params.multiplier <= 0) {
    throw std::invalid_argument(
        msg(tag, "multiplier ", params.multiplier, " must be positive"));
  }
  const int64_t k = shape_size(kernel);
  const int64_t outmaps = xs[base] * params.multiplier;
  Shape wshape{outmaps};
  wshape.insert(wshape.end(), kernel.begin(), kernel.end());
  const auto [W, b] =
      detail::conv_layer_parameters(scope["depthwise_conv"], wshape, k,
                                    params.multiplier * k, outmaps, params);
  return functions::depthwise_convolution(
      x, W, b,
      DepthwiseConvolutionOptions{base, params.pad, params.stride,
                                  params.dilation, params.multiplier});
}

}  // namespace parametric_functions

}  // namespace mg
