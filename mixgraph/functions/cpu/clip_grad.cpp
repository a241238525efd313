// ClipGradByValue and ClipGradByNorm on the CPU: forward copies x; backward
// clips or rescales dy in fp32 (the sums of squares accumulate in fp32).
#include <algorithm>
#include <cmath>
#include <vector>

#include <mixgraph/functions/clip_grad.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/group_index.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// y = x, in T (a copy, exact).
template <class T>
void copy_forward(Variable* x, Variable* y) {
  const T* src = input<T>(x);
  T* dst = output<T>(y);
  std::copy(src, src + x->size(), dst);
}

template <class T>
class ClipGradByValueCpu : public ClipGradByValue {
 public:
  using ClipGradByValue::ClipGradByValue;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    copy_forward<T>(in[0], out[0]);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int i = 1; i < 3; ++i) {
      if (propagate_down[i]) zero_input_grad<T>(in[i], accum[i]);
    }
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> lo = floats_of<T>(in[1]);
    const std::vector<float> hi = floats_of<T>(in[2]);
    std::vector<float> dx(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) {
      // NNabla's order: above max gives max, then below min gives min.
      dx[i] = dy[i] > hi[i] ? hi[i] : (dy[i] < lo[i] ? lo[i] : dy[i]);
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class ClipGradByNormCpu : public ClipGradByNorm {
 public:
  using ClipGradByNorm::ClipGradByNorm;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    copy_forward<T>(in[0], out[0]);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    int64_t groups = 0;
    const std::vector<int64_t> g =
        group_index(in[0]->shape(), reduced_, &groups);
    std::vector<double> sq(groups, 0.0);
    for (size_t i = 0; i < dy.size(); ++i) {
      sq[g[i]] += static_cast<double>(dy[i]) * dy[i];
    }
    std::vector<float> scale(groups);
    for (int64_t k = 0; k < groups; ++k) {
      scale[k] = opts_.clip_norm / static_cast<float>(std::sqrt(sq[k]));
    }
    std::vector<float> dx(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) dx[i] = dy[i] * scale[g[i]];
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_clip_grad(FunctionRegistry& r) {
  register_float_types<ClipGradByValueCpu>(r, decl::ClipGradByValue, "cpu");
  register_float_types<ClipGradByNormCpu>(r, decl::ClipGradByNorm, "cpu");
}

}  // namespace mg::cpu
