// CReLU and CELU on the CPU: the math is ReLU's and ELU's functors
// (functions/ops/unary_ops.hpp), applied to x and to -x.
#include <mixgraph/functions/concat_activation.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Calls fn(x_offset, y_offset, len) for runs of x that lie in one (o, :, :)
// slab of `span` elements: x[x_offset + i] goes to y[y_offset + i] (first
// half) and y[y_offset + span + i] (second half). Parallel over blocks.
template <class Fn>
void for_each_run(int64_t outer, int64_t span, Fn&& fn) {
  for_each_block(outer * span, [&](int64_t begin, int64_t len) {
    while (len > 0) {
      const int64_t o = begin / span, j = begin % span;
      const int64_t n = std::min(len, span - j);
      fn(begin, o * 2 * span + j, n);
      begin += n;
      len -= n;
    }
  });
}

// The activation each applies to x and -x.
ops::ReLU activation(const CReLUOptions&) { return {}; }
ops::ELU activation(const CELUOptions& o) {
  ops::ELU elu;
  elu.alpha = o.alpha;
  return elu;
}

template <class T, class Base>
class ConcatActivationCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t span = this->split_.size * this->split_.inner;
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const auto f = activation(this->options());
    for_each_run(this->split_.outer, span,
                 [&](int64_t xo, int64_t yo, int64_t n) {
                   float xb[kBlock], pos[kBlock], neg[kBlock];
                   const float* xf = load(x + xo, xb, n);
                   for (int64_t i = 0; i < n; ++i) {
                     pos[i] = f(xf[i]);
                     neg[i] = f(-xf[i]);
                   }
                   store(pos, y + yo, n);
                   store(neg, y + yo + span, n);
                 });
  }

  // dx = f'(x) dy_first - f'(-x) dy_second.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const int64_t span = this->split_.size * this->split_.inner;
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const auto f = activation(this->options());
    for_each_run(
        this->split_.outer, span, [&](int64_t xo, int64_t yo, int64_t n) {
          float xb[kBlock], d1[kBlock], d2[kBlock], dxb[kBlock];
          const float* xf = load(x + xo, xb, n);
          const float* dpos = load(dy + yo, d1, n);
          const float* dneg = load(dy + yo + span, d2, n);
          for (int64_t i = 0; i < n; ++i) {
            const float a = xf[i];
            dxb[i] = f.grad(a, f(a), dpos[i]) - f.grad(-a, f(-a), dneg[i]);
          }
          store(dxb, dx + xo, n, accum[0]);
        });
  }
};

template <class T>
using CReLUCpu = ConcatActivationCpu<T, CReLU>;
template <class T>
using CELUCpu = ConcatActivationCpu<T, CELU>;

}  // namespace

void register_concat_activation(FunctionRegistry& r) {
  register_float_types<CReLUCpu>(r, decl::CReLU, "cpu");
  register_float_types<CELUCpu>(r, decl::CELU, "cpu");
}

}  // namespace mg::cpu
