// VATNoise on the CPU: each sample's squared norm summed in fp32; backward
// writes eps dy into w in the type w is held in.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/vat_noise.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace mg::cpu {

namespace {

template <class T>
class VATNoiseCpu : public VATNoise {
 public:
  using VATNoise::VATNoise;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> x = floats_of<T>(in[0]);
    for (int64_t s = 0; s < samples_; ++s) {
      float* xs = x.data() + s * size_;
      float sum = 1e-8f;
      for (int64_t k = 0; k < size_; ++k) sum += xs[k] * xs[k];
      const float scale = opts_.eps / std::sqrt(sum);
      for (int64_t k = 0; k < size_; ++k) xs[k] *= scale;
    }
    store(x.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    std::vector<float> w = grad_floats_of<T>(out[0]);
    for (float& v : w) v *= opts_.eps;
    if (held_in_float(in[1])) {
      std::copy(w.begin(), w.end(), output<float>(in[1]));
    } else {
      store(w.data(), output<T>(in[1]), in[1]->size());
    }
    if (propagate_down[0] && !accum[0]) {
      std::fill_n(input_grad<T>(in[0], false), in[0]->size(), T(0.0f));
    }
  }
};

}  // namespace

void register_vat_noise(FunctionRegistry& r) {
  register_float_types<VATNoiseCpu>(r, decl::VATNoise, "cpu");
}

}  // namespace mg::cpu
