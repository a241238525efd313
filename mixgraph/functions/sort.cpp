#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/sort.hpp>
#include <stdexcept>

namespace mg {

void Sort::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int axis = axis_of_shape(opts_.axis, x, tag());
  if (x[axis] > INT32_MAX) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has more entries along axis ", axis,
                                    " than int32 indices can count"));
  }
  outer_ = shape_size(x, 0, axis);
  n_ = x[axis];
  inner_ = shape_size(x, axis + 1, nd);
  index_.assign(static_cast<size_t>(shape_size(x)), 0);
  for (Variable* v : out) v->reshape(x);
}

namespace functions {

namespace {

std::vector<VariablePtr> sort_outputs(const VariablePtr& x, SortOptions o) {
  return apply_function(decl::Sort, o, {x});
}

}  // namespace

VariablePtr sort(const VariablePtr& x, int axis, bool reverse) {
  return sort_outputs(x, {axis, reverse, false, false}).front();
}

std::vector<VariablePtr> sort_with_index(const VariablePtr& x, int axis,
                                         bool reverse) {
  return sort_outputs(x, {axis, reverse, true, false});
}

VariablePtr sort_index(const VariablePtr& x, int axis, bool reverse) {
  return sort_outputs(x, {axis, reverse, true, true}).front();
}

}  // namespace functions

}  // namespace mg
