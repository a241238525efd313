// Quantization layers, as NNabla's "Quantization Neural Network Layers":
// QuantizeLinear and DequantizeLinear (ONNX's linear quantization),
// MinMaxQuantize (a quantization range learnt or tracked from the data), and
// the layers whose weight is quantized before an Affine or Convolution:
// BinaryConnect (sign(W)), BinaryWeight (sign(W) scaled by mean |W| per
// output, XNOR-Net's), INQ (weights fixed to powers of two step by step).
// The weight layers run the Affine and Convolution kernels on the quantized
// weight, and write it into their binary_weight / alpha / indicator inputs
// as NNabla does.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <typeindex>
#include <vector>

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

// ---------------------------------------------------------------------------
// QuantizeLinear, DequantizeLinear

struct QuantizeLinearOptions {
  /// "HALF_AWAY_FROM_ZERO" or "HALF_TO_EVEN".
  std::string round_mode = "HALF_AWAY_FROM_ZERO";
  /// Leaves out the lowest level (int8: [-127, 127]; uint8: [1, 255]).
  bool narrow_range = false;
  /// NumPy's type number of the integer grid: 1 int8, 2 uint8 (the two
  /// NNabla gives a range).
  int64_t dtype = 1;

  MG_FIELDS(round_mode, narrow_range, dtype);
};

struct DequantizeLinearOptions {};

namespace decl {
/// QuantizeLinear's declaration: x gets the straight-through grad dy /
/// scale; scale and zero_point have none (NNabla refuses them).
inline constexpr FunctionDeclOf<QuantizeLinearOptions> QuantizeLinear{
    {"QuantizeLinear",
     "quantize_linear",
     {Port{"x"}, Port{"scale", Port::floating, false},
      Port{"zero_point", Port::floating, false}},
     {Port{"y"}}}};
/// DequantizeLinear's declaration: x gets dy * scale.
inline constexpr FunctionDeclOf<DequantizeLinearOptions> DequantizeLinear{
    {"DequantizeLinear",
     "dequantize_linear",
     {Port{"x"}, Port{"scale", Port::floating, false},
      Port{"zero_point", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y = saturate(round(x / scale) + saturate(round(zero_point))): whole
/// numbers in [-128, 127] (int8) or [0, 255] (uint8), exact in every
/// floating type. scale and zero_point have x's rank, each axis 1 or x's.
class QuantizeLinear : public FunctionWith<QuantizeLinearOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  float lo_ = -128, hi_ = 127;  // the saturation range
};

/// y = (x - zero_point) * scale, scale and zero_point broadcast as in
/// QuantizeLinear.
class DequantizeLinear : public Function {
 public:
  explicit DequantizeLinear(const DequantizeLinearOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

// ---------------------------------------------------------------------------
// MinMaxQuantize

struct MinMaxQuantizeOptions {
  /// The exponential moving average's decay (ema).
  float decay = 0.999f;
  /// qr_min and qr_max from x's min and max at each forward.
  bool x_min_max = false;
  /// With x_min_max, a moving average of them instead.
  bool ema = false;
  /// The straight-through grad is zero outside [qr_min, qr_max].
  bool ste_fine_grained = true;
  /// qr_max is kept at least qr_min + eps.
  float eps = 0.01f;

  MG_FIELDS(decay, x_min_max, ema, ste_fine_grained, eps);
};

namespace decl {
/// MinMaxQuantize's declaration: x, qr_min and qr_max get grads; the levels
/// none.
inline constexpr FunctionDeclOf<MinMaxQuantizeOptions> MinMaxQuantize{
    {"MinMaxQuantize",
     "min_max_quantize",
     {Port{"x"}, Port{"qr_min"}, Port{"qr_max"},
      Port{"ql_min", Port::floating, false},
      Port{"ql_max", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// NNabla's min-max quantization: y = round((clip(x, m, M) - m) / s) s + m
/// with s = (qr_max - qr_min) / (ql_max - ql_min) and (m, M) the range
/// nudged so that 0 is on the grid. qr_min, qr_max, ql_min and ql_max share
/// a shape of x's rank, each axis 1 (reduced over) or x's. With x_min_max,
/// forward writes x's min and max (or their moving average with ema) into
/// qr_min and qr_max, which must then be leaves (parameters); a qr_max
/// closer than eps to qr_min is moved to qr_min + eps in place, as NNabla
/// does. Grads are straight through: x's (zero outside [m, M] with
/// ste_fine_grained); with neither x_min_max nor ema, qr_min gets the sum of
/// dy where x < m and qr_max where x > M.
class MinMaxQuantize : public FunctionWith<MinMaxQuantizeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 0; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// For each element of x, the index of its element in qr_min (and the
  /// others).
  std::vector<int64_t> param_index_;
  /// The nudged range of the last forward, per element of qr_min.
  std::vector<float> lo_, hi_;
};

// ---------------------------------------------------------------------------
// Weight-quantized Affine and Convolution

struct BinaryConnectAffineOptions {
  int base_axis = 1;
  /// sign(0): the value a zero weight binarizes to.
  float quantize_zero_to = 1.0f;

  MG_FIELDS(base_axis, quantize_zero_to);
};
struct BinaryWeightAffineOptions : BinaryConnectAffineOptions {};

struct BinaryConnectConvolutionOptions {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  float quantize_zero_to = 1.0f;

  MG_FIELDS(base_axis, pad, stride, dilation, group, quantize_zero_to);
};
struct BinaryWeightConvolutionOptions : BinaryConnectConvolutionOptions {};

struct INQAffineOptions {
  int base_axis = 1;
  /// Bits per weight, two of them for zero and the sign.
  int64_t num_bits = 4;
  /// The forward counts at which half the learnable weights are fixed (all
  /// of them at the last).
  std::vector<int64_t> inq_iterations;
  /// "largest_abs" or "random".
  std::string selection_algorithm = "largest_abs";
  /// The random selection's seed; -1 draws from mg::random_engine().
  int64_t seed = -1;

  MG_FIELDS(base_axis, num_bits, inq_iterations, selection_algorithm, seed);
};

struct INQConvolutionOptions {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  int64_t num_bits = 4;
  std::vector<int64_t> inq_iterations;
  std::string selection_algorithm = "largest_abs";
  int64_t seed = -1;

  MG_FIELDS(base_axis, pad, stride, dilation, group, num_bits, inq_iterations,
            selection_algorithm, seed);
};

namespace decl {
/// The binary layers' declarations (NNabla's input names): the float
/// weight gets the straight-through grad; binary_weight and alpha are
/// written by forward and have none.
inline constexpr FunctionDeclOf<BinaryConnectAffineOptions> BinaryConnectAffine{
    {"BinaryConnectAffine",
     "binary_connect_affine",
     {Port{"x"}, Port{"weight"}, Port{"binary_weight", Port::floating, false},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}}}};
inline constexpr FunctionDeclOf<BinaryConnectConvolutionOptions>
    BinaryConnectConvolution{{"BinaryConnectConvolution",
                              "binary_connect_convolution",
                              {Port{"x"}, Port{"weight"},
                               Port{"binary_weight", Port::floating, false},
                               Port{"bias", Port::floating, true, true}},
                              {Port{"y"}}}};
inline constexpr FunctionDeclOf<BinaryWeightAffineOptions> BinaryWeightAffine{
    {"BinaryWeightAffine",
     "binary_weight_affine",
     {Port{"x"}, Port{"weight"}, Port{"binary_weight", Port::floating, false},
      Port{"alpha", Port::floating, false},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}}}};
inline constexpr FunctionDeclOf<BinaryWeightConvolutionOptions>
    BinaryWeightConvolution{{"BinaryWeightConvolution",
                             "binary_weight_convolution",
                             {Port{"x"}, Port{"weight"},
                              Port{"binary_weight", Port::floating, false},
                              Port{"alpha", Port::floating, false},
                              Port{"bias", Port::floating, true, true}},
                             {Port{"y"}}}};
/// INQ's declarations: indicator_fixedweights (1 fixed, 0 learnable) is
/// integer data, updated by forward.
inline constexpr FunctionDeclOf<INQAffineOptions> INQAffine{
    {"INQAffine",
     "inq_affine",
     {Port{"x"}, Port{"weight"},
      Port{"indicator_fixedweights", Port::integer, false},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}}}};
inline constexpr FunctionDeclOf<INQConvolutionOptions> INQConvolution{
    {"INQConvolution",
     "inq_convolution",
     {Port{"x"}, Port{"weight"},
      Port{"indicator_fixedweights", Port::integer, false},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

namespace detail {
/// What the weight-quantized layers share: an inner Affine or Convolution
/// (created for this function's backend, so the same kernels run) on x, a
/// weight buffer and the bias. The weight buffer wq_ holds the quantized
/// weight; at backward its grad is the float weight's grad, which so gets
/// the straight-through grad (NNabla's rule for all of them).
class QuantizedWeightLayer : public Function {
 public:
  explicit QuantizedWeightLayer(int weight_inputs) : bias_(weight_inputs + 1) {}
  bool grad_depends_input_data(int i) const override { return i == 0; }

 protected:
  /// Checks the extra inputs after the weight (same shape as it, leaves)
  /// and sets the inner function up on x, wq_ (the weight's shape) and the
  /// bias; its errors come back under this function's tag.
  void setup_inner(const FunctionDecl& decl, std::type_index options,
                   const void* opts, const Variables& in, const Variables& out);
  /// The inner function's inputs: x, wq_, bias.
  Variables inner_inputs(const Variables& in) const;
  /// Runs the inner backward with the weight's grad written through wq_
  /// (every layer's backward).
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override;

  const int bias_;  // the bias's input index
  std::shared_ptr<Function> inner_;
  VariablePtr wq_;
};
}  // namespace detail

namespace detail {
/// Whether the layer is BinaryWeight's (alpha is its fourth input) or
/// INQ's (its backward reads the weight's data).
template <class Options>
inline constexpr bool binary_weight_layer =
    std::is_same_v<Options, BinaryWeightAffineOptions> ||
    std::is_same_v<Options, BinaryWeightConvolutionOptions>;
template <class Options>
inline constexpr bool inq_layer =
    std::is_same_v<Options, INQAffineOptions> ||
    std::is_same_v<Options, INQConvolutionOptions>;

/// The six weight-quantized layers, one class: the options say which.
/// setup_impl checks the layer's own arguments and sets the inner Affine or
/// Convolution up (functions/quantize_layers.cpp).
template <class Options>
class QuantizedLayer : public FunctionWith<Options, QuantizedWeightLayer> {
 public:
  explicit QuantizedLayer(const Options& opts)
      : FunctionWith<Options, QuantizedWeightLayer>(
            opts, binary_weight_layer<Options> ? 3 : 2) {}
  bool grad_depends_input_data(int i) const override {
    return inq_layer<Options> ? i < 2 : i == 0;
  }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};
}  // namespace detail

/// y = affine(x, sign(weight), bias); forward writes sign(weight) into
/// binary_weight. weight: (K, outmaps...).
using BinaryConnectAffine = detail::QuantizedLayer<BinaryConnectAffineOptions>;
/// y = convolution(x, sign(weight), bias); weight (OC, C / group,
/// kernel...).
using BinaryConnectConvolution =
    detail::QuantizedLayer<BinaryConnectConvolutionOptions>;
/// y = affine(x, sign(weight) * alpha, bias) with alpha[j] the mean of
/// |weight[:, j]| over the K inputs (NNabla's code; its docs say 1 / the
/// L1 norm); forward writes sign(weight) into binary_weight and alpha
/// (outmaps...) into alpha.
using BinaryWeightAffine = detail::QuantizedLayer<BinaryWeightAffineOptions>;
/// y = convolution(x, sign(weight) * alpha, bias) with alpha[n] (OC,) the
/// mean of |weight[n]| over one filter.
using BinaryWeightConvolution =
    detail::QuantizedLayer<BinaryWeightConvolutionOptions>;
/// Incremental network quantization (NNabla's): at each forward the fixed
/// weights (indicator 1) are restored to the values of the last forward
/// (a solver's step on them is undone), at the forward counts in
/// inq_iterations half of the learnable weights become fixed (the largest
/// magnitudes, or each with probability 1/2), and the fixed weights are
/// written back quantized to 0 or +-2^e, e in [n2, n1] from the largest
/// magnitude and num_bits; then y = affine(x, weight, bias). weight must be
/// a leaf (a parameter), as must the indicator. The grads are Affine's.
using INQAffine = detail::QuantizedLayer<INQAffineOptions>;
/// INQ on a convolution: weight (OC, C / group, kernel...).
using INQConvolution = detail::QuantizedLayer<INQConvolutionOptions>;

namespace functions {
/// Linear quantization onto int8 or uint8 levels (values held in the
/// floating type, exactly).
VariablePtr quantize_linear(const VariablePtr& x, const VariablePtr& scale,
                            const VariablePtr& zero_point,
                            const QuantizeLinearOptions& opts = {});
/// (x - zero_point) * scale.
VariablePtr dequantize_linear(const VariablePtr& x, const VariablePtr& scale,
                              const VariablePtr& zero_point);
VariablePtr min_max_quantize(const VariablePtr& x, const VariablePtr& qr_min,
                             const VariablePtr& qr_max,
                             const VariablePtr& ql_min,
                             const VariablePtr& ql_max,
                             const MinMaxQuantizeOptions& opts = {});
VariablePtr binary_connect_affine(const VariablePtr& x,
                                  const VariablePtr& weight,
                                  const VariablePtr& binary_weight,
                                  const VariablePtr& bias = nullptr,
                                  const BinaryConnectAffineOptions& opts = {});
VariablePtr binary_connect_convolution(
    const VariablePtr& x, const VariablePtr& weight,
    const VariablePtr& binary_weight, const VariablePtr& bias = nullptr,
    const BinaryConnectConvolutionOptions& opts = {});
VariablePtr binary_weight_affine(const VariablePtr& x,
                                 const VariablePtr& weight,
                                 const VariablePtr& binary_weight,
                                 const VariablePtr& alpha,
                                 const VariablePtr& bias = nullptr,
                                 const BinaryWeightAffineOptions& opts = {});
VariablePtr binary_weight_convolution(
    const VariablePtr& x, const VariablePtr& weight,
    const VariablePtr& binary_weight, const VariablePtr& alpha,
    const VariablePtr& bias = nullptr,
    const BinaryWeightConvolutionOptions& opts = {});
VariablePtr inq_affine(const VariablePtr& x, const VariablePtr& weight,
                       const VariablePtr& indicator_fixedweights,
                       const VariablePtr& bias = nullptr,
                       const INQAffineOptions& opts = {});
VariablePtr inq_convolution(const VariablePtr& x, const VariablePtr& weight,
                            const VariablePtr& indicator_fixedweights,
                            const VariablePtr& bias = nullptr,
                            const INQConvolutionOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

/// The binary and INQ affine layers' parameters (NNabla's).
struct QuantizedAffineParams {
  int base_axis = 1;
  bool with_bias = true;
  /// Binary layers.
  float quantize_zero_to = 1.0f;
  /// INQ layers.
  int64_t num_bits = 4;
  std::vector<int64_t> inq_iterations;
  std::string selection_algorithm = "largest_abs";
  int64_t seed = -1;
  /// W Glorot-uniform, b zero, Wb and alpha zero (forward fills them), the
  /// INQ indicator I zero, unless given.
  Initializer w_init;
  Initializer b_init;
};

struct QuantizedConvolutionParams {
  int base_axis = 1;
  std::vector<int64_t> pad, stride, dilation;
  int group = 1;
  bool with_bias = true;
  float quantize_zero_to = 1.0f;
  int64_t num_bits = 4;
  std::vector<int64_t> inq_iterations;
  std::string selection_algorithm = "largest_abs";
  int64_t seed = -1;
  Initializer w_init;
  Initializer b_init;
};

/// NNabla's names: `scope`/bicon_affine/{W, Wb, b}; W gets grads, Wb none.
VariablePtr binary_connect_affine(const VariablePtr& x, int64_t n_outmaps,
                                  ParameterScope scope,
                                  const QuantizedAffineParams& params = {});
/// `scope`/bwn_affine/{W, Wb, alpha, b}.
VariablePtr binary_weight_affine(const VariablePtr& x, int64_t n_outmaps,
                                 ParameterScope scope,
                                 const QuantizedAffineParams& params = {});
/// `scope`/inq_affine/{W, I, b}.
VariablePtr inq_affine(const VariablePtr& x, int64_t n_outmaps,
                       ParameterScope scope,
                       const QuantizedAffineParams& params = {});
/// `scope`/bicon_conv/{W, Wb, b}; W (outmaps, C / group, kernel...).
VariablePtr binary_connect_convolution(
    const VariablePtr& x, int64_t outmaps, std::vector<int64_t> kernel,
    ParameterScope scope, const QuantizedConvolutionParams& params = {});
/// `scope`/bwn_conv/{W, Wb, alpha, b}.
VariablePtr binary_weight_convolution(
    const VariablePtr& x, int64_t outmaps, std::vector<int64_t> kernel,
    ParameterScope scope, const QuantizedConvolutionParams& params = {});
/// `scope`/inq_conv/{W, I, b}.
VariablePtr inq_convolution(const VariablePtr& x, int64_t outmaps,
                            std::vector<int64_t> kernel, ParameterScope scope,
                            const QuantizedConvolutionParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
