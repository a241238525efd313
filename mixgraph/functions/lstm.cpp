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

namespace mg::parametric_functions {

namespace F = functions;

std::pair<VariablePtr, VariablePtr> lstm_cell(const VariablePtr& x,
                                              const VariablePtr& h,
                                              const VariablePtr& c,
                                              int64_t state_size,
                                              ParameterScope scope) {
  const std::string tag = "[lstm_cell] ";
  if (!x || !h || !c)
    throw std::invalid_argument(msg(tag, "x, h and c must be set"));
  const Shape& xs = x->shape();
  if (xs.size() != 2 || state_size <= 0) {
    throw std::invalid_argument(msg(tag, "x with shape ", shape_str(xs),
                                    " must be (N, I) and state_size (",
                                    state_size, ") positive"));
  }
  const Shape state{xs[0], state_size};
  for (const auto& [name, v] : {std::pair{"h", h}, std::pair{"c", c}}) {
    if (v->shape() != state) {
      throw std::invalid_argument(
          msg(tag, name, " with shape ", shape_str(v->shape()), " must be ",
              shape_str(state), " for x with shape ", shape_str(xs),
              " and state_size ", state_size));
    }
  }
  // NNabla's lstm_cell: <scope>/lstm/affine/W of (I + H, 4, state_size)
  // and b of (4, state_size), so its files load here.
  ParameterScope layer = scope["lstm"]["affine"];
  const int64_t in = xs[1] + state_size;
  auto W = layer.get_or_create("W", {in, 4, state_size},
                               glorot_uniform_initializer(in, 4 * state_size));
  auto b =
      layer.get_or_create("b", {4, state_size}, constant_initializer(0.0f));
  auto gates = F::affine(F::concatenate({x, h}, 1), W, b);
  auto iofg = F::split(gates, 1);
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
        msg("[lstm] x must be a (T, N, I) sequence with T > 0, got shape ",
            (x ? shape_str(x->shape()) : std::string("null"))));
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
  ParameterScope layer = scope["lstm"];  // NNabla's <scope>/lstm/...
  auto w0 = layer.get_or_create("weight_l0", {1, 4, hidden, inputs + hidden},
                                uniform_initializer(-bound, bound));
  auto b = layer.get_or_create("bias", {1, 1, 4, hidden},
                               uniform_initializer(-bound, bound));
  const Shape stacked{1, 1, batch, hidden};
  auto h = h0 ? F::reshape(h0, stacked, false) : make_variable(stacked);
  auto c = c0 ? F::reshape(c0, stacked, false) : make_variable(stacked);
  auto [y, hn, cn] = F::lstm(x, h, c, w0, nullptr, b);
  return {y, F::reshape(hn, state, false), F::reshape(cn, state, false)};
}

}  // namespace mg::parametric_functions
