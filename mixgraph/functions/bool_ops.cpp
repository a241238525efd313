#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/bool_ops.hpp>
#include <mixgraph/functions/builder.hpp>
#include <stdexcept>

namespace mg {

void BoolFill::setup_impl(const Variables& in, const Variables& out) {
  const Shape& d = in[0]->shape();
  const Shape& m = in[1]->shape();
  bool ok = m.size() <= d.size();
  for (size_t i = 0; ok && i < m.size(); ++i) {
    const int64_t md = m[m.size() - 1 - i], dd = d[d.size() - 1 - i];
    ok = md == dd || md == 1;
  }
  if (!ok) {
    throw std::invalid_argument(msg(tag(), "mask with shape ", shape_str(m),
                                    " cannot broadcast to data with shape ",
                                    shape_str(d)));
  }
  out[0]->reshape(d);
}

void BoolScatter::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& m = in[1]->shape();
  if (x.empty()) {
    throw std::invalid_argument(msg(tag(), "input with shape ", shape_str(x),
                                    " needs a first axis (one row per "
                                    "nonzero of the mask)"));
  }
  Shape y = m;
  y.insert(y.end(), x.begin() + 1, x.end());
  if (in.size() > 2 && in[2]->shape() != y) {
    throw std::invalid_argument(msg(
        tag(), "output with shape ", shape_str(in[2]->shape()),
        " must have shape ", shape_str(y), " (mask with shape ", shape_str(m),
        ", then input with shape ", shape_str(x), " without its first axis)"));
  }
  row_ = shape_size(x, 1, static_cast<int>(x.size()));
  out[0]->reshape(y);
}

namespace functions {

VariablePtr bool_fill(const VariablePtr& data, const VariablePtr& mask,
                      float value) {
  return apply_function1(decl::BoolFill, BoolFillOptions{value}, {data, mask});
}

VariablePtr bool_scatter(const VariablePtr& input, const VariablePtr& mask) {
  return apply_function1(decl::BoolScatter, BoolScatterOptions{},
                         {input, mask});
}

VariablePtr bool_scatter(const VariablePtr& input, const VariablePtr& mask,
                         const VariablePtr& output) {
  return apply_function1(decl::BoolScatter, BoolScatterOptions{},
                         {input, mask, output});
}

}  // namespace functions

}  // namespace mg
