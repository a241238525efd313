#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <stdexcept>

namespace mg {

namespace {

// Min and ArgMax need an element to pick on every reduced axis.
void check_not_empty(const Shape& x, const std::vector<int>& axes,
                     const std::string& tag) {
  for (int a : axes) {
    if (x[a] == 0) {
      throw std::invalid_argument(msg(tag, "x with shape ", shape_str(x),
                                      " has no elements on axis ", a,
                                      " to pick from"));
    }
  }
}

}  // namespace

void Min::setup_impl(const Variables& in, const Variables& out) {
  Extremum::setup_impl(in, out);
  check_not_empty(in[0]->shape(), axes_, tag());
}

void ArgMax::setup_impl(const Variables& in, const Variables& out) {
  Reduction::setup_impl(in, out);
  check_not_empty(in[0]->shape(), axes_, tag());
}

namespace functions {

VariablePtr min(const VariablePtr& x, std::vector<int> axes, bool keep_dims) {
  ExtremumOptions opts;
  opts.axes = std::move(axes);
  opts.keep_dims = keep_dims;
  return apply_function1(decl::Min, opts, {x});
}

VariablePtr argmax(const VariablePtr& x, std::vector<int> axes,
                   bool keep_dims) {
  return apply_function1(decl::ArgMax,
                         ReduceOptions{std::move(axes), keep_dims}, {x});
}

VariablePtr argmin(const VariablePtr& x, std::vector<int> axes,
                   bool keep_dims) {
  return apply_function1(decl::ArgMin,
                         ReduceOptions{std::move(axes), keep_dims}, {x});
}

}  // namespace functions

}  // namespace mg
