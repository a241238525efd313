// BroadcastTo and Meshgrid on the CPU: forward copies the input (of the type
// it holds, integers included) into every (outer, inner) place of its
// output; backward sums those places in fp32.
#include <mixgraph/functions/broadcast_to.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// y (outer, mid, inner)[o, m, i] = x[m].
template <class U>
void spread(const U* x, U* y, const SpreadLayout& l) {
#pragma omp parallel for schedule(static) if (l.outer * l.mid * l.inner >= \
                                              parallel_min())
  for (int64_t o = 0; o < l.outer; ++o) {
    U* row = y + o * l.mid * l.inner;
    for (int64_t m = 0; m < l.mid; ++m) {
      std::fill_n(row + m * l.inner, l.inner, x[m]);
    }
  }
}

// dx[m] (+)= sum over o, i of dy[o, m, i], summed in fp32.
template <class T>
void spread_grad(Variable* y, Variable* x, const SpreadLayout& l, bool accum) {
  const std::vector<float> dy = grad_floats_of<T>(y);
  std::vector<float> dx(static_cast<size_t>(l.mid), 0.0f);
  for (int64_t o = 0; o < l.outer; ++o) {
    const float* row = dy.data() + o * l.mid * l.inner;
    for (int64_t m = 0; m < l.mid; ++m) {
      const float* r = row + m * l.inner;
      dx[m] += lanes_sum(l.inner, [r](int64_t i) { return r[i]; });
    }
  }
  store(dx.data(), input_grad<T>(x, accum), l.mid, accum);
}

template <class T>
class BroadcastToCpu : public BroadcastTo {
 public:
  using BroadcastTo::BroadcastTo;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // x gives the shape alone: its type does not matter.
    dispatch_layout<T>({in[1]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      spread(input<U>(in[1]), output<U>(out[0]), layout_);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) spread_grad<T>(out[0], in[1], layout_, accum[1]);
  }
};

template <class T>
class MeshgridCpu : public Meshgrid {
 public:
  using Meshgrid::Meshgrid;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      for (size_t k = 0; k < in.size(); ++k) {
        spread(input<U>(in[k]), output<U>(out[k]), layouts_[k]);
      }
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (size_t k = 0; k < in.size(); ++k) {
      if (propagate_down[k]) {
        spread_grad<T>(out[k], in[k], layouts_[k], accum[k]);
      }
    }
  }
};

}  // namespace

void register_broadcast_to(FunctionRegistry& r) {
  register_float_types<BroadcastToCpu>(r, decl::BroadcastTo, "cpu");
  register_float_types<MeshgridCpu>(r, decl::Meshgrid, "cpu");
}

}  // namespace mg::cpu
