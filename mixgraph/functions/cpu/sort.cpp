// Sort on the CPU: a stable sort of each line along the axis by value read
// exactly (in double), NaN last; the values move as T, the grad goes back
// through the permutation.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/sort.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mg::cpu {

namespace {

template <class T>
class SortCpu : public Sort {
 public:
  using Sort::Sort;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // The keys in double: exact for T, fp32 data and int32 data alike (int32
    // data read in half would tie above 2048).
    std::vector<double> x(static_cast<size_t>(in[0]->size()));
    if (holds_integers(in[0])) {
      const double* d = in[0]->data()->get<const double>();
      std::copy(d, d + x.size(), x.begin());
    } else {
      const std::vector<float> f = floats_of<T>(in[0]);
      std::copy(f.begin(), f.end(), x.begin());
    }
    const bool rev = opts_.reverse;
    // a before b: smaller (larger with reverse) first, NaN after numbers.
    auto before = [rev](double a, double b) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
      return rev ? a > b : a < b;
    };
#pragma omp parallel for schedule(static) if (outer_ * n_ * inner_ >= \
                                              kParallelMinCompute)
    for (int64_t line = 0; line < outer_ * inner_; ++line) {
      const int64_t base = (line / inner_) * n_ * inner_ + line % inner_;
      std::vector<int32_t> perm(static_cast<size_t>(n_));
      std::iota(perm.begin(), perm.end(), 0);
      std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) {
        return before(x[base + a * inner_], x[base + b * inner_]);
      });
      for (int64_t k = 0; k < n_; ++k) index_[base + k * inner_] = perm[k];
    }
    if (!opts_.only_index) {
      const T* xs = input<T>(in[0]);
      T* y = output<T>(out[0]);
      for_each_element([&](int64_t e, int64_t src) { y[e] = xs[src]; });
    }
    if (opts_.with_index || opts_.only_index) {
      int32_t* idx = output<int32_t>(out[opts_.only_index ? 0 : 1]);
      std::copy(index_.begin(), index_.end(), idx);
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    T* dx = input_grad<T>(in[0], accum[0]);
    if (opts_.only_index) {  // indices are piecewise constant: no grad
      if (!accum[0]) std::fill_n(dx, in[0]->size(), T(0.0f));
      return;
    }
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> g(dy.size());
    for_each_element([&](int64_t e, int64_t src) { g[src] = dy[e]; });
    store(g.data(), dx, in[0]->size(), accum[0]);
  }

 private:
  // fn(element of y, the element of x it holds).
  template <class Fn>
  void for_each_element(Fn&& fn) const {
    const int64_t size = outer_ * n_ * inner_;
    for (int64_t e = 0; e < size; ++e) {
      const int64_t i = e % inner_, o = e / (n_ * inner_);
      fn(e, (o * n_ + index_[e]) * inner_ + i);
    }
  }
};

}  // namespace

void register_sort(FunctionRegistry& r) {
  register_float_types<SortCpu>(r, decl::Sort, "cpu");
}

}  // namespace mg::cpu
