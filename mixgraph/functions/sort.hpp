// Sort: the elements of x in order along an axis, with the permutation as
// int32 indices (NNabla's Sort).
#pragma once

#include <mixgraph/graph/function.hpp>
#include <vector>

namespace mg {

struct SortOptions {
  /// The axis to sort along (negative counts from the end).
  int axis = -1;
  /// Descending instead of ascending.
  bool reverse = false;
  /// Also output the indices: (values, indices).
  bool with_index = false;
  /// Output the indices alone (implies with_index).
  bool only_index = false;

  MG_FIELDS(axis, reverse, with_index, only_index);
};

namespace decl {
/// Sort's declaration: the values in the context's type, the indices int32
/// (never rounded by half, whose integers stop at 2048). With only_index
/// the one output is the indices.
inline constexpr FunctionDeclOf<SortOptions> Sort{
    {"Sort", "sort", {Port{"x"}}, {Port{"y"}, Port{"indices", Port::integer}}}};
}  // namespace decl

/// y = x sorted along axis, ascending (descending with reverse); indices[k]
/// is the position along axis that y[k] came from. The sort is stable (ties
/// keep their order, in both directions) and puts NaN last, so the result
/// is deterministic: NNabla's std::sort is neither. Keys compare exactly
/// (int32 data too); y comes out in the context's type. dx scatters dy back
/// through the permutation (NNabla's CPU backward gathers instead, which is
/// the grad of the inverse permutation); the indices get no grad.
class Sort : public FunctionWith<SortOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override {
    return opts_.with_index && !opts_.only_index ? 2 : 1;
  }
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;  // x as (outer, n, inner)
  /// The last forward's permutation, indices along the axis, x's shape.
  std::vector<int32_t> index_;
};

namespace functions {
/// x sorted along axis (descending with reverse).
VariablePtr sort(const VariablePtr& x, int axis = -1, bool reverse = false);
/// (sorted values, int32 indices) of x along axis.
std::vector<VariablePtr> sort_with_index(const VariablePtr& x, int axis = -1,
                                         bool reverse = false);
/// The int32 indices that sort x along axis (argsort).
VariablePtr sort_index(const VariablePtr& x, int axis = -1,
                       bool reverse = false);
}  // namespace functions

}  // namespace mg
