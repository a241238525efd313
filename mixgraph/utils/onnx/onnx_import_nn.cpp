// load_onnx's converters of the layers: convolution, Gemm and MatMul,
// pooling, the normalizations, softmax, Resize.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/deconvolution.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/interpolate.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/onnx_resize.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/prelu.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/utils/onnx/onnx_import.hpp>

namespace mg::onnx_import {

namespace F = functions;

namespace {

// The attributes Conv and ConvTranspose share, for W's k kernel axes.
template <class Options>
Options conv_options(const Op& op) {
  const size_t k = op.shape(1).size() - 2;
  Options o;
  o.pad = symmetric_pads(op, k);
  o.stride = op.ints("strides", std::vector<int64_t>(k, 1));
  o.dilation = op.ints("dilations", std::vector<int64_t>(k, 1));
  o.group = static_cast<int>(op.i("group", 1));
  return o;
}

void conv(const Op& op) {
  const auto o = conv_options<ConvolutionOptions>(op);
  op.set(0, F::convolution(op.x(0), op.x(1), op.has(2) ? op.x(2) : nullptr, o));
}

void conv_transpose(const Op& op) {
  if (op.attr("output_shape")) op.fail("output_shape is not supported");
  auto o = conv_options<DeconvolutionOptions>(op);
  o.output_padding = op.ints("output_padding");
  op.set(0,
         F::deconvolution(op.x(0), op.x(1), op.has(2) ? op.x(2) : nullptr, o));
}

void gemm(const Op& op) {
  VariablePtr a = op.x(0);
  if (a->ndim() != 2) op.fail("A is " + shape_str(a->shape()) + ", not 2-D");
  if (op.i("transA", 0)) a = F::transpose(a, {1, 0});
  // B as the affine weight (K, M): a transposed initializer is read
  // transposed once, into the parameter, not at every forward.
  VariablePtr w;
  if (op.i("transB", 0)) {
    if (op.is_const(1)) {
      Tensor t = op.constant(1);
      if (t.shape.size() != 2) op.fail("B is not 2-D");
      const int64_t M = t.shape[0], K = t.shape[1];
      const size_t e = dtype_size(t.dtype);
      std::vector<uint8_t> tb(t.bytes.size());
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k)
          std::memcpy(&tb[(k * M + m) * e], &t.bytes[(m * K + k) * e], e);
      t.bytes = std::move(tb);
      t.shape = {K, M};
      w = op.parameter_from(op.node.input(1), t, true);
    } else {
      w = F::transpose(op.x(1), {1, 0});
    }
  } else {
    w = op.x(1);
  }
  const double alpha = op.f("alpha", 1.0), beta = op.f("beta", 1.0);
  const int64_t M = w->shape()[1];
  VariablePtr bias;
  VariablePtr c;
  if (op.has(2)) {
    c = op.x(2);
    if (c->size() == M && beta == 1.0 && alpha == 1.0) {
      bias = op.x(2, Shape{M});
      c = nullptr;
    }
  }
  VariablePtr y = F::affine(a, w, bias);
  if (alpha != 1.0) y = F::mul_scalar(y, static_cast<float>(alpha));
  if (c) {
    if (beta != 1.0) c = F::mul_scalar(c, static_cast<float>(beta));
    if (c->ndim() < 2) c = F::reshape(c, Shape{1, c->size()});
    y = F::add2(y, c);
  }
  op.set(0, y);
}

void matmul(const Op& op) {
  VariablePtr a = op.x(0);
  if (op.is_const(1) && op.constant(1).shape.size() == 2 && a->ndim() >= 2) {
    // x W with a 2-D weight: an affine over the last axis.
    op.set(0, F::affine(a, op.x(1), nullptr,
                        AffineOptions{static_cast<int>(a->ndim() - 1)}));
    return;
  }
  op.set(0, F::batch_matmul(a, op.x(1)));
}

void batch_norm(const Op& op) {
  if (op.i("training_mode", 0) != 0) op.fail("training_mode 1");
  const Shape& xs = op.shape(0);
  if (xs.size() < 2) op.fail("X has no channel axis");
  Shape ps(xs.size(), 1);
  ps[1] = xs[1];
  BatchNormalizationOptions o;
  o.axes = {1};
  o.eps = static_cast<float>(op.f("epsilon", 1e-5));
  o.decay_rate = 1.0f - static_cast<float>(op.f("momentum", 0.9));
  o.batch_stat = false;
  op.set(0, F::batch_normalization(op.x(0), op.x(2, ps), op.x(1, ps),
                                   op.x(3, ps, false), op.x(4, ps, false), o));
}

Rule pool(bool max) {
  return [max](const Op& op) {
    const std::vector<int64_t> kernel = op.ints("kernel_shape");
    const size_t k = kernel.size();
    if (op.shape(0).size() != k + 2) op.fail("X is not (N, C, spatial...)");
    if (op.ints("dilations", std::vector<int64_t>(k, 1)) !=
        std::vector<int64_t>(k, 1)) {
      op.fail("dilations other than 1 are not supported");
    }
    op.need_default("storage_order", 0);
    PoolingOptions o;
    o.pad = symmetric_pads(op, k);
    o.stride = op.ints("strides", std::vector<int64_t>(k, 1));
    o.including_pad = op.i("count_include_pad", 0) != 0;
    VariablePtr x = op.x(0);
    if (op.i("ceil_mode", 0)) {
      // Output sizes rounded up, a window that would start past the input
      // and its left padding dropped (PyTorch's rule, which its exporter
      // writes): max pooling pads the end of x with -inf instead (a max
      // ignores it: every window keeps an element of x), NNabla's
      // ignore_border false where that gives the same sizes.
      std::vector<int> ends;
      bool padded = false;
      for (size_t a = 0; a < k; ++a) {
        const int64_t in = op.shape(0)[2 + a], p = o.pad[a], s = o.stride[a];
        const int64_t span = in + 2 * p - kernel[a];
        int64_t want = (span + s - 1) / s + 1;
        if ((want - 1) * s >= in + p) --want;
        const int64_t extra = (want - 1) * s + kernel[a] - (in + 2 * p);
        ends.push_back(static_cast<int>(p));
        ends.push_back(static_cast<int>(p + std::max<int64_t>(extra, 0)));
        padded = padded || extra > 0;
      }
      if (padded && !max) {
        op.fail(
            "ceil_mode 1 of an AveragePool whose last window reaches "
            "past the padding has no mixgraph equivalent");
      }
      if (padded) {
        x = F::pad(x, ends, "constant",
                   -std::numeric_limits<float>::infinity());
        o.pad.assign(k, 0);
      }
    }
    op.set(0, max ? F::max_pooling(x, kernel, o)
                  : F::average_pooling(x, kernel, o));
  };
}

// Resize: Interpolate where it computes the same (linear with half_pixel,
// align_corners or asymmetric coordinates; nearest rounding down with
// asymmetric or tf_half_pixel_for_nn ones: what PyTorch writes for its
// upsampling), which save_onnx writes back as Resize; ONNXResize, which
// reads every opset-17 option, for the rest (cubic, nearest's other
// rounding rules, pytorch_half_pixel, tf_crop_and_resize).
void resize(const Op& op) {
  const Shape& s = op.shape(0);
  if (op.attr("axes") || op.i("antialias", 0)) {
    op.fail("axes / antialias (opset 18) are not read");
  }
  const std::string mode = op.s("mode", "nearest");
  const std::string coords =
      op.s("coordinate_transformation_mode", "half_pixel");
  const std::string nearest_mode = op.s("nearest_mode", "round_prefer_floor");
  // The sizes (or scales) input; ONNX writes an absent one as "" or as an
  // empty tensor.
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  if (op.has(3)) sizes = op.constant(3).ints();
  if (sizes.empty() && op.has(2)) scales = op.constant(2).reals();
  if (sizes.size() != s.size() && scales.size() != s.size()) {
    op.fail("needs sizes or scales for every axis of its input of shape " +
            shape_str(s));
  }
  InterpolateOptions o;
  o.mode = mode;
  o.align_corners = false;
  bool as_interpolate = true;
  if (mode == "linear") {
    o.align_corners = coords == "align_corners";
    o.half_pixel = coords == "half_pixel";
    as_interpolate = o.align_corners || o.half_pixel || coords == "asymmetric";
  } else if (mode == "nearest") {
    o.half_pixel_for_nn = coords == "tf_half_pixel_for_nn";
    as_interpolate = nearest_mode == "floor" &&
                     (o.half_pixel_for_nn || coords == "asymmetric");
  } else {
    as_interpolate = false;
  }
  // Interpolate maps coordinates by output / input size; ONNX by the scale
  // given, which differs where input x scale is not a whole number.
  for (size_t a = 0; a < scales.size(); ++a) {
    if (std::floor(s[a] * scales[a]) != s[a] * scales[a])
      as_interpolate = false;
  }
  if (!as_interpolate) {
    ONNXResizeOptions r;
    r.mode = mode;
    r.coordinate_transformation_mode = coords;
    r.cubic_coeff_a = static_cast<float>(op.f("cubic_coeff_a", -0.75));
    r.exclude_outside = op.i("exclude_outside", 0);
    r.extrapolation_value = static_cast<float>(op.f("extrapolation_value", 0));
    r.nearest_mode = nearest_mode;
    if (op.has(1)) {
      for (double v : op.constant(1).reals())
        r.roi.push_back(static_cast<float>(v));
    }
    if (!sizes.empty()) {
      r.sizes = sizes;
    } else {
      for (double v : scales) r.scales.push_back(static_cast<float>(v));
    }
    // ONNXResize checks the options itself; its message names it.
    return op.set(0, F::onnx_resize(op.x(0), r));
  }
  Shape out = sizes;
  if (out.empty()) {
    for (size_t a = 0; a < s.size(); ++a)
      out.push_back(static_cast<int64_t>(std::floor(s[a] * scales[a])));
  }
  size_t lead = 0;
  while (lead < s.size() && out[lead] == s[lead]) ++lead;
  lead = std::min(lead, s.size() - 1);
  o.output_size.assign(out.begin() + lead, out.end());
  op.set(0, F::interpolate(op.x(0), o.output_size, o.mode, o.align_corners,
                           o.half_pixel, o.half_pixel_for_nn));
}

void prelu(const Op& op) {
  const VariablePtr x = op.x(0);
  Tensor slope = op.constant(1);
  if (slope.size() == 1) return op.set(0, F::prelu(x, op.x(1, Shape{})));
  if (x->ndim() < 2 || slope.size() != x->shape()[1]) {
    op.fail("slope of shape " + shape_str(slope.shape) +
            " (one per channel of axis 1, or shared, is read)");
  }
  op.set(0, F::prelu(x, op.x(1, Shape{x->shape()[1]}), 1));
}

void layer_norm(const Op& op) {
  const Shape& xs = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", -1), xs.size());
  std::vector<int> batch;
  Shape ps = xs;
  for (int64_t k = 0; k < a; ++k) {
    batch.push_back(static_cast<int>(k));
    ps[k] = 1;
  }
  if (op.node.output_size() > 1 && !op.node.output(1).empty())
    op.fail("the Mean and InvStdDev outputs are not supported");
  VariablePtr gamma = op.x(1, ps), beta = op.has(2) ? op.x(2, ps) : nullptr;
  op.set(0, F::layer_normalization(op.x(0), beta, gamma, batch,
                                   static_cast<float>(op.f("epsilon", 1e-5))));
}

void instance_norm(const Op& op) {
  const Shape& xs = op.shape(0);
  Shape ps(xs.size(), 1);
  ps[1] = xs[1];
  op.set(0,
         F::instance_normalization(op.x(0), op.x(2, ps), op.x(1, ps), 1, {0},
                                   static_cast<float>(op.f("epsilon", 1e-5))));
}

}  // namespace

void add_nn_rules(std::map<std::string, Rule>& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["Gemm"] = gemm;
  t["MatMul"] = matmul;
  t["BatchNormalization"] = batch_norm;
  t["MaxPool"] = pool(true);
  t["AveragePool"] = pool(false);
  t["GlobalAveragePool"] = unary(F::global_average_pooling);
  t["GlobalMaxPool"] = [](const Op& op) {
    std::vector<int> axes;
    for (int a = 2; a < op.x(0)->ndim(); ++a) axes.push_back(a);
    op.set(0, F::max(op.x(0), axes, true));
  };
  t["Softmax"] = [](const Op& op) {
    op.set(0, F::softmax(op.x(0), static_cast<int>(op.i("axis", -1))));
  };
  t["LogSoftmax"] = [](const Op& op) {
    op.set(0, F::log_softmax(op.x(0), static_cast<int>(op.i("axis", -1))));
  };
  t["Resize"] = resize;
  t["PRelu"] = prelu;
  t["LayerNormalization"] = layer_norm;
  t["InstanceNormalization"] = instance_norm;
}

}  // namespace mg::onnx_import
