// Matrix functions on the last two axes of batched arrays, as NNabla's:
// MatrixDiag, MatrixDiagPart and EyeLike.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct MatrixDiagOptions {};
struct MatrixDiagPartOptions {};

namespace decl {
/// MatrixDiag's declaration.
inline constexpr FunctionDeclOf<MatrixDiagOptions> MatrixDiag{
    {"MatrixDiag",
     "matrix_diag",
     {Port{"x", Port::any}},
     {Port{"y", Port::any}}}};
/// MatrixDiagPart's declaration.
inline constexpr FunctionDeclOf<MatrixDiagPartOptions> MatrixDiagPart{
    {"MatrixDiagPart",
     "matrix_diag_part",
     {Port{"x", Port::any}},
     {Port{"y", Port::any}}}};
}  // namespace decl

/// x (..., M) -> y (..., M, M): each last-axis vector laid on the diagonal
/// of a square matrix, zeros elsewhere; dx is dy's diagonal. Integer data
/// keeps its type.
class MatrixDiag : public Function {
 public:
  explicit MatrixDiag(const MatrixDiagOptions&) {}
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t rows_ = 0, m_ = 0;  // x as (rows, M)
};

/// x (..., M, M) -> y (..., M): the diagonal of each square matrix; dx is
/// dy on the diagonal, zeros elsewhere. Integer data keeps its type.
class MatrixDiagPart : public Function {
 public:
  explicit MatrixDiagPart(const MatrixDiagPartOptions&) {}
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t rows_ = 0, m_ = 0;  // y as (rows, M)
};

struct EyeLikeOptions {
  /// The diagonal: 0 the main one, k > 0 above it, k < 0 below.
  int k = 0;

  MG_FIELDS(k);
};

namespace decl {
/// EyeLike's declaration: x gives the shape alone (no grad, any dtype).
inline constexpr FunctionDeclOf<EyeLikeOptions> EyeLike{
    {"EyeLike", "eye_like", {Port{"x", Port::any, false}}, {Port{"y"}}}};
}  // namespace decl

/// y of x's shape (M, N): 1 where column - row = k, else 0, in the
/// context's type.
class EyeLike : public FunctionWith<EyeLikeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// Square matrices with x's last axis on their diagonals.
VariablePtr matrix_diag(const VariablePtr& x);
/// The diagonals of x's square matrices (its last two axes).
VariablePtr matrix_diag_part(const VariablePtr& x);
/// An identity-like matrix of x's (2-D) shape, ones on diagonal k.
VariablePtr eye_like(const VariablePtr& x, int k = 0);
}  // namespace functions

}  // namespace mg
