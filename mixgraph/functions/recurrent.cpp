#include <mixgraph/functions/recurrent.hpp>

#include <stdexcept>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

namespace {

// Whether a weight or bias has shape `want`, whose axis `gate_axis` counts
// the gates: with a single gate (RNN) that axis may be left out, as in
// NNabla's RNN layout ((D, H, I + H) for weight_l0); the data is the same.
bool weight_shape_fits(const Shape& got, const Shape& want, size_t gate_axis) {
  if (got == want) return true;
  if (want[gate_axis] != 1) return false;
  Shape squeezed = want;
  squeezed.erase(squeezed.begin() + static_cast<int64_t>(gate_axis));
  return got == squeezed;
}

// "(D, G, H, I + H)" or, with one gate, NNabla's "(D, H, I + H)" first.
std::string gate_layout(int gates, const std::string& before,
                        const std::string& gate, const std::string& after) {
  const std::string with = "(" + before + gate + ", " + after + ")";
  if (gates != 1) return with;
  return "(" + before + after + ") or " + with;
}

}  // namespace

void Recurrent::setup_impl(const Variables& in, const Variables& out) {
  const int L = num_layers_, D = directions_, G = layout_.gates;
  if (L < 1) {
    throw std::invalid_argument(
        msg(tag(), "num_layers ", L, " must be 1 or more"));
  }
  if (dropout_ != 0.0f) {
    throw std::invalid_argument(
        msg(tag(), "dropout ", dropout_,
            " between layers is not implemented: pass 0 and apply "
            "F::dropout to y"));
  }
  const Shape& xs = in[0]->shape();
  if (xs.size() != 3) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(xs), " must be (T, B, I)"));
  }
  const Shape& hs = in[1]->shape();
  if (hs.size() != 4) {
    throw std::invalid_argument(msg(tag(), "h with shape ", shape_str(hs),
                                    " must be (num_layers, directions, B, H)"));
  }
  steps_ = xs[0];
  batch_ = xs[1];
  input_size_ = xs[2];
  hidden_ = hs[3];
  const Shape state{L, D, batch_, hidden_};
  if (hs != state || (layout_.cell && in[2]->shape() != state)) {
    throw std::invalid_argument(msg(
        tag(), "h with shape ", shape_str(hs),
        layout_.cell ? " and c with shape " + shape_str(in[2]->shape()) : "",
        " must be ", shape_str(state), " (num_layers ", L, ", directions ", D,
        ", B of x with shape ", shape_str(xs), ", H)"));
  }
  const int w0i = w0_index();
  const Shape w0{D, G, hidden_, input_size_ + hidden_};
  if (!weight_shape_fits(in[w0i]->shape(), w0, 1)) {
    Shape w0_nnabla = w0;
    w0_nnabla.erase(w0_nnabla.begin() + 1);
    throw std::invalid_argument(msg(
        tag(), "weight_l0 with shape ", shape_str(in[w0i]->shape()),
        " must be ", G == 1 ? shape_str(w0_nnabla) + " or " : "", shape_str(w0),
        " ", gate_layout(G, "directions, ", msg(G, " gates, "), "H, I + H"),
        " for x with shape ", shape_str(xs), " and h with shape ",
        shape_str(hs)));
  }
  // NNabla's rule for the optional inputs: weight when L > 1, then bias.
  const int n = static_cast<int>(in.size()), first = w0i + 1;
  weight_index_ = L > 1 && n > first ? first : -1;
  const int bias_at = L > 1 ? first + 1 : first;
  bias_index_ = n > bias_at ? bias_at : -1;
  if (L > 1 && weight_index_ < 0) {
    throw std::invalid_argument(msg(tag(), "num_layers ", L,
                                    " needs the weight input of layers 1 to ",
                                    L - 1));
  }
  if (n > bias_at + 1) {
    throw std::invalid_argument(
        msg(tag(), "takes at most ", bias_at + 1, " inputs with num_layers ", L,
            " (weight only when num_layers > 1); got ", n));
  }
  if (weight_index_ >= 0) {
    const Shape w{L - 1, D, G, hidden_, D * hidden_ + hidden_};
    if (!weight_shape_fits(in[weight_index_]->shape(), w, 2)) {
      Shape w_nnabla = w;
      w_nnabla.erase(w_nnabla.begin() + 2);
      throw std::invalid_argument(
          msg(tag(), "weight with shape ",
              shape_str(in[weight_index_]->shape()), " must be ",
              G == 1 ? shape_str(w_nnabla) + " or " : "", shape_str(w), " ",
              gate_layout(G, "num_layers - 1, directions, ", msg(G, " gates, "),
                          "H, directions H + H")));
    }
  }
  if (bias_index_ >= 0) {
    const int Gb = layout_.bias_gates;
    const Shape b{L, D, Gb, hidden_};
    if (!weight_shape_fits(in[bias_index_]->shape(), b, 2)) {
      Shape b_nnabla = b;
      b_nnabla.erase(b_nnabla.begin() + 2);
      throw std::invalid_argument(
          msg(tag(), "bias with shape ", shape_str(in[bias_index_]->shape()),
              " must be ", Gb == 1 ? shape_str(b_nnabla) + " or " : "",
              shape_str(b), " ",
              gate_layout(Gb, "num_layers, directions, ", msg(Gb, " rows, "),
                          "H")));
    }
  }
  out[0]->reshape({steps_, batch_, D * hidden_});
  for (size_t k = 1; k < out.size(); ++k) out[k]->reshape(state);
}

void RNN::setup_impl(const Variables& in, const Variables& out) {
  if (opts_.nonlinearity != "tanh" && opts_.nonlinearity != "relu") {
    throw std::invalid_argument(msg(tag(), "nonlinearity '", opts_.nonlinearity,
                                    "' must be 'tanh' or 'relu'"));
  }
  Recurrent::setup_impl(in, out);
}

namespace functions {

namespace {
// The inputs given: the required ones, then weight and bias where set.
std::vector<VariablePtr> recurrent_inputs(std::vector<VariablePtr> required,
                                          const VariablePtr& weight,
                                          const VariablePtr& bias) {
  if (weight) required.push_back(weight);
  if (bias) required.push_back(bias);
  return required;
}
}  // namespace

std::tuple<VariablePtr, VariablePtr> rnn(const VariablePtr& x,
                                         const VariablePtr& h,
                                         const VariablePtr& weight_l0,
                                         const VariablePtr& weight,
                                         const VariablePtr& bias,
                                         const RNNOptions& options) {
  auto outs = apply_function(decl::RNN, options,
                             recurrent_inputs({x, h, weight_l0}, weight, bias));
  return {outs[0], outs[1]};
}

std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(
    const VariablePtr& x, const VariablePtr& h, const VariablePtr& c,
    const VariablePtr& weight_l0, const VariablePtr& weight,
    const VariablePtr& bias, const LSTMOptions& options) {
  auto outs =
      apply_function(decl::LSTM, options,
                     recurrent_inputs({x, h, c, weight_l0}, weight, bias));
  return {outs[0], outs[1], outs[2]};
}

std::tuple<VariablePtr, VariablePtr> gru(const VariablePtr& x,
                                         const VariablePtr& h,
                                         const VariablePtr& weight_l0,
                                         const VariablePtr& weight,
                                         const VariablePtr& bias,
                                         const GRUOptions& options) {
  auto outs = apply_function(decl::GRU, options,
                             recurrent_inputs({x, h, weight_l0}, weight, bias));
  return {outs[0], outs[1]};
}

}  // namespace functions

}  // namespace mg
