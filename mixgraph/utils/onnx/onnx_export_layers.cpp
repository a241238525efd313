// save_onnx's converters of the layers: products, convolutions, pooling,
// normalizations, recurrent layers and interpolation (onnx_export.hpp
// declares them).
#include <algorithm>
#include <climits>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/utils/onnx/onnx_export.hpp>

namespace mg::onnx_export {

namespace {

// Conv and ConvTranspose share their attributes.
void conv_attrs(Node& n, onnx::NodeProto* c, const Shape& ws, int64_t group) {
  const size_t k = ws.size() - 2;
  auto per_axis = [&](const char* name, int64_t fill) {
    std::vector<int64_t> v = arg_ints(n.fn, name);
    if (v.empty()) v.assign(k, fill);
    return v;
  };
  std::vector<int64_t> pad = per_axis("pad", 0);
  std::vector<int64_t> pads = pad;
  pads.insert(pads.end(), pad.begin(), pad.end());
  attr(c, "kernel_shape", Shape(ws.begin() + 2, ws.end()));
  attr(c, "pads", pads);
  attr(c, "strides", per_axis("stride", 1));
  attr(c, "dilations", per_axis("dilation", 1));
  attr(c, "group", group);
}

void need_base_axis_1(Node& n) {
  if (arg_int(n.fn, "base_axis") != 1) {
    n.unsupported("base_axis " + std::to_string(arg_int(n.fn, "base_axis")) +
                  ": ONNX convolves the axes after (N, C) only (base_axis 1)");
  }
}

}  // namespace

void affine(Node& n) {
  const int b = static_cast<int>(arg_int(n.fn, "base_axis"));
  const Shape& xs = n.in_shape(0);
  const Shape& ws = n.in_shape(1);
  const int64_t K = shape_size(xs, b, static_cast<int>(xs.size()));
  const int64_t M = shape_size(ws) / K;
  std::string a = n.in(0);
  if (!(xs.size() == 2 && b == 1)) {
    const std::string f = n.tmp();
    attr(n.op("Flatten", {a}, {f}), "axis", static_cast<int64_t>(b));
    a = f;
  }
  std::vector<std::string> ins = {a, n.in(1, Shape{K, M})};
  if (n.has_in(2)) ins.push_back(n.in(2, Shape{M}));
  const Shape& ys = n.out_shape(0);
  if (ys.size() == 2 && b == 1) {
    n.op("Gemm", ins, {n.out(0)});
    return;
  }
  const std::string y2 = n.tmp();
  n.op("Gemm", ins, {y2});
  Shape target = ys;
  target[0] = -1;  // the batch (free or not); the rest is static
  n.op("Reshape", {y2, n.ints(target)}, {n.out(0)});
}

void convolution(Node& n) {
  need_base_axis_1(n);
  std::vector<std::string> ins = {n.in(0), n.in(1)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  conv_attrs(n, n.op("Conv", ins, {n.out(0)}), n.in_shape(1),
             arg_int(n.fn, "group"));
}

void depthwise_convolution(Node& n) {
  need_base_axis_1(n);
  if (arg_int(n.fn, "multiplier") != 1) {
    n.unsupported("multiplier " + std::to_string(arg_int(n.fn, "multiplier")) +
                  " (only 1 is written)");
  }
  const int64_t C = n.in_shape(0)[1];
  Shape ws = n.in_shape(1);  // (C, k...) -> (C, 1, k...)
  ws.insert(ws.begin() + 1, 1);
  std::vector<std::string> ins = {n.in(0), n.in(1, ws)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  conv_attrs(n, n.op("Conv", ins, {n.out(0)}), ws, C);
}

void deconvolution(Node& n) {
  need_base_axis_1(n);
  std::vector<std::string> ins = {n.in(0), n.in(1)};
  if (n.has_in(2)) ins.push_back(n.in(2));
  auto* c = n.op("ConvTranspose", ins, {n.out(0)});
  conv_attrs(n, c, n.in_shape(1), arg_int(n.fn, "group"));
  const std::vector<int64_t> op = arg_ints(n.fn, "output_padding");
  if (!op.empty()) attr(c, "output_padding", op);
}

// MaxPool / AveragePool from NNabla's pooling arguments; SumPooling is an
// AveragePool counting the padding, times the window's size.
Converter pooling(const char* type, bool sum) {
  return [=](Node& n) {
    const std::vector<int64_t> kernel = arg_ints(n.fn, "kernel");
    const size_t k = kernel.size();
    if (static_cast<size_t>(n.ndim(0)) != k + 2) {
      n.unsupported("pools " + std::to_string(k) + " axes of " +
                    shape_str(n.in_shape(0)) +
                    ": ONNX pools every axis after (N, C)");
    }
    std::vector<int64_t> stride = arg_ints(n.fn, "stride");
    if (stride.empty()) stride = kernel;
    std::vector<int64_t> pad = arg_ints(n.fn, "pad");
    if (pad.empty()) pad.assign(k, 0);
    int64_t ceil_mode = 0;
    if (!arg_bool(n.fn, "ignore_border")) {
      // NNabla's windows past the end: the same as ONNX's ceil_mode where
      // the sizes agree (every window starts inside the padded input).
      for (size_t i = 0; i < k; ++i) {
        const int64_t in = n.in_shape(0)[2 + i];
        const int64_t span = in + 2 * pad[i] - kernel[i];
        const int64_t ceil_out = (span + stride[i] - 1) / stride[i] + 1;
        if (ceil_out != n.out_shape(0)[2 + i]) {
          n.unsupported(
              "ignore_border false gives " + shape_str(n.out_shape(0)) +
              ", which ONNX's ceil_mode does not (set ignore_border true)");
        }
      }
      if (std::string(type) != "MaxPool") {
        n.unsupported(
            "ignore_border false: ONNX averages partial windows "
            "otherwise (set ignore_border true)");
      }
      ceil_mode = 1;
    }
    std::vector<int64_t> pads = pad;
    pads.insert(pads.end(), pad.begin(), pad.end());
    const std::string y = sum ? n.tmp() : n.out(0);
    auto* p = n.op(type, {n.in(0)}, {y});
    attr(p, "kernel_shape", kernel);
    attr(p, "strides", stride);
    attr(p, "pads", pads);
    if (ceil_mode) attr(p, "ceil_mode", ceil_mode);
    if (std::string(type) == "AveragePool") {
      attr(p, "count_include_pad",
           static_cast<int64_t>(sum || arg_bool(n.fn, "including_pad")));
    }
    if (sum) {
      n.op("Mul", {y, n.scalar(static_cast<double>(shape_size(kernel)))},
           {n.out(0)});
    }
  };
}

void batch_normalization(Node& n) {
  if (arg_bool(n.fn, "batch_stat")) {
    n.unsupported(
        "batch_stat true (batch statistics) is training: export "
        "mg::inference_graph(outputs) (utils/inference.hpp), which "
        "normalises with the running mean and variance");
  }
  const std::vector<int64_t> axes = arg_ints(n.fn, "axes");
  if (axes != std::vector<int64_t>{1}) {
    n.unsupported("axes " + shape_str(axes) +
                  ": ONNX normalizes per channel of axis 1");
  }
  const Shape c{n.in_shape(0)[1]};
  // Ours: x, beta, gamma, mean, variance, with beta left out under no_bias
  // and gamma under no_scale (NNabla's lists); ONNX: X, scale, B, mean,
  // var, always: a left-out one is written as its constant (0 or 1).
  const bool no_bias = arg_bool(n.fn, "no_bias");
  const bool no_scale = arg_bool(n.fn, "no_scale");
  const std::vector<float> zeros(c[0], 0.0f), ones(c[0], 1.0f);
  int i = 1;
  const std::string beta =
      no_bias ? n.e.constant(c, Dtype::f32, zeros.data(), "beta")
              : n.in(i++, c);
  const std::string gamma =
      no_scale ? n.e.constant(c, Dtype::f32, ones.data(), "gamma")
               : n.in(i++, c);
  const std::string mean = n.in(i, c), variance = n.in(i + 1, c);
  auto* b = n.op("BatchNormalization", {n.in(0), gamma, beta, mean, variance},
                 {n.out(0)});
  attr(b, "epsilon", arg_real(n.fn, "eps"));
}

void interpolate(Node& n) {
  if (arg_bool(n.fn, "channel_last")) n.unsupported("channel_last true");
  const std::string mode = arg_str(n.fn, "mode");
  const bool align = arg_bool(n.fn, "align_corners"),
             half = arg_bool(n.fn, "half_pixel"),
             half_nn = arg_bool(n.fn, "half_pixel_for_nn");
  std::string coords, nearest;
  if (mode == "linear") {
    coords = align ? "align_corners" : half ? "half_pixel" : "asymmetric";
  } else if (half_nn) {
    coords = "tf_half_pixel_for_nn", nearest = "floor";
  } else if (!align && !half) {
    coords = "asymmetric", nearest = "floor";
  } else {
    n.unsupported(
        "nearest with align_corners or half_pixel (ONNX rounds "
        "those sources differently)");
  }
  const std::vector<int64_t> size = arg_ints(n.fn, "output_size");
  const int kept = n.ndim(0) - static_cast<int>(size.size());
  std::string sizes;
  if (n.e.options().free_batch) {  // the leading axes from the input
    const std::string lead = n.tmp();
    auto* s = n.op("Shape", {n.in(0)}, {lead});
    attr(s, "end", static_cast<int64_t>(kept));
    sizes = n.tmp();
    attr(n.op("Concat", {lead, n.ints(size)}, {sizes}), "axis", int64_t{0});
  } else {
    sizes = n.ints(n.out_shape(0));
  }
  auto* r = n.op("Resize", {n.in(0), "", "", sizes}, {n.out(0)});
  attr(r, "mode", mode);
  attr(r, "coordinate_transformation_mode", coords);
  if (!nearest.empty()) attr(r, "nearest_mode", nearest);
}

void layer_normalization(Node& n) {
  // ONNX normalises the axes from `axis` on: ours with the leading axes
  // 0 .. k-1 as batch_axis (a transformer's (L, B, E) has {0, 1}).
  const std::vector<int64_t> batch_axis = arg_ints(n.fn, "batch_axis");
  for (size_t a = 0; a < batch_axis.size(); ++a) {
    if (batch_axis[a] != static_cast<int64_t>(a)) {
      n.unsupported("batch_axis " + shape_str(batch_axis) +
                    ": only the leading axes {0, 1, ..., k-1}");
    }
  }
  const int64_t axis = static_cast<int64_t>(batch_axis.size());
  const Shape& xs = n.in_shape(0);
  if (axis < 1 || axis >= static_cast<int64_t>(xs.size())) {
    n.unsupported("batch_axis " + shape_str(batch_axis) + " of x with shape " +
                  shape_str(xs) + " leaves no axis to normalise");
  }
  const Shape feat(xs.begin() + axis, xs.end());
  // Ours: x, beta, gamma; ONNX: X, Scale (required), B.
  const bool scale = !arg_bool(n.fn, "no_scale") && n.has_in(2);
  const bool bias = !arg_bool(n.fn, "no_bias") && n.has_in(1);
  std::string s;
  if (scale) {
    s = n.in(2, feat);
  } else {
    s = n.tmp();
    n.op("Expand", {n.scalar(1.0), n.ints(feat)}, {s});
  }
  std::vector<std::string> ins = {n.in(0), s};
  if (bias) ins.push_back(n.in(1, feat));
  auto* l = n.op("LayerNormalization", ins, {n.out(0)});
  attr(l, "axis", axis);
  attr(l, "epsilon", arg_real(n.fn, "eps"));
}

// Our LSTM, GRU and RNN as ONNX's, one node per layer (layout 0: x as
// (T, B, I)), with the weights converted while writing into ONNX's W, R and
// B initializers (named "<ours>_W" ...): our weight (D, G, H, I + H) split
// into W and R with its gate blocks in ONNX's order, our bias rows spread
// over ONNX's Wb and Rb (onnx_recurrent.hpp has the layouts). The weights
// must be parameters, as the importer wants them.
Converter recurrent(onnx_io::RecurrentKind kind) {
  return [kind](Node& n) {
    using onnx_io::RecurrentKind;
    const bool lstm = kind == RecurrentKind::lstm;
    const int w0 = lstm ? 3 : 2;  // weight_l0 after x, h (and c)
    const int64_t L = arg_int(n.fn, "num_layers");
    const int64_t D = arg_bool(n.fn, "bidirectional") ? 2 : 1;
    if (arg_real(n.fn, "dropout") != 0.0) {
      n.unsupported("dropout between layers has no ONNX equivalent");
    }
    const Shape& xs = n.in_shape(0);
    const int64_t T = xs[0], I = xs[2], H = n.in_shape(1).back();
    const int64_t G = onnx_io::recurrent_gates(kind);
    const int64_t Gb = onnx_io::recurrent_bias_rows(kind);
    const std::vector<int> ours = onnx_io::our_gates(kind);
    // NNabla's rule for the optional inputs (Recurrent::setup_impl).
    const int given = static_cast<int>(n.node.inputs().size());
    const int weight_at = L > 1 ? w0 + 1 : -1;
    const int bias_at = L > 1 ? w0 + 2 : w0 + 1;
    const bool has_bias = given > bias_at && n.has_in(bias_at);
    auto weights = [&](int i, const char* name) {
      const VariablePtr& v = n.node.inputs()[i];
      if (v->parent() || !n.e.is_parameter(v.get())) {
        n.unsupported(std::string(name) +
                      " must be a parameter (ONNX's W, R and B are written "
                      "as initializers, converted to its gate order)");
      }
      const float* p = v->data()->get<const float>();
      return std::vector<float>(p, p + v->size());
    };
    // Each layer's node is named after our weights' scope ("lstm" for
    // "lstm/weight_l0"; layer l > 0 "lstm/l<l>"), which load_onnx names its
    // converted weights after: "lstm/weight_l0" and "lstm/bias" come back.
    std::string scope = n.e.parameter_name(n.node.inputs()[w0].get());
    const std::string suffix = "/weight_l0";
    if (scope.size() > suffix.size() &&
        scope.compare(scope.size() - suffix.size(), suffix.size(), suffix) ==
            0) {
      scope.resize(scope.size() - suffix.size());
    }
    auto initializer = [&](const Shape& shape, const std::vector<float>& data,
                           const std::string& hint) {
      const std::string name =
          n.e.constant(shape, Dtype::f32, data.data(), scope + "/" + hint);
      return n.T == kFloat ? name : n.e.cast(name, n.T);
    };
    auto at = [&](const std::string& v, int64_t index) {
      const std::string r = n.tmp();
      attr(n.op("Gather", {v, n.scalar(static_cast<double>(index), kInt64)},
                {r}),
           "axis", int64_t{0});
      return r;
    };
    const std::vector<float> first = weights(w0, "weight_l0");
    const std::vector<float> deeper =
        L > 1 ? weights(weight_at, "weight") : std::vector<float>{};
    const std::vector<float> bias =
        has_bias ? weights(bias_at, "bias") : std::vector<float>{};
    std::string x = n.in(0);
    std::vector<std::string> hs, cs;
    for (int64_t l = 0; l < L; ++l) {
      const int64_t in_size = l == 0 ? I : D * H;
      // Our (D, G, H, in_size + H) block of this layer.
      const float* w =
          l == 0 ? first.data()
                 : deeper.data() + (l - 1) * D * G * H * (in_size + H);
      std::vector<float> W, R;
      for (int64_t d = 0; d < D; ++d) {
        for (int g : ours) {
          for (int64_t h = 0; h < H; ++h) {
            const float* row = w + ((d * G + g) * H + h) * (in_size + H);
            W.insert(W.end(), row, row + in_size);
            R.insert(R.end(), row + in_size, row + in_size + H);
          }
        }
      }
      std::string b;
      if (has_bias) {
        std::vector<float> B;
        for (int64_t d = 0; d < D; ++d) {
          const float* rows = bias.data() + (l * D + d) * Gb * H;
          for (int g : ours) B.insert(B.end(), rows + g * H, rows + g * H + H);
          for (int64_t g = 0; g < G; ++g) {
            const bool hidden =
                kind == RecurrentKind::gru && g == onnx_io::kGruCandidateGate;
            const float* r = rows + onnx_io::kGruHiddenBiasRow * H;
            for (int64_t h = 0; h < H; ++h) B.push_back(hidden ? r[h] : 0.0f);
          }
        }
        b = initializer({D, 2 * G * H}, B, "B" + std::to_string(l));
      }
      std::vector<std::string> ins = {
          x,
          initializer({D, G * H, in_size}, W, "W" + std::to_string(l)),
          initializer({D, G * H, H}, R, "R" + std::to_string(l)),
          b,
          "",
          at(n.in(1), l)};
      if (lstm) ins.push_back(at(n.in(2), l));
      const std::string y = n.tmp(), h = n.tmp(), c = n.tmp();
      const char* type = lstm                         ? "LSTM"
                         : kind == RecurrentKind::gru ? "GRU"
                                                      : "RNN";
      std::vector<std::string> outs = {y, h};
      if (lstm) outs.push_back(c);
      auto* r = n.op(type, ins, outs);
      r->set_name(l == 0 ? scope : scope + "/l" + std::to_string(l));
      attr(r, "hidden_size", H);
      attr(r, "direction", std::string(D == 2 ? "bidirectional" : "forward"));
      if (kind == RecurrentKind::gru) {
        attr(r, "linear_before_reset", int64_t{1});
      }
      if (kind == RecurrentKind::rnn &&
          arg_str(n.fn, "nonlinearity") == "relu") {
        attr(r, "activations", std::vector<std::string>(D, "Relu"));
      }
      // ONNX's Y (T, D, B, H) as ours (T, B, D H); 0 keeps the batch.
      const std::string yt = n.tmp();
      attr(n.op("Transpose", {y}, {yt}), "perm",
           std::vector<int64_t>{0, 2, 1, 3});
      x = l + 1 == L ? n.out(0) : n.tmp();
      n.op("Reshape", {yt, n.ints({T, 0, D * H})}, {x});
      hs.push_back(h);
      cs.push_back(c);
    }
    // The states (D, B, H) of each layer stacked as ours (L, D, B, H).
    auto stack = [&](const std::vector<std::string>& states, int o) {
      std::vector<std::string> parts;
      for (const auto& st : states) {
        parts.push_back(L == 1 ? n.out(o) : n.tmp());
        n.op("Unsqueeze", {st, n.ints({0})}, {parts.back()});
      }
      if (L > 1) attr(n.op("Concat", parts, {n.out(o)}), "axis", int64_t{0});
    };
    stack(hs, 1);
    if (lstm) stack(cs, 2);
  };
}

void instance_normalization(Node& n) {
  if (arg_int(n.fn, "channel_axis") != 1 ||
      arg_ints(n.fn, "batch_axis") != std::vector<int64_t>{0}) {
    n.unsupported("channel_axis 1 and batch_axis {0} only");
  }
  const int64_t C = n.in_shape(0)[1];
  auto param = [&](int i, bool off, double fill) {
    if (!off && n.has_in(i)) return n.in(i, Shape{C});
    const std::string v = n.tmp();
    n.op("Expand", {n.scalar(fill), n.ints({C})}, {v});
    return v;
  };
  const std::string s = param(2, arg_bool(n.fn, "no_scale"), 1.0);
  const std::string b = param(1, arg_bool(n.fn, "no_bias"), 0.0);
  attr(n.op("InstanceNormalization", {n.in(0), s, b}, {n.out(0)}), "epsilon",
       arg_real(n.fn, "eps"));
}

void prelu(Node& n) {
  const int b = static_cast<int>(arg_int(n.fn, "base_axis"));
  std::string w;
  if (n.in_shape(1).empty() || shape_size(n.in_shape(1)) == 1) {
    w = n.in(1, Shape{1});
  } else {
    Shape ws{n.in_shape(1)[0]};  // the channel axis, then ones to the end
    ws.insert(ws.end(), n.ndim(0) - b - 1, 1);
    w = n.in(1, ws);
  }
  n.op("PRelu", {n.in(0), w}, {n.out(0)});
}

void gelu(Node& n) {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const std::string x = n.in(0);
  const std::string x3 = n.tmp(), a = n.tmp(), inner = n.tmp(), t = n.tmp(),
                    one_t = n.tmp(), hx = n.tmp();
  n.op("Pow", {x, n.scalar(3.0)}, {x3});
  n.op("Mul", {x3, n.scalar(0.044715)}, {a});
  const std::string sum = n.tmp();
  n.op("Add", {x, a}, {sum});
  n.op("Mul", {sum, n.scalar(0.7978845608028654)}, {inner});
  n.op("Tanh", {inner}, {t});
  n.op("Add", {t, n.scalar(1.0)}, {one_t});
  n.op("Mul", {x, n.scalar(0.5)}, {hx});
  n.op("Mul", {hx, one_t}, {n.out(0)});
}

}  // namespace mg::onnx_export
