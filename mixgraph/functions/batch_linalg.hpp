// Batched linear algebra on (B, N, N) arrays, as NNabla's: BatchInv,
// BatchDet, BatchLogdet and BatchCholesky. The CPU computes each matrix in
// double with Eigen (LU, SVD, Cholesky) on the converted values.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct BatchInvOptions {};
struct BatchDetOptions {};
struct BatchLogdetOptions {};

struct BatchCholeskyOptions {
  /// Return U with x = U^T U instead of L with x = L L^T.
  bool upper = false;

  MG_FIELDS(upper);
};

namespace decl {
/// BatchInv's declaration.
inline constexpr FunctionDeclOf<BatchInvOptions> BatchInv{
    {"BatchInv", "batch_inv", {Port{"x"}}, {Port{"y"}}}};
/// BatchDet's declaration: fp32 in and out under half (a determinant is a
/// product of N values: its range, as Exp's).
inline constexpr FunctionDeclOf<BatchDetOptions> BatchDet{
    {"BatchDet", "batch_det", {Port{"x"}}, {Port{"y"}}, Precision::float32}};
/// BatchLogdet's declaration.
inline constexpr FunctionDeclOf<BatchLogdetOptions> BatchLogdet{
    {"BatchLogdet", "batch_logdet", {Port{"x"}}, {Port{"y"}}}};
/// BatchCholesky's declaration.
inline constexpr FunctionDeclOf<BatchCholeskyOptions> BatchCholesky{
    {"BatchCholesky", "batch_cholesky", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The shape rule the four share: x (B, N, N), checked.
class BatchSquareFunction : public Function {
 protected:
  /// Checks x and returns B (N in n_).
  int64_t check_square(const Variables& in);
  int64_t batch_ = 0, n_ = 0;
};

/// y (B, N, N): each matrix's inverse (LU with full pivoting). A singular
/// matrix (numerical rank below N) is an error naming it, where NNabla
/// returns infs. dx = -y^T dy y^T (NNabla's), with y computed again in
/// double from x.
class BatchInv : public BatchSquareFunction {
 public:
  explicit BatchInv(const BatchInvOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// y (B,): each matrix's determinant (LU with partial pivoting). dx =
/// dy adj(x)^T, which is dy det(x) x^-T (NNabla's) where x is invertible;
/// the adjugate is taken from an SVD, so a singular x has its true grad
/// (NNabla's is inf or nan there).
class BatchDet : public BatchSquareFunction {
 public:
  explicit BatchDet(const BatchDetOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// y (B,): log |det x| for each matrix, summed from the LU's pivots (so a
/// determinant past fp32's or double's range still gives its log); -inf for
/// a singular matrix, as NNabla's. dx = dy x^-T; its grad at a singular
/// matrix is an error naming it (NNabla's is inf or nan).
class BatchLogdet : public BatchSquareFunction {
 public:
  explicit BatchLogdet(const BatchLogdetOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// y (B, N, N): the Cholesky factor of each symmetric positive definite
/// matrix, read from its lower triangle (as NNabla's, through Eigen): L
/// lower with x = L L^T, or with upper U = L^T. A matrix that is not
/// positive definite is an error naming it (NNabla does not check and
/// returns nans). dx is NNabla's symmetric grad (Murray, arXiv:1602.07527):
/// dx = sym(L^-T phi(L^T dL) L^-1), phi keeping the lower triangle with
/// the diagonal halved, sym(A) = (A + A^T) / 2, with L factored again in
/// double from x.
class BatchCholesky
    : public FunctionWith<BatchCholeskyOptions, BatchSquareFunction> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// The inverse of each matrix of x (B, N, N).
VariablePtr batch_inv(const VariablePtr& x);
/// The determinant of each matrix of x (B, N, N): (B,).
VariablePtr batch_det(const VariablePtr& x);
/// log |det| of each matrix of x (B, N, N): (B,).
VariablePtr batch_logdet(const VariablePtr& x);
/// The Cholesky factor of each symmetric positive definite matrix of x
/// (B, N, N): lower, or upper with upper = true.
VariablePtr batch_cholesky(const VariablePtr& x, bool upper = false);
}  // namespace functions

}  // namespace mg
