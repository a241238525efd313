#include <mixgraph/functions/search_sorted.hpp>

#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void SearchSorted::setup_impl(const Variables& in, const Variables& out) {
  const Shape& s = in[0]->shape();
  const Shape& v = in[1]->shape();
  const bool leading_match = !s.empty() && !v.empty() && s.size() == v.size() &&
                             std::equal(s.begin(), s.end() - 1, v.begin());
  if (!leading_match) {
    throw std::invalid_argument(
        msg(tag(), "sorted_sequence with shape ", shape_str(s),
            " and values with shape ", shape_str(v),
            " must be (..., N) and (..., M) with the same leading axes"));
  }
  n_ = s.back();
  m_ = v.back();
  rows_ = shape_size(s, 0, static_cast<int>(s.size()) - 1);
  out[0]->reshape(v);
}

namespace functions {

VariablePtr searchsorted(const VariablePtr& sorted_sequence,
                         const VariablePtr& values, bool right) {
  return apply_function1(decl::SearchSorted, SearchSortedOptions{right},
                         {sorted_sequence, values});
}

}  // namespace functions

}  // namespace mg
