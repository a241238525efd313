#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/lstm.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <stdexcept>
#include <vector>

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
  const int64_t batch = x->shape()[1];
  VariablePtr h = h0 ? h0 : make_variable({batch, hidden});
  VariablePtr c = c0 ? c0 : make_variable({batch, hidden});
  std::vector<VariablePtr> hs;
  for (const auto& xt : F::split(x, 0)) {
    std::tie(h, c) = lstm_cell(xt, h, c, hidden, scope);
    hs.push_back(h);
  }
  return {F::stack(hs, 0), h, c};
}

}  // namespace mg::parametric_functions
