// Rand, Randint, Randn, RandBinomial, RandBeta, RandGamma and RandomChoice on
// the CPU: the draws in fp32 (int32 for Randint) from the function's
// generator, one serial stream, rounded to the output type once; RandomChoice
// moves x's members as they are (int32 ones too).
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/random_generators.hpp>
#include <mixgraph/functions/registry.hpp>

#include <type_traits>
#include <vector>

namespace mg::cpu {

namespace {

template <class Base>
struct DrawCpu {
  template <class T>
  class Of : public Base {
   public:
    using Base::Base;

   protected:
    void forward_impl(const Variables&, const Variables& out) override {
      const int64_t n = out[0]->size();
      T* y = output<T>(out[0]);
      // float draws straight into y; half and bfloat16 round fp32 draws.
      std::vector<float> buf(std::is_same_v<T, float> ? 0 : n);
      float* drawn = store_buffer(y, buf.data());
      this->draw(drawn, n);
      store(drawn, y, n);
    }
    void backward_impl(const Variables&, const Variables&,
                       const std::vector<bool>&,
                       const std::vector<bool>&) override {}
  };
};

template <class T>
class RandintCpu : public Randint {
 public:
  using Randint::Randint;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    draw(output<int32_t>(out[0]), out[0]->size());
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

template <class T>
class RandomChoiceCpu : public RandomChoice {
 public:
  using RandomChoice::RandomChoice;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    draw(floats_of<T>(in[1]));
    dispatch_layout<T>({in[0]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const U* x = input<U>(in[0]);
      U* y = output<U>(out[0]);
      for (int64_t p = 0; p < populations_; ++p) {
        for (int64_t k = 0; k < samples_; ++k) {
          y[p * samples_ + k] = x[p * members_ + picks_[p * samples_ + k]];
        }
      }
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    // NNabla's rule for both: dy added at the members drawn.
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> g(static_cast<size_t>(in[0]->size()), 0.0f);
    for (int64_t p = 0; p < populations_; ++p) {
      for (int64_t k = 0; k < samples_; ++k) {
        g[p * members_ + picks_[p * samples_ + k]] += dy[p * samples_ + k];
      }
    }
    // store_grad: the grad of an fp32 master (a learned w) stays fp32.
    for (int i = 0; i < 2; ++i) {
      if (propagate_down[i]) store_grad<T>(g.data(), in[i], accum[i]);
    }
  }
};

}  // namespace

void register_random_generators(FunctionRegistry& r) {
  register_float_types<DrawCpu<Rand>::Of>(r, decl::Rand, "cpu");
  register_float_types<RandintCpu>(r, decl::Randint, "cpu");
  register_float_types<DrawCpu<Randn>::Of>(r, decl::Randn, "cpu");
  register_float_types<DrawCpu<RandBinomial>::Of>(r, decl::RandBinomial, "cpu");
  register_float_types<DrawCpu<RandBeta>::Of>(r, decl::RandBeta, "cpu");
  register_float_types<DrawCpu<RandGamma>::Of>(r, decl::RandGamma, "cpu");
  register_float_types<RandomChoiceCpu>(r, decl::RandomChoice, "cpu");
}

}  // namespace mg::cpu
