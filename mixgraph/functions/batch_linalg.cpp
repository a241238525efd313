#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/batch_linalg.hpp>
#include <mixgraph/functions/builder.hpp>

#include <stdexcept>

namespace mg {

int64_t BatchSquareFunction::check_square(const Variables& in) {
  const Shape& s = in[0]->shape();
  if (s.size() != 3 || s[1] != s[2]) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(s),
            " must be a batch of square matrices (B, N, N)"));
  }
  batch_ = s[0];
  n_ = s[1];
  return batch_;
}

void BatchInv::setup_impl(const Variables& in, const Variables& out) {
  check_square(in);
  out[0]->reshape(in[0]->shape());
}

void BatchDet::setup_impl(const Variables& in, const Variables& out) {
  out[0]->reshape({check_square(in)});
}

void BatchLogdet::setup_impl(const Variables& in, const Variables& out) {
  out[0]->reshape({check_square(in)});
}

void BatchCholesky::setup_impl(const Variables& in, const Variables& out) {
  check_square(in);
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr batch_inv(const VariablePtr& x) {
  return apply_function1(decl::BatchInv, BatchInvOptions{}, {x});
}

VariablePtr batch_det(const VariablePtr& x) {
  return apply_function1(decl::BatchDet, BatchDetOptions{}, {x});
}

VariablePtr batch_logdet(const VariablePtr& x) {
  return apply_function1(decl::BatchLogdet, BatchLogdetOptions{}, {x});
}

VariablePtr batch_cholesky(const VariablePtr& x, bool upper) {
  return apply_function1(decl::BatchCholesky, BatchCholeskyOptions{upper}, {x});
}

}  // namespace functions

}  // namespace mg
