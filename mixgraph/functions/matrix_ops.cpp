#include <mixgraph/functions/matrix_ops.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void MatrixDiag::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x.empty()) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " needs at least 1 axis"));
  }
  m_ = x.back();
  rows_ = m_ ? shape_size(x) / m_ : 0;
  Shape y = x;
  y.push_back(m_);
  out[0]->reshape(y);
}

void MatrixDiagPart::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const size_t nd = x.size();
  if (nd < 2 || x[nd - 1] != x[nd - 2]) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " must end in two axes of one size (square "
                                    "matrices)"));
  }
  m_ = x.back();
  rows_ = m_ ? shape_size(x) / (m_ * m_) : 0;
  out[0]->reshape(Shape(x.begin(), x.end() - 1));
}

void EyeLike::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x.size() != 2) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " must be 2-D"));
  }
  out[0]->reshape(x);
}

namespace functions {

VariablePtr matrix_diag(const VariablePtr& x) {
  return apply_function1(decl::MatrixDiag, MatrixDiagOptions{}, {x});
}

VariablePtr matrix_diag_part(const VariablePtr& x) {
  return apply_function1(decl::MatrixDiagPart, MatrixDiagPartOptions{}, {x});
}

VariablePtr eye_like(const VariablePtr& x, int k) {
  return apply_function1(decl::EyeLike, EyeLikeOptions{k}, {x});
}

}  // namespace functions

}  // namespace mg
