#include <mixgraph/functions/lstm.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/graph/initializer.hpp>

namespace mg {

void LSTM::setup_impl(const Variables& in, const Variables& out) {
  const LSTMOptions& o = opts_;
  if (o.num_layers < 1) {
    throw std::invalid_argument(
        msg(tag(), "num_layers ", o.num_layers, " must be 1 or more"));
  }
  if (o.dropout != 0.0f) {
    throw std::invalid_argument(
        msg(tag(), "dropout ", o.dropout,
            " between layers is not implemented: pass 0 and apply "
            "F::dropout to y"));
  }
  const int L = o.num_layers, D = o.bidirectional ? 2 : 1;
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
  directions_ = D;
  const Shape state{L, D, batch_, hidden_};
  if (hs != state || in[2]->shape() != state) {
    throw std::invalid_argument(
        msg(tag(), "h with shape ", shape_str(hs), " and c with shape ",
            shape_str(in[2]->shape()), " must both be ", shape_str(state),
            " (num_layers ", L, ", directions ", D, ", B of x with shape ",
            shape_str(xs), ", H)"));
  }
  const Shape w0{D, 4, hidden_, input_size_ + hidden_};
  if (in[3]->shape() != w0) {
    throw std::invalid_argument(msg(
        tag(), "weight_l0 with shape ", shape_str(in[3]->shape()), " must be ",
        shape_str(w0), " (directions, 4 gates, H, I + H) for x with shape ",
        shape_str(xs), " and h with shape ", shape_str(hs)));
  }
  // NNabla's rule for the optional inputs: weight when L > 1, then bias.
  const int n = static_cast<int>(in.size());
  weight_index_ = L > 1 && n > 4 ? 4 : -1;
  bias_index_ = n > (L > 1 ? 5 : 4) ? (L > 1 ? 5 : 4) : -1;
  if (L > 1 && weight_index_ < 0) {
    throw std::invalid_argument(msg(tag(), "num_layers ", L,
                                    " needs the weight input of layers 1 to ",
                                    L - 1));
  }
  if (L == 1 && n > 5) {
    throw std::invalid_argument(
        msg(tag(),
            "with num_layers 1 the inputs are x, h, c, weight_l0 and "
            "bias; got ",
            n, " inputs"));
  }
  if (weight_index_ >= 0) {
    const Shape w{L - 1, D, 4, hidden_, D * hidden_ + hidden_};
    if (in[weight_index_]->shape() != w) {
      throw std::invalid_argument(
          msg(tag(), "weight with shape ",
              shape_str(in[weight_index_]->shape()), " must be ", shape_str(w),
              " (num_layers - 1, directions, 4 gates, H, directions H + H)"));
    }
  }
  if (bias_index_ >= 0) {
    const Shape b{L, D, 4, hidden_};
    if (in[bias_index_]->shape() != b) {
      throw std::invalid_argument(msg(
          tag(), "bias with shape ", shape_str(in[bias_index_]->shape()),
          " must be ", shape_str(b), " (num_layers, directions, 4 gates, H)"));
    }
  }
  out[0]->reshape({steps_, batch_, D * hidden_});
  out[1]->reshape(state);
  out[2]->reshape(state);
}

namespace functions {

std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(
    const VariablePtr& x, const VariablePtr& h, const VariablePtr& c,
    const VariablePtr& weight_l0, const VariablePtr& weight,
    const VariablePtr& bias, const LSTMOptions& options) {
  std::vector<VariablePtr> inputs{x, h, c, weight_l0};
  if (weight) inputs.push_back(weight);
  if (bias) inputs.push_back(bias);
  auto outs = apply_function(decl::LSTM, options, inputs);
  return {outs[0], outs[1], outs[2]};
}

}  // namespace functions

}  // namespace mg

namespace mg::parametric_functions {

namespace F = functions;

std::pair<VariablePtr, VariablePtr> lstm_cell(const VariablePtr& x,
                                              const VariablePtr& h,
                                              const VariablePtr& c,
                                              int64_t state_size,
                                              ParameterScope scope) {
  const std::string tag = "[lstm_cell] ";
  if (!x || !h || !c)
    throw std::invalid_argument(tag + "x, h and c must be set");
  const Shape& xs = x->shape();
  if (xs.size() != 2 || state_size <= 0) {
    throw std::invalid_argument(tag + "x with shape " + shape_str(xs) +
                                " must be (N, I) and state_size (" +
                                std::to_string(state_size) + ") positive");
  }
  const Shape state{xs[0], state_size};
  for (const auto& [name, v] : {std::pair{"h", h}, std::pair{"c", c}}) {
    if (v->shape() != state) {
      throw std::invalid_argument(
          tag + name + " with shape " + shape_str(v->shape()) + " must be " +
          shape_str(state) + " for x with shape " + shape_str(xs) +
          " and state_size " + std::to_string(state_size));
    }
  }
  auto gates = affine(F::concatenate({x, h}, 1), 4 * state_size, scope);
  auto iofg = F::split(F::reshape(gates, {xs[0], 4, state_size}), 1);
  auto c_next = F::add2(F::mul2(F::sigmoid(iofg[2]), c),
                        F::mul2(F::sigmoid(iofg[0]), F::tanh(iofg[3])));
  auto h_next = F::mul2(F::sigmoid(iofg[1]), F::tanh(c_next));
  return {h_next, c_next};
}

std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(const VariablePtr& x,
                                                       const VariablePtr& h0,
                                                       const VariablePtr& c0,
                                                       int64_t hidden,
                                                       ParameterScope scope) {
  if (!x || x->shape().size() != 3 || x->shape()[0] == 0) {
    throw std::invalid_argument(
        "[lstm] x must be a (T, N, I) sequence with T > 0, got shape " +
        (x ? shape_str(x->shape()) : std::string("null")));
  }
  if (hidden <= 0) {
    throw std::invalid_argument(
        msg("[lstm] hidden ", hidden, " must be positive"));
  }
  const int64_t batch = x->shape()[1], inputs = x->shape()[2];
  const Shape state{batch, hidden};
  for (const auto& [name, v] : {std::pair{"h0", h0}, std::pair{"c0", c0}}) {
    if (v && v->shape() != state) {
      throw std::invalid_argument(
          msg("[lstm] ", name, " with shape ", shape_str(v->shape()),
              " must be ", shape_str(state), " for x with shape ",
              shape_str(x->shape()), " and hidden ", hidden));
    }
  }
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  auto w0 = scope.get_or_create("weight_l0", {1, 4, hidden, inputs + hidden},
                                uniform_initializer(-bound, bound));
  auto b = scope.get_or_create("bias", {1, 1, 4, hidden},
                               uniform_initializer(-bound, bound));
  const Shape stacked{1, 1, batch, hidden};
  auto h = h0 ? F::reshape(h0, stacked, false) : make_variable(stacked);
  auto c = c0 ? F::reshape(c0, stacked, false) : make_variable(stacked);
  auto [y, hn, cn] = F::lstm(x, h, c, w0, nullptr, b);
  return {y, F::reshape(hn, state, false), F::reshape(cn, state, false)};
}

}  // namespace mg::parametric_functions
