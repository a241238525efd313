// BatchMatmul: a matrix product per batch entry.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct BatchMatmulOptions {
  /// Use the transpose of each matrix of a (of b).
  bool transpose_a = false;
  bool transpose_b = false;

  MG_FIELDS(transpose_a, transpose_b);
};

namespace decl {
/// BatchMatmul's declaration.
inline constexpr FunctionDeclOf<BatchMatmulOptions> BatchMatmul{
    {"BatchMatmul", "batch_matmul", {Port{"a"}, Port{"b"}}, {Port{"y"}}}};
}  // namespace decl

/// a: (..., M, K) ((..., K, M) with transpose_a); b: (..., K, N) ((..., N,
/// K) with transpose_b); the batch axes (...) hold the same number of
/// matrices. y: a.shape[:-2] + (M, N), accumulated in fp32.
class BatchMatmul : public FunctionWith<BatchMatmulOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t batch_ = 0, m_ = 0, n_ = 0, k_ = 0;
};

namespace functions {
/// op(a) op(b) for each matrix of the batch, op = transpose where asked.
VariablePtr batch_matmul(const VariablePtr& a, const VariablePtr& b,
                         bool transpose_a = false, bool transpose_b = false);
}  // namespace functions

}  // namespace mg
