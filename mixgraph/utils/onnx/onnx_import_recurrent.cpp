// load_onnx's converters of LSTM, GRU and RNN onto our fused recurrent
// functions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/utils/onnx/onnx_import.hpp>
#include <mixgraph/utils/onnx/onnx_recurrent.hpp>

namespace mg::onnx_import {

namespace F = functions;

namespace {

// ---- LSTM, GRU, RNN on our fused recurrent functions ----

using onnx_io::onnx_gates;
using onnx_io::RecurrentKind;

Tensor float_tensor(Shape shape, const std::vector<float>& v) {
  Tensor t;
  t.shape = std::move(shape);
  t.bytes.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// A state input (D, B, H) as ours (1, D, B, H); zeros where it is absent.
VariablePtr initial_state(const Op& op, int i, const Shape& state) {
  if (op.has(i)) return op.x(i, state);
  VariablePtr z = make_variable(state);
  float* p = z->data()->cast<float>(/*write_only=*/true);
  std::fill(p, p + z->size(), 0.0f);
  return z;
}

// The checks of what we do not map, each naming the attribute or input.
void check_recurrent(const Op& op, RecurrentKind kind, int64_t steps,
                     int64_t batch) {
  if (op.i("layout", 0) != 0) {
    op.fail("layout " + std::to_string(op.i("layout", 0)) +
            " (batch first) is not supported; only layout 0, X as (seq, "
            "batch, input)");
  }
  if (op.attr("clip")) op.fail("attribute clip is not supported");
  if (op.attr("activation_alpha") || op.attr("activation_beta"))
    op.fail("activation_alpha / activation_beta are not supported");
  if (kind == RecurrentKind::lstm) op.need_default("input_forget", 0);
  if (kind == RecurrentKind::gru && op.i("linear_before_reset", 0) != 1) {
    op.fail(
        "linear_before_reset 0 is not supported (our GRU applies the reset "
        "gate after the hidden state's linear map, as linear_before_reset 1 "
        "and PyTorch's GRU do)");
  }
  if (op.has(4)) {
    // Lengths that are all the whole sequence change nothing; shorter ones
    // would need per-sequence masking our fused functions do not do.
    if (!op.is_const(4))
      op.fail("sequence_lens computed at run time is not supported");
    for (int64_t n : op.constant(4).ints()) {
      if (n != steps) {
        op.fail("sequence_lens with a length " + std::to_string(n) +
                " shorter than the sequence (" + std::to_string(steps) +
                " steps) is not supported; pad to full length or leave "
                "sequence_lens out");
      }
    }
    if (op.constant(4).size() != batch)
      op.fail("sequence_lens does not hold one length per batch entry");
  }
  if (kind == RecurrentKind::lstm && op.has(7)) {
    for (double p : op.constant(7).reals()) {
      if (p != 0) op.fail("peephole weights P are not supported");
    }
  }
}

// The nonlinearity of an RNN ("tanh" or "relu"); LSTM's and GRU's must be
// ONNX's defaults, which are ours.
std::string activations(const Op& op, RecurrentKind kind, int dirs) {
  std::vector<std::string> want;
  if (kind == RecurrentKind::lstm) want = {"Sigmoid", "Tanh", "Tanh"};
  if (kind == RecurrentKind::gru) want = {"Sigmoid", "Tanh"};
  if (kind == RecurrentKind::rnn) want = {"Tanh"};
  const auto* a = op.attr("activations");
  if (!a) return "tanh";
  std::vector<std::string> got(a->strings().begin(), a->strings().end());
  if (kind == RecurrentKind::rnn && !got.empty() && got[0] == "Relu")
    want = {"Relu"};
  std::vector<std::string> all;
  for (int d = 0; d < dirs; ++d)
    all.insert(all.end(), want.begin(), want.end());
  if (got != all) {
    std::string list;
    for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
    op.fail("activations [" + list +
            "] are not supported (only ONNX's defaults, and Relu for RNN)");
  }
  return want[0] == "Relu" ? "relu" : "tanh";
}

// ONNX's W (D, G H, I), R (D, G H, H) and B (D, 2 G H) as our weight_l0 (D,
// G, H, I + H) and bias (1, D, G_b, H), converted once while loading into
// parameters named after the node (the gates reordered, W and R side by
// side, ONNX's two biases summed where ours has one).
std::pair<VariablePtr, VariablePtr> recurrent_weights(const Op& op,
                                                      RecurrentKind kind,
                                                      int64_t D, int64_t H,
                                                      int64_t I) {
  const std::vector<int> gates = onnx_gates(kind);
  const int64_t G = static_cast<int64_t>(gates.size());
  if (!op.is_const(1) || !op.is_const(2))
    op.fail(
        "W and R must be initializers (weights computed at run time are "
        "not read)");
  const Tensor Wt = op.constant(1), Rt = op.constant(2);
  if (Wt.shape != Shape{D, G * H, I} || Rt.shape != Shape{D, G * H, H}) {
    op.fail("W with shape " + shape_str(Wt.shape) + " and R with shape " +
            shape_str(Rt.shape) + " must be " + shape_str({D, G * H, I}) +
            " and " + shape_str({D, G * H, H}) + " for hidden_size " +
            std::to_string(H));
  }
  const std::vector<double> W = Wt.reals(), R = Rt.reals();
  std::vector<float> w;
  w.reserve(static_cast<size_t>(D * G * H * (I + H)));
  for (int64_t d = 0; d < D; ++d) {
    for (int g : gates) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t row = (d * G + g) * H + h;
        for (int64_t k = 0; k < I; ++k) w.push_back(float(W[row * I + k]));
        for (int64_t k = 0; k < H; ++k) w.push_back(float(R[row * H + k]));
      }
    }
  }
  // "rnn/LSTM/weight_l0" for PyTorch's node "/rnn/LSTM": a scope path.
  std::string base = op.node.name().empty() ? op.node.input(1) : op.node.name();
  base.erase(0, base.find_first_not_of('/'));
  VariablePtr weight = op.parameter_from(
      base + "/weight_l0", float_tensor({D, G, H, I + H}, w), true);
  if (!op.has(3)) return {weight, nullptr};
  if (!op.is_const(3)) op.fail("B must be an initializer");
  const Tensor Bt = op.constant(3);
  if (Bt.shape != Shape{D, 2 * G * H}) {
    op.fail("B with shape " + shape_str(Bt.shape) + " must be " +
            shape_str({D, 2 * G * H}));
  }
  const std::vector<double> B = Bt.reals();
  auto wb = [&](int64_t d, int g, int64_t h) {
    return B[static_cast<size_t>(d * 2 * G * H + g * H + h)];
  };
  auto rb = [&](int64_t d, int g, int64_t h) {
    return B[static_cast<size_t>(d * 2 * G * H + (G + g) * H + h)];
  };
  std::vector<float> b;
  for (int64_t d = 0; d < D; ++d) {
    for (int g : gates) {
      // GRU's candidate keeps its input and hidden biases apart (ours: rows
      // b_n and b_nh, the last two).
      const bool split =
          kind == RecurrentKind::gru && g == onnx_io::kGruCandidateGate;
      for (int64_t h = 0; h < H; ++h)
        b.push_back(float(wb(d, g, h) + (split ? 0.0 : rb(d, g, h))));
    }
    if (kind == RecurrentKind::gru) {
      for (int64_t h = 0; h < H; ++h)
        b.push_back(float(rb(d, onnx_io::kGruCandidateGate, h)));
    }
  }
  const int64_t rows = onnx_io::recurrent_bias_rows(kind);
  VariablePtr bias =
      op.parameter_from(base + "/bias", float_tensor({1, D, rows, H}, b), true);
  return {weight, bias};
}

Rule recurrent(RecurrentKind kind) {
  return [kind](const Op& op) {
    VariablePtr x = op.x(0);
    if (x->ndim() != 3)
      op.fail("X with shape " + shape_str(x->shape()) +
              " is not (seq, batch, input)");
    const int64_t T = x->shape()[0], N = x->shape()[1], I = x->shape()[2];
    check_recurrent(op, kind, T, N);
    const std::string dir = op.s("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
      op.fail("direction '" + dir + "' is not one ONNX defines");
    const int64_t D = dir == "bidirectional" ? 2 : 1;
    const int64_t H = op.i("hidden_size", 0);
    if (H <= 0) op.fail("attribute hidden_size is missing");
    const std::string act = activations(op, kind, static_cast<int>(D));
    const auto [weight, bias] = recurrent_weights(op, kind, D, H, I);
    const Shape state{1, D, N, H};
    const VariablePtr h0 = initial_state(op, 5, state);
    // A reverse-only layer: the sequence reversed, run forward, and its
    // outputs put back in order.
    if (dir == "reverse") x = F::flip(x, {0});
    RecurrentOptions o;
    o.bidirectional = D == 2;
    o.training = false;
    VariablePtr y, h, c;
    if (kind == RecurrentKind::lstm) {
      std::tie(y, h, c) =
          F::lstm(x, h0, initial_state(op, 6, state), weight, nullptr, bias, o);
    } else if (kind == RecurrentKind::gru) {
      std::tie(y, h) = F::gru(x, h0, weight, nullptr, bias, o);
    } else {
      RNNOptions r;
      r.nonlinearity = act;
      r.bidirectional = o.bidirectional;
      r.training = false;
      std::tie(y, h) = F::rnn(x, h0, weight, nullptr, bias, r);
    }
    if (dir == "reverse") y = F::flip(y, {0});
    // Ours: y (T, B, D H); ONNX's Y: (T, D, B, H).
    if (op.node.output_size() > 0 && !op.node.output(0).empty()) {
      op.set(0, F::transpose(F::reshape(y, {T, N, D, H}), {0, 2, 1, 3}));
    }
    op.set(1, F::reshape(h, {D, N, H}));
    if (c) op.set(2, F::reshape(c, {D, N, H}));
  };
}

}  // namespace

void add_recurrent_rules(std::map<std::string, Rule>& t) {
  t["LSTM"] = recurrent(RecurrentKind::lstm);
  t["GRU"] = recurrent(RecurrentKind::gru);
  t["RNN"] = recurrent(RecurrentKind::rnn);
}

}  // namespace mg::onnx_import
