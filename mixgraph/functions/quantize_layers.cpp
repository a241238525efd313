#include <mixgraph/functions/quantize_layers.hpp>

#include <stdexcept>
#include <type_traits>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>

namespace mg {

namespace {

// scale and zero_point (or the min-max ranges) against x: the same rank,
// each axis 1 or x's.
void check_broadcast(const std::string& tag, const char* name, const Shape& x,
                     const Shape& p) {
  bool ok = p.size() == x.size();
  for (size_t i = 0; ok && i < p.size(); ++i) ok = p[i] == 1 || p[i] == x[i];
  if (!ok) {
    throw std::invalid_argument(msg(tag, name, " with shape ", shape_str(p),
                                    " must have the rank of x ", shape_str(x),
                                    " and each axis 1 or x's"));
  }
}

// An input that forward writes into must be a leaf.
void check_leaf(const std::string& tag, const char* name, Variable* v,
                const char* why) {
  if (v->parent()) {
    throw std::invalid_argument(msg(tag, name, " is the output of ",
                                    v->parent()->function().name(), ": ", why,
                                    ", so it must be a leaf variable (a "
                                    "parameter)"));
  }
}

}  // namespace

void QuantizeLinear::setup_impl(const Variables& in, const Variables& out) {
  check_broadcast(tag(), "scale", in[0]->shape(), in[1]->shape());
  check_broadcast(tag(), "zero_point", in[0]->shape(), in[2]->shape());
  if (opts_.round_mode != "HALF_AWAY_FROM_ZERO" &&
      opts_.round_mode != "HALF_TO_EVEN") {
    throw std::invalid_argument(msg(tag(), "round_mode \"", opts_.round_mode,
                                    "\" must be \"HALF_AWAY_FROM_ZERO\" or "
                                    "\"HALF_TO_EVEN\""));
  }
  if (opts_.dtype == 1) {
    lo_ = opts_.narrow_range ? -127 : -128;
    hi_ = 127;
  } else if (opts_.dtype == 2) {
    lo_ = opts_.narrow_range ? 1 : 0;
    hi_ = 255;
  } else {
    throw std::invalid_argument(
        msg(tag(), "dtype ", opts_.dtype,
            " must be 1 (int8) or 2 (uint8), the NumPy type numbers "
            "NNabla quantizes to"));
  }
  out[0]->reshape(in[0]->shape());
}

void DequantizeLinear::setup_impl(const Variables& in, const Variables& out) {
  check_broadcast(tag(), "scale", in[0]->shape(), in[1]->shape());
  check_broadcast(tag(), "zero_point", in[0]->shape(), in[2]->shape());
  out[0]->reshape(in[0]->shape());
}

void MinMaxQuantize::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& p = in[3]->shape();
  const char* names[] = {"x", "qr_min", "qr_max", "ql_min", "ql_max"};
  for (int i = 1; i < 5; ++i) {
    if (in[i]->shape() != p) {
      throw std::invalid_argument(msg(
          tag(),
          "qr_min, qr_max, ql_min and ql_max must share one shape: ", names[i],
          " has ", shape_str(in[i]->shape()), ", ql_min ", shape_str(p)));
    }
  }
  check_broadcast(tag(), "ql_min", x, p);
  if (opts_.x_min_max) {
    check_leaf(tag(), "qr_min", in[1], "with x_min_max forward writes it");
    check_leaf(tag(), "qr_max", in[2], "with x_min_max forward writes it");
  }
  // The index into the range arrays of each element of x.
  const int r = static_cast<int>(x.size());
  param_index_.assign(static_cast<size_t>(shape_size(x)), 0);
  std::vector<int64_t> pos(r, 0), pstride(r, 0);
  int64_t s = 1;
  for (int a = r - 1; a >= 0; --a) {
    pstride[a] = p[a] == 1 ? 0 : s;
    s *= p[a];
  }
  for (size_t i = 0; i < param_index_.size(); ++i) {
    int64_t k = 0;
    for (int a = 0; a < r; ++a) k += pos[a] * pstride[a];
    param_index_[i] = k;
    for (int a = r - 1; a >= 0; --a) {
      if (++pos[a] < x[a]) break;
      pos[a] = 0;
    }
  }
  out[0]->reshape(x);
}

namespace detail {

void QuantizedWeightLayer::setup_inner(const FunctionDecl& decl,
                                       std::type_index options,
                                       const void* opts, const Variables& in,
                                       const Variables& out) {
  const Shape& w = in[1]->shape();
  for (int i = 2; i < bias_; ++i) {
    if (in[i]->shape() != w && !(i == 3 && bias_ == 4)) {
      throw std::invalid_argument(msg(tag(), this->decl().input(i).name,
                                      " with shape ", shape_str(in[i]->shape()),
                                      " must have weight's shape ",
                                      shape_str(w)));
    }
    check_leaf(tag(), this->decl().input(i).name, in[i], "forward writes it");
  }
  Context ctx;
  ctx.backends = {backend()};
  ctx.device_id = device().rfind("cuda:", 0) == 0 ? device().substr(5) : "0";
  inner_ = FunctionRegistry::instance().create(decl, ctx, options, opts);
  if (!wq_ || wq_->shape() != w) wq_ = make_variable(w);
  try {
    inner_->setup(inner_inputs(in), out);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(msg(tag(), e.what()));
  }
}

Variables QuantizedWeightLayer::inner_inputs(const Variables& in) const {
  Variables v{in[0], wq_.get()};
  if (static_cast<int>(in.size()) > bias_) v.push_back(in[bias_]);
  return v;
}

void QuantizedWeightLayer::backward_impl(
    const Variables& in, const Variables& out,
    const std::vector<bool>& propagate_down, const std::vector<bool>& accum) {
  std::vector<bool> pd{propagate_down[0], propagate_down[1]};
  std::vector<bool> ac{accum[0], accum[1]};
  if (static_cast<int>(in.size()) > bias_) {
    pd.push_back(propagate_down[bias_]);
    ac.push_back(accum[bias_]);
  }
  if (propagate_down[1]) wq_->set_grad(in[1]->grad());
  inner_->backward(inner_inputs(in), out, pd, ac);
  if (propagate_down[1]) wq_->set_grad(make_ndarray(wq_->shape()));
}

}  // namespace detail

namespace {

ConvolutionOptions conv_options(int base_axis, std::vector<int64_t> pad,
                                std::vector<int64_t> stride,
                                std::vector<int64_t> dilation, int group) {
  ConvolutionOptions o;
  o.base_axis = base_axis;
  o.pad = std::move(pad);
  o.stride = std::move(stride);
  o.dilation = std::move(dilation);
  o.group = group;
  return o;
}

}  // namespace

namespace {

void check_inq(const std::string& tag, int64_t num_bits,
               const std::vector<int64_t>& iterations,
               const std::string& algorithm, Variable* weight) {
  if (num_bits < 2) {
    throw std::invalid_argument(msg(tag, "num_bits ", num_bits,
                                    " must be at least 2 (zero and the sign "
                                    "take two bits)"));
  }
  if (algorithm != "largest_abs" && algorithm != "random") {
    throw std::invalid_argument(msg(tag, "selection_algorithm \"", algorithm,
                                    "\" must be \"largest_abs\" or "
                                    "\"random\""));
  }
  for (size_t i = 0; i < iterations.size(); ++i) {
    if (iterations[i] < 0 || (i > 0 && iterations[i] <= iterations[i - 1])) {
      throw std::invalid_argument(
          msg(tag, "inq_iterations must be increasing counts >= 0, got ",
              iterations[i], " at ", i));
    }
  }
  (void)weight;  // forward checks it is a leaf when it writes into it
}

}  // namespace

namespace detail {

template <class Options>
void QuantizedLayer<Options>::setup_impl(const Variables& in,
                                         const Variables& out) {
  const Options& o = this->opts_;
  constexpr bool conv =
      std::is_same_v<Options, BinaryConnectConvolutionOptions> ||
      std::is_same_v<Options, BinaryWeightConvolutionOptions> ||
      std::is_same_v<Options, INQConvolutionOptions>;
  const Shape& w = in[1]->shape();
  if constexpr (binary_weight_layer<Options> && conv) {
    if (w.empty() || shape_size(in[3]->shape()) != w[0]) {
      throw std::invalid_argument(
          msg(this->tag(), "alpha with shape ", shape_str(in[3]->shape()),
              " must have one element per output channel of weight ",
              shape_str(w)));
    }
  } else if constexpr (binary_weight_layer<Options>) {
    const Shape wout(w.begin() + (w.empty() ? 0 : 1), w.end());
    if (shape_size(in[3]->shape()) != shape_size(wout)) {
      throw std::invalid_argument(
          msg(this->tag(), "alpha with shape ", shape_str(in[3]->shape()),
              " must have ", shape_size(wout),
              " elements, one per output of weight ", shape_str(w)));
    }
  }
  if constexpr (inq_layer<Options>) {
    check_inq(this->tag(), o.num_bits, o.inq_iterations, o.selection_algorithm,
              in[1]);
  }
  if constexpr (conv) {
    const ConvolutionOptions c =
        conv_options(o.base_axis, o.pad, o.stride, o.dilation, o.group);
    this->setup_inner(decl::Convolution, typeid(ConvolutionOptions), &c, in,
                      out);
  } else {
    const AffineOptions a{o.base_axis};
    this->setup_inner(decl::Affine, typeid(AffineOptions), &a, in, out);
  }
}

template class QuantizedLayer<BinaryConnectAffineOptions>;
template class QuantizedLayer<BinaryConnectConvolutionOptions>;
template class QuantizedLayer<BinaryWeightAffineOptions>;
template class QuantizedLayer<BinaryWeightConvolutionOptions>;
template class QuantizedLayer<INQAffineOptions>;
template class QuantizedLayer<INQConvolutionOptions>;

}  // namespace detail

namespace functions {

namespace {
std::vector<VariablePtr> with_bias(std::vector<VariablePtr> v,
                                   const VariablePtr& bias) {
  if (bias) v.push_back(bias);
  return v;
}
}  // namespace

VariablePtr quantize_linear(const VariablePtr& x, const VariablePtr& scale,
                            const VariablePtr& zero_point,
                            const QuantizeLinearOptions& opts) {
  return apply_function1(decl::QuantizeLinear, opts, {x, scale, zero_point});
}

VariablePtr dequantize_linear(const VariablePtr& x, const VariablePtr& scale,
                              const VariablePtr& zero_point) {
  return apply_function1(decl::DequantizeLinear, DequantizeLinearOptions{},
                         {x, scale, zero_point});
}

VariablePtr min_max_quantize(const VariablePtr& x, const VariablePtr& qr_min,
                             const VariablePtr& qr_max,
                             const VariablePtr& ql_min,
                             const VariablePtr& ql_max,
                             const MinMaxQuantizeOptions& opts) {
  return apply_function1(decl::MinMaxQuantize, opts,
                         {x, qr_min, qr_max, ql_min, ql_max});
}

VariablePtr binary_connect_affine(const VariablePtr& x,
                                  const VariablePtr& weight,
                                  const VariablePtr& binary_weight,
                                  const VariablePtr& bias,
                                  const BinaryConnectAffineOptions& opts) {
  return apply_function1(decl::BinaryConnectAffine, opts,
                         with_bias({x, weight, binary_weight}, bias));
}

VariablePtr binary_connect_convolution(
    const VariablePtr& x, const VariablePtr& weight,
    const VariablePtr& binary_weight, const VariablePtr& bias,
    const BinaryConnectConvolutionOptions& opts) {
  return apply_function1(decl::BinaryConnectConvolution, opts,
                         with_bias({x, weight, binary_weight}, bias));
}

VariablePtr binary_weight_affine(const VariablePtr& x,
                                 const VariablePtr& weight,
                                 const VariablePtr& binary_weight,
                                 const VariablePtr& alpha,
                                 const VariablePtr& bias,
                                 const BinaryWeightAffineOptions& opts) {
  return apply_function1(decl::BinaryWeightAffine, opts,
                         with_bias({x, weight, binary_weight, alpha}, bias));
}

VariablePtr binary_weight_convolution(
    const VariablePtr& x, const VariablePtr& weight,
    const VariablePtr& binary_weight, const VariablePtr& alpha,
    const VariablePtr& bias, const BinaryWeightConvolutionOptions& opts) {
  return apply_function1(decl::BinaryWeightConvolution, opts,
                         with_bias({x, weight, binary_weight, alpha}, bias));
}

VariablePtr inq_affine(const VariablePtr& x, const VariablePtr& weight,
                       const VariablePtr& indicator_fixedweights,
                       const VariablePtr& bias, const INQAffineOptions& opts) {
  return apply_function1(decl::INQAffine, opts,
                         with_bias({x, weight, indicator_fixedweights}, bias));
}

VariablePtr inq_convolution(const VariablePtr& x, const VariablePtr& weight,
                            const VariablePtr& indicator_fixedweights,
                            const VariablePtr& bias,
                            const INQConvolutionOptions& opts) {
  return apply_function1(decl::INQConvolution, opts,
                         with_bias({x, weight, indicator_fixedweights}, bias));
}

}  // namespace functions

namespace parametric_functions {

namespace {

struct AffineLayer {
  int64_t k;
  Shape w;
  VariablePtr W, b;
};

AffineLayer affine_layer(const std::string& tag, const VariablePtr& x,
                         int64_t n_outmaps, ParameterScope layer,
                         const QuantizedAffineParams& p) {
  if (!x) throw std::invalid_argument(msg(tag, "x is a null variable"));
  const Shape& xs = x->shape();
  if (p.base_axis < 0 || p.base_axis >= static_cast<int>(xs.size())) {
    throw std::invalid_argument(msg(tag, "base_axis ", p.base_axis,
                                    " must be in [0, ", xs.size(),
                                    ") for x with shape ", shape_str(xs)));
  }
  if (n_outmaps <= 0) {
    throw std::invalid_argument(
        msg(tag, "n_outmaps must be positive, got ", n_outmaps));
  }
  AffineLayer l;
  l.k = shape_size(xs, p.base_axis, static_cast<int>(xs.size()));
  l.w = {l.k, n_outmaps};
  l.W = layer.get_or_create(
      "W", l.w,
      p.w_init ? p.w_init : glorot_uniform_initializer(l.k, n_outmaps));
  if (p.with_bias) {
    l.b = layer.get_or_create("b", {n_outmaps},
                              p.b_init ? p.b_init : constant_initializer(0.0f));
  }
  return l;
}

struct ConvLayer {
  Shape w;
  VariablePtr W, b;
};

ConvLayer conv_layer(const std::string& tag, const VariablePtr& x,
                     int64_t outmaps, const std::vector<int64_t>& kernel,
                     ParameterScope layer,
                     const QuantizedConvolutionParams& p) {
  const int base = p.base_axis;
  const Shape& xs = detail::conv_layer_input_shape(tag, x, base, kernel);
  if (outmaps <= 0) {
    throw std::invalid_argument(
        msg(tag, "outmaps must be positive, got ", outmaps));
  }
  if (p.group <= 0 || xs[base] % p.group != 0) {
    throw std::invalid_argument(
        msg(tag, "x with shape ", shape_str(xs), " has ", xs[base],
            " channels, which group ", p.group, " does not divide"));
  }
  const int64_t k = shape_size(kernel);
  const int64_t in_per_group = xs[base] / p.group;
  ConvLayer l;
  l.w = {outmaps, in_per_group};
  l.w.insert(l.w.end(), kernel.begin(), kernel.end());
  const auto [W, b] = detail::conv_layer_parameters(
      layer, l.w, in_per_group * k, outmaps * k, outmaps, p);
  l.W = W;
  l.b = b;
  return l;
}

// A layer's options from its parametric function's parameters: the fields
// its options have (the convolution's geometry, the binary layers' zero,
// INQ's schedule).
template <class Options, class Params>
Options layer_options(const Params& p) {
  Options o;
  o.base_axis = p.base_axis;
  if constexpr (std::is_same_v<Params, QuantizedConvolutionParams>) {
    o.pad = p.pad;
    o.stride = p.stride;
    o.dilation = p.dilation;
    o.group = p.group;
  }
  if constexpr (detail::inq_layer<Options>) {
    o.num_bits = p.num_bits;
    o.inq_iterations = p.inq_iterations;
    o.selection_algorithm = p.selection_algorithm;
    o.seed = p.seed;
  } else {
    o.quantize_zero_to = p.quantize_zero_to;
  }
  return o;
}

}  // namespace

VariablePtr binary_connect_affine(const VariablePtr& x, int64_t n_outmaps,
                                  ParameterScope scope,
                                  const QuantizedAffineParams& params) {
  ParameterScope layer = scope["bicon_affine"];
  const AffineLayer l =
      affine_layer("[binary_connect_affine] ", x, n_outmaps, layer, params);
  auto Wb = layer.get_or_create("Wb", l.w, constant_initializer(0.0f), false);
  return functions::binary_connect_affine(
      x, l.W, Wb, l.b, layer_options<BinaryConnectAffineOptions>(params));
}

VariablePtr binary_weight_affine(const VariablePtr& x, int64_t n_outmaps,
                                 ParameterScope scope,
                                 const QuantizedAffineParams& params) {
  ParameterScope layer = scope["bwn_affine"];
  const AffineLayer l =
      affine_layer("[binary_weight_affine] ", x, n_outmaps, layer, params);
  auto Wb = layer.get_or_create("Wb", l.w, constant_initializer(0.0f), false);
  auto alpha = layer.get_or_create("alpha", {n_outmaps},
                                   constant_initializer(0.0f), false);
  return functions::binary_weight_affine(
      x, l.W, Wb, alpha, l.b, layer_options<BinaryWeightAffineOptions>(params));
}

VariablePtr inq_affine(const VariablePtr& x, int64_t n_outmaps,
                       ParameterScope scope,
                       const QuantizedAffineParams& params) {
  ParameterScope layer = scope["inq_affine"];
  const AffineLayer l =
      affine_layer("[inq_affine] ", x, n_outmaps, layer, params);
  auto I = layer.get_or_create("I", l.w, constant_initializer(0.0f), false);
  return functions::inq_affine(x, l.W, I, l.b,
                               layer_options<INQAffineOptions>(params));
}

VariablePtr binary_connect_convolution(
    const VariablePtr& x, int64_t outmaps, std::vector<int64_t> kernel,
    ParameterScope scope, const QuantizedConvolutionParams& params) {
  ParameterScope layer = scope["bicon_conv"];
  const ConvLayer l = conv_layer("[binary_connect_convolution] ", x, outmaps,
                                 kernel, layer, params);
  auto Wb = layer.get_or_create("Wb", l.w, constant_initializer(0.0f), false);
  return functions::binary_connect_convolution(
      x, l.W, Wb, l.b, layer_options<BinaryConnectConvolutionOptions>(params));
}

VariablePtr binary_weight_convolution(
    const VariablePtr& x, int64_t outmaps, std::vector<int64_t> kernel,
    ParameterScope scope, const QuantizedConvolutionParams& params) {
  ParameterScope layer = scope["bwn_conv"];
  const ConvLayer l = conv_layer("[binary_weight_convolution] ", x, outmaps,
                                 kernel, layer, params);
  auto Wb = layer.get_or_create("Wb", l.w, constant_initializer(0.0f), false);
  auto alpha = layer.get_or_create("alpha", {outmaps},
                                   constant_initializer(0.0f), false);
  return functions::binary_weight_convolution(
      x, l.W, Wb, alpha, l.b,
      layer_options<BinaryWeightConvolutionOptions>(params));
}

VariablePtr inq_convolution(const VariablePtr& x, int64_t outmaps,
                            std::vector<int64_t> kernel, ParameterScope scope,
                            const QuantizedConvolutionParams& params) {
  ParameterScope layer = scope["inq_conv"];
  const ConvLayer l =
      conv_layer("[inq_convolution] ", x, outmaps, kernel, layer, params);
  auto I = layer.get_or_create("I", l.w, constant_initializer(0.0f), false);
  return functions::inq_convolution(
      x, l.W, I, l.b, layer_options<INQConvolutionOptions>(params));
}

}  // namespace parametric_functions

}  // namespace mg
