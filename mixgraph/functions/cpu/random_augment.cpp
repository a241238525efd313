// RandomFlip, RandomShift, RandomCrop, RandomErase and ImageAugmentation on
// the CPU: the draws
// made serially (one generator), values moved as they are, grads summed in
// fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/random_augment.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class Base>
struct GatherCpu {
  template <class T>
  class Of : public Base {
   public:
    using Base::Base;

   protected:
    void forward_impl(const Variables& in, const Variables& out) override {
      this->draw_map();
      const T* x = input<T>(in[0]);
      T* y = output<T>(out[0]);
      const T fill(this->fill_value());
      this->for_each_source(
          [&](int64_t e, int64_t src) { y[e] = src < 0 ? fill : x[src]; });
    }

    void backward_impl(const Variables& in, const Variables& out,
                       const std::vector<bool>& propagate_down,
                       const std::vector<bool>& accum) override {
      if (!propagate_down[0]) return;
      const std::vector<float> dy = grad_floats_of<T>(out[0]);
      std::vector<float> g(static_cast<size_t>(in[0]->size()), 0.0f);
      this->for_each_source([&](int64_t e, int64_t src) {
        if (src >= 0) g[src] += dy[e];
      });
      store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
  };
};

template <class T>
class RandomEraseCpu : public RandomErase {
 public:
  using RandomErase::RandomErase;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y = floats_of<T>(in[0]);
    erase(y);
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> g = grad_floats_of<T>(out[0]);
    if (opts_.ste_fine_grained) {
      for (size_t e = 0; e < g.size(); ++e) {
        if (erased_[e]) g[e] = 0.0f;
      }
    }
    store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class ImageAugmentationCpu : public ImageAugmentation {
 public:
  using ImageAugmentation::ImageAugmentation;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y(static_cast<size_t>(out[0]->size()));
    augment(floats_of<T>(in[0]), y);
    store(y.data(), output<T>(out[0]), out[0]->size());
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

}  // namespace

void register_random_augment(FunctionRegistry& r) {
  register_float_types<GatherCpu<RandomFlip>::Of>(r, decl::RandomFlip, "cpu");
  register_float_types<GatherCpu<RandomShift>::Of>(r, decl::RandomShift, "cpu");
  register_float_types<GatherCpu<RandomCrop>::Of>(r, decl::RandomCrop, "cpu");
  register_float_types<RandomEraseCpu>(r, decl::RandomErase, "cpu");
  register_float_types<ImageAugmentationCpu>(r, decl::ImageAugmentation, "cpu");
}

}  // namespace mg::cpu
