// SearchSorted on the CPU: a binary search per value in its row.
#include <algorithm>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/search_sorted.hpp>

namespace mg::cpu {

namespace {

template <class T>
class SearchSortedCpu : public SearchSorted {
 public:
  using SearchSorted::SearchSorted;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> s = floats_of<T>(in[0]), v = floats_of<T>(in[1]);
    float* y = out[0]->data()->template cast<float>(/*write_only=*/true);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* row = s.data() + r * n_;
      for (int64_t k = r * m_; k < (r + 1) * m_; ++k) {
        const float* at = opts_.right ? std::upper_bound(row, row + n_, v[k])
                                      : std::lower_bound(row, row + n_, v[k]);
        y[k] = static_cast<float>(at - row);
      }
    }
  }

  // No gradient.
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

}  // namespace

void register_search_sorted(FunctionRegistry& r) {
  register_float_types<SearchSortedCpu>(r, decl::SearchSorted, "cpu");
}

}  // namespace mg::cpu
