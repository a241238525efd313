// AddN and MulN on the CPU, in fp32 blocks: each output element is
// computed in fp32 from every input and rounded once.
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/nary.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
std::vector<const T*> inputs_of(const Variables& in) {
  std::vector<const T*> xs;
  for (Variable* v : in) xs.push_back(input<T>(v));
  return xs;
}

template <class T>
class AddNCpu : public AddN {
 public:
  using AddN::AddN;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<const T*> xs = inputs_of<T>(in);
    T* y = output<T>(out[0]);
    for_each_block(out[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], sum[kBlock] = {};
      for (const T* x : xs) {
        const float* xf = load(x + begin, xb, len);
        for (int64_t i = 0; i < len; ++i) sum[i] += xf[i];
      }
      store(sum, y + begin, len);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const T* dy = output_grad<T>(out[0]);
    for (size_t k = 0; k < in.size(); ++k) {
      if (!propagate_down[k]) continue;
      T* dx = input_grad<T>(in[k], accum[k]);
      for_each_block(out[0]->size(), [&](int64_t begin, int64_t len) {
        float dyb[kBlock];
        store(load(dy + begin, dyb, len), dx + begin, len, accum[k]);
      });
    }
  }
};

template <class T>
class MulNCpu : public MulN {
 public:
  using MulN::MulN;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<const T*> xs = inputs_of<T>(in);
    T* y = output<T>(out[0]);
    for_each_block(out[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], prod[kBlock];
      std::fill(prod, prod + len, 1.0f);
      for (const T* x : xs) {
        const float* xf = load(x + begin, xb, len);
        for (int64_t i = 0; i < len; ++i) prod[i] *= xf[i];
      }
      store(prod, y + begin, len);
    });
  }

  // dx_k = dy times the product of the other inputs: formed directly
  // (n - 1 products per element), never as y / x_k, which a zero breaks.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const std::vector<const T*> xs = inputs_of<T>(in);
    const T* dy = output_grad<T>(out[0]);
    for (size_t k = 0; k < in.size(); ++k) {
      if (!propagate_down[k]) continue;
      T* dx = input_grad<T>(in[k], accum[k]);
      for_each_block(out[0]->size(), [&](int64_t begin, int64_t len) {
        float xb[kBlock], dyb[kBlock], g[kBlock];
        const float* dyf = load(dy + begin, dyb, len);
        std::copy(dyf, dyf + len, g);
        for (size_t j = 0; j < xs.size(); ++j) {
          if (j == k) continue;
          const float* xf = load(xs[j] + begin, xb, len);
          for (int64_t i = 0; i < len; ++i) g[i] *= xf[i];
        }
        store(g, dx + begin, len, accum[k]);
      });
    }
  }
};

}  // namespace

void register_nary(FunctionRegistry& r) {
  register_float_types<AddNCpu>(r, decl::AddN, "cpu");
  register_float_types<MulNCpu>(r, decl::MulN, "cpu");
}

}  // namespace mg::cpu
