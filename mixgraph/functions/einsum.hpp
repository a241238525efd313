// Einsum: the Einstein summation of any number of arrays, as NNabla's
// (numpy.einsum's equations: letters, "...", "->").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct EinsumOptions {
  /// "ij,jk->ik", "bii->bi", "...ij,...jk", "i,i": one term per input,
  /// comma-separated, and after "->" the output's term; without "->" the
  /// output is "..." then the letters that appear once, in ASCII order
  /// (upper case first), as NNabla's and NumPy's.
  std::string equation;

  MG_FIELDS(equation);
};

namespace decl {
/// Einsum's declaration: any number of inputs.
inline constexpr FunctionDeclOf<EinsumOptions> Einsum{{"Einsum",
                                                       "einsum",
                                                       {Port{"x"}},
                                                       {Port{"y"}},
                                                       Precision::reduced,
                                                       /*variadic=*/true}};
}  // namespace decl

/// y[out] = sum over the labels not in the output of the product of the
/// inputs at the labels' indices. A label repeated in one term reads its
/// diagonal; "..." stands for the same number of leading axes in every term
/// that has it, broadcasting where one of them is 1; a label missing from
/// the output is summed. As NNabla's, the inputs are contracted pairwise
/// from the left, each step a batched matrix product summed in fp32 (labels
/// no later step needs summed out first, in double). dx_k is the same
/// contraction of dy and the other inputs into x_k's labels (its diagonal
/// for a repeated label, summed over broadcast axes).
class Einsum : public FunctionWith<EinsumOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Every index (the output's first, then the summed ones) with its size.
  std::vector<int64_t> sizes_;
  int64_t out_labels_ = 0;  // the first out_labels_ of sizes_ are y's axes
  /// strides_[k][l]: how far input k moves as index l steps (0 where it
  /// does not have l or broadcasts it; summed over a repeated label); the
  /// last row is y's.
  std::vector<std::vector<int64_t>> strides_;
};

namespace functions {
/// The Einstein summation of xs by `equation` ("ij,jk->ik").
VariablePtr einsum(std::vector<VariablePtr> xs, const std::string& equation);
}  // namespace functions

}  // namespace mg
