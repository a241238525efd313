#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/builder.hpp>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

void BatchMatmul::setup_impl(const Variables& in, const Variables& out) {
  const Shape& a = in[0]->shape();
  const Shape& b = in[1]->shape();
  for (int i = 0; i < 2; ++i) {
    const Shape& s = i ? b : a;
    if (s.size() < 2) {
      throw std::invalid_argument(msg(tag(), (i ? "b" : "a"), " with shape ",
                                      shape_str(s),
                                      " must have at least 2 dimensions"));
    }
  }
  const size_t na = a.size(), nb = b.size();
  m_ = opts_.transpose_a ? a[na - 1] : a[na - 2];
  k_ = opts_.transpose_a ? a[na - 2] : a[na - 1];
  const int64_t kb = opts_.transpose_b ? b[nb - 1] : b[nb - 2];
  n_ = opts_.transpose_b ? b[nb - 2] : b[nb - 1];
  const auto with = [](bool t) {
    return t ? std::string(" (transposed)") : std::string();
  };
  if (k_ != kb) {
    throw std::invalid_argument(
        msg(tag(), "a with shape ", shape_str(a), with(opts_.transpose_a),
            " has ", k_, " columns, but b with shape ", shape_str(b),
            with(opts_.transpose_b), " has ", kb, " rows"));
  }
  // Matrix i of a meets matrix i of b, so the batch dimensions must be
  // equal one by one: equal counts alone would pair (2, 3) with (3, 2)
  // wrongly.
  const Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  if (batch_a != batch_b) {
    throw std::invalid_argument(
        msg(tag(), "a with shape ", shape_str(a), " has batch dimensions ",
            shape_str(batch_a), ", but b with shape ", shape_str(b), " has ",
            shape_str(batch_b), "; they must be equal"));
  }
  batch_ = shape_size(batch_a);
  Shape y(a.begin(), a.end() - 2);
  y.push_back(m_);
  y.push_back(n_);
  out[0]->reshape(y);
}

namespace functions {

VariablePtr batch_matmul(const VariablePtr& a, const VariablePtr& b,
                         bool transpose_a, bool transpose_b) {
  return apply_function1(decl::BatchMatmul,
                         BatchMatmulOptions{transpose_a, transpose_b}, {a, b});
}

}  // namespace functions

}  // namespace mg
