// Dropout on the CPU: the mask is drawn serially (one generator), applied in
// fp32 blocks.
#include <mixgraph/functions/dropout.hpp>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class DropoutCpu : public Dropout {
 public:
  using Dropout::Dropout;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t n = in[0]->size();
    draw_mask(n);
    apply(input<T>(in[0]), output<T>(out[0]), n, false);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    apply(output_grad<T>(out[0]), input_grad<T>(in[0], accum[0]), in[0]->size(),
          accum[0]);
  }

  // dst (+)= src * mask * scale.
  void apply(const T* src, T* dst, int64_t n, bool accum) const {
    const uint8_t* m = mask_.data();
    const float s = scale_;
    for_each_block(n, [&](int64_t begin, int64_t len) {
      float buf[kBlock], res[kBlock];
      const float* f = load(src + begin, buf, len);
      for (int64_t i = 0; i < len; ++i) res[i] = m[begin + i] ? f[i] * s : 0.0f;
      store(res, dst + begin, len, accum);
    });
  }
};

}  // namespace

void register_dropout(FunctionRegistry& r) {
  register_float_types<DropoutCpu>(r, decl::Dropout, "cpu");
}

}  // namespace mg::cpu
