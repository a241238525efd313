// Einsum on the CPU: one walk over every index (the output's outermost),
// products of the fp32 inputs summed in double; backward walks again and
// scatters dy times the other inputs into each input's grad.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/einsum.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Calls f(offsets) for every index tuple, last index fastest, with each
// tensor's offset (strides[t] per index).
template <class Fn>
void walk(const std::vector<int64_t>& sizes,
          const std::vector<std::vector<int64_t>>& strides, Fn&& f) {
  const int nl = static_cast<int>(sizes.size());
  const size_t nt = strides.size();
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> pos(nl, 0), off(nt, 0);
  while (true) {
    f(off.data());
    int l = nl - 1;
    for (; l >= 0; --l) {
      for (size_t t = 0; t < nt; ++t) off[t] += strides[t][l];
      if (++pos[l] < sizes[l]) break;
      for (size_t t = 0; t < nt; ++t) off[t] -= strides[t][l] * pos[l];
      pos[l] = 0;
    }
    if (l < 0) return;
  }
}

template <class T>
class EinsumCpu : public Einsum {
 public:
  using Einsum::Einsum;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const size_t n = in.size();
    std::vector<std::vector<float>> xs;
    for (Variable* v : in) xs.push_back(floats_of<T>(v));
    std::vector<double> y(static_cast<size_t>(out[0]->size()), 0.0);
    walk(sizes_, strides_, [&](const int64_t* off) {
      double p = 1.0;
      for (size_t k = 0; k < n; ++k) p *= xs[k][off[k]];
      y[off[n]] += p;
    });
    const std::vector<float> yf(y.begin(), y.end());
    store(yf.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const size_t n = in.size();
    std::vector<std::vector<float>> xs;
    for (Variable* v : in) xs.push_back(floats_of<T>(v));
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    for (size_t k = 0; k < n; ++k) {
      if (!propagate_down[k]) continue;
      std::vector<double> dx(static_cast<size_t>(in[k]->size()), 0.0);
      walk(sizes_, strides_, [&](const int64_t* off) {
        double p = dy[off[n]];
        for (size_t j = 0; j < n; ++j) {
          if (j != k) p *= xs[j][off[j]];
        }
        dx[off[k]] += p;
      });
      const std::vector<float> g(dx.begin(), dx.end());
      store_grad<T>(g.data(), in[k], accum[k]);
    }
  }
};

}  // namespace

void register_einsum(FunctionRegistry& r) {
  register_float_types<EinsumCpu>(r, decl::Einsum, "cpu");
}

}  // namespace mg::cpu
