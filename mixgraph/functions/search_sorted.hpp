// SearchSorted: where values would go in sorted sequences (NNabla's;
// numpy.searchsorted, torch.searchsorted).
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct SearchSortedOptions {
  /// false: the first index i with v <= sorted[i] (lower bound); true: the
  /// first with v < sorted[i] (upper bound).
  bool right = false;

  MG_FIELDS(right);
};

namespace decl {
/// SearchSorted's declaration: indices held in fp32 (exact to 2^24, a
/// sequence of 16 million), never in half, whose integers stop at 2048.
inline constexpr FunctionDeclOf<SearchSortedOptions> SearchSorted{
    {"SearchSorted",
     "searchsorted",
     {Port{"sorted_sequence", Port::floating, false},
      Port{"values", Port::floating, false}},
     {Port{"y", Port::float32}}}};
}  // namespace decl

/// sorted_sequence (..., N), each row sorted ascending, and values (...,
/// M) with the same leading axes: y (..., M) holds, for each value, the
/// index in its row where it would be inserted to keep the row sorted (0 to
/// N). A row that is not sorted gives unspecified indices (as NumPy's). No
/// gradient.
class SearchSorted : public FunctionWith<SearchSortedOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t rows_ = 0, n_ = 0, m_ = 0;
};

namespace functions {
/// The insertion index of each value in its row of sorted_sequence.
VariablePtr searchsorted(const VariablePtr& sorted_sequence,
                         const VariablePtr& values, bool right = false);
}  // namespace functions

}  // namespace mg
