// MeanSubtraction on the CPU: the batch mean and the running mean in fp32,
// t read and written exactly in the type it is held in (int32, or fp32 for
// NNabla's float parameter).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/mean_subtraction.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class MeanSubtractionCpu : public MeanSubtraction {
 public:
  using MeanSubtraction::MeanSubtraction;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t M = samples_, N = features_;
    const std::vector<float> x = floats_of<T>(in[0]);
    if (opts_.update_running_mean) {
      const int64_t t = index_data(in[2], tag(), "t")[0];
      if (t < 0) {
        throw std::invalid_argument(
            msg(tag(), "t holds ", t, ": the batch count cannot be negative"));
      }
      std::vector<float> mean(N, 0.0f);
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) mean[j] += x[i * N + j];
      }
      const float coef = 1.0f / static_cast<float>(t + 1);
      float* rm = in[1]->data()->cast<float>();
      for (int64_t j = 0; j < N; ++j) {
        rm[j] += (mean[j] / static_cast<float>(M) - rm[j]) * coef;
      }
      count_ = std::min<int64_t>(t + 1, std::numeric_limits<int32_t>::max());
      if (holds_integers(in[2])) {
        in[2]->data()->cast<int32_t>()[0] = static_cast<int32_t>(count_);
      } else {
        in[2]->data()->cast<float>()[0] = static_cast<float>(count_);
      }
    }
    const float* rm = in[1]->data()->get<const float>();
    std::vector<float> y(x.size());
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) y[i * N + j] = x[i * N + j] - rm[j];
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> dx = grad_floats_of<T>(out[0]);
    if (opts_.update_running_mean) {
      const float f = 1.0f - 1.0f / (static_cast<float>(count_) *
                                     static_cast<float>(samples_));
      for (float& v : dx) v *= f;
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_mean_subtraction(FunctionRegistry& r) {
  register_float_types<MeanSubtractionCpu>(r, decl::MeanSubtraction, "cpu");
}

}  // namespace mg::cpu
