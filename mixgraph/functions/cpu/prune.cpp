// Prune on the CPU: the threshold by a partial sort (nth_element) of the
// magnitudes in fp32; the grad is a copy of dy.
#include <mixgraph/functions/prune.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class PruneCpu : public Prune {
 public:
  using Prune::Prune;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> x = floats_of<T>(in[0]);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> y(x.size(), 0.0f);
    if (n > 0) {
      std::vector<float> mag(x.size());
      // nan sorts last (as +inf) and is kept, as a comparison with nan
      // would otherwise break the sort's ordering.
      for (int64_t i = 0; i < n; ++i) {
        mag[i] = std::isnan(x[i]) ? INFINITY : std::fabs(x[i]);
      }
      const auto k = static_cast<int64_t>(static_cast<double>(n - 1) *
                                          static_cast<double>(opts_.rate));
      std::nth_element(mag.begin(), mag.begin() + k, mag.end());
      // rate 1: past the largest magnitude, so everything goes (NNabla adds
      // 1 to the threshold).
      const float t = mag[k] + (opts_.rate == 1.0f ? 1.0f : 0.0f);
      for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(x[i]) < t ? 0.0f : x[i];
    }
    store(y.data(), output<T>(out[0]), n);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    store(dy.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_prune(FunctionRegistry& r) {
  register_float_types<PruneCpu>(r, decl::Prune, "cpu");
}

}  // namespace mg::cpu
