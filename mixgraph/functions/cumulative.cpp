#include <mixgraph/functions/cumulative.hpp>

#include <mixgraph/functions/builder.hpp>

namespace mg {

void Cumulative::setup_impl(const Variables& in, const Variables& out) {
  split_ = split_at_axis(in[0]->shape(), opts_.axis, tag());
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr cumsum(const VariablePtr& x, int axis, bool exclusive,
                   bool reverse) {
  return apply_function1(decl::CumSum,
                         CumulativeOptions{axis, exclusive, reverse}, {x});
}

VariablePtr cumprod(const VariablePtr& x, int axis, bool exclusive,
                    bool reverse) {
  return apply_function1(decl::CumProd,
                         CumulativeOptions{axis, exclusive, reverse}, {x});
}

}  // namespace functions

}  // namespace mg
