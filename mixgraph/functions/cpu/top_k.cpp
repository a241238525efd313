// TopKData and TopKGrad on the CPU: keys in fp32 (exact for half and
// bfloat16), a partial sort per sample; the values move as T.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/top_k.hpp>

#include <algorithm>
#include <cmath>

namespace mg::cpu {

namespace {

// |v| in place where abs.
void to_keys(std::vector<float>& v, bool abs) {
  if (!abs) return;
  for (float& f : v) f = std::fabs(f);
}

template <class T>
class TopKDataCpu : public TopKData {
 public:
  using TopKData::TopKData;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> key = floats_of<T>(in[0]);
    to_keys(key, opts_.abs);
    const int64_t k = opts_.k, n = sample_size_;
#pragma omp parallel for schedule(static) if (samples_ * n >= \
                                              kParallelMinCompute)
    for (int64_t s = 0; s < samples_; ++s) {
      top_k_positions(key.data() + s * n, n, k, opts_.largest,
                      index_.data() + s * k);
    }
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    if (!opts_.reduce) std::fill_n(y, out[0]->size(), T(0.0f));
    for (int64_t s = 0; s < samples_; ++s) {
      for (int64_t j = 0; j < k; ++j) {
        const int64_t i = index_[s * k + j];
        y[opts_.reduce ? s * k + j : s * n + i] = x[s * n + i];
      }
    }
    if (opts_.with_index) {
      std::copy(index_.begin(), index_.end(), output<int32_t>(out[1]));
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    if (!opts_.reduce) {  // NNabla's straight-through grad
      store(dy.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
      return;
    }
    const int64_t k = opts_.k, n = sample_size_;
    std::vector<float> g(static_cast<size_t>(in[0]->size()), 0.0f);
    for (int64_t s = 0; s < samples_; ++s) {
      for (int64_t j = 0; j < k; ++j) {
        g[s * n + index_[s * k + j]] = dy[s * k + j];
      }
    }
    store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class TopKGradCpu : public TopKGrad {
 public:
  using TopKGrad::TopKGrad;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::copy_n(input<T>(in[0]), in[0]->size(), output<T>(out[0]));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> key = dy;
    to_keys(key, opts_.abs);
    const int64_t k = opts_.k, n = sample_size_;
    std::vector<float> g(dy.size(), 0.0f);
#pragma omp parallel for schedule(static) if (samples_ * n >= \
                                              kParallelMinCompute)
    for (int64_t s = 0; s < samples_; ++s) {
      std::vector<int32_t> idx(static_cast<size_t>(k));
      top_k_positions(key.data() + s * n, n, k, true, idx.data());
      for (int32_t i : idx) g[s * n + i] = dy[s * n + i];
    }
    store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_top_k(FunctionRegistry& r) {
  register_float_types<TopKDataCpu>(r, decl::TopKData, "cpu");
  register_float_types<TopKGradCpu>(r, decl::TopKGrad, "cpu");
}

}  // namespace mg::cpu
