// Interpolate on the CPU: x converted to fp32 once, resized one axis at a
// time (linear interpolation of several axes is the product of their 1-D
// weights), rounded to the storage type once. Backward runs the transposed
// passes in reverse order, adding in fp32.
#include <mixgraph/functions/interpolate.hpp>

#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// s viewed as (outer, s[axis], inner) around r.axis.
struct AxisView {
  int64_t outer, inner;
};

AxisView view(const Shape& s, int axis) {
  const int nd = static_cast<int>(s.size());
  return {shape_size(s, 0, axis), shape_size(s, axis + 1, nd)};
}

// dst (outer, r.out, inner) from src (outer, r.in, inner). A weight of 0
// copies (no 0 * inf from a neighbour that is not used).
std::vector<float> resize(const std::vector<float>& src, const Shape& s,
                          const ResizedAxis& r) {
  const AxisView v = view(s, r.axis);
  const int64_t inner = v.inner, rows = v.outer * r.out;
  std::vector<float> dst(static_cast<size_t>(rows * inner));
#pragma omp parallel for schedule(static) if (rows * inner >= parallel_min())
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t o = t / r.out, j = t % r.out;
    const float* a = src.data() + (o * r.in + r.i0[j]) * inner;
    const float* b = src.data() + (o * r.in + r.i1[j]) * inner;
    float* d = dst.data() + t * inner;
    const float w = r.w[j];
    if (w == 0.0f) {
      std::copy(a, a + inner, d);
    } else {
      for (int64_t k = 0; k < inner; ++k) d[k] = (1.0f - w) * a[k] + w * b[k];
    }
  }
  return dst;
}

// The transpose of resize: dsrc (outer, r.in, inner) gathers each dst
// element back to its two sources with their weights.
std::vector<float> resize_grad(const std::vector<float>& g, const Shape& s,
                               const ResizedAxis& r) {
  const AxisView v = view(s, r.axis);
  const int64_t inner = v.inner;
  std::vector<float> dsrc(static_cast<size_t>(v.outer * r.in * inner), 0.0f);
#pragma omp parallel for schedule(static) if (v.outer * r.out * inner >= \
                                              parallel_min())
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < r.out; ++j) {
      const float* gj = g.data() + (o * r.out + j) * inner;
      float* a = dsrc.data() + (o * r.in + r.i0[j]) * inner;
      float* b = dsrc.data() + (o * r.in + r.i1[j]) * inner;
      const float w = r.w[j];
      if (w == 0.0f) {
        for (int64_t k = 0; k < inner; ++k) a[k] += gj[k];
      } else {
        for (int64_t k = 0; k < inner; ++k) {
          a[k] += (1.0f - w) * gj[k];
          b[k] += w * gj[k];
        }
      }
    }
  }
  return dsrc;
}

template <class T>
class InterpolateCpu : public Interpolate {
 public:
  using Interpolate::Interpolate;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y = floats_of<T>(in[0]);
    Shape s = in[0]->shape();
    for (const ResizedAxis& r : axes_) {
      y = resize(y, s, r);
      s[r.axis] = r.out;
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> g = grad_floats_of<T>(out[0]);
    Shape s = out[0]->shape();
    for (auto r = axes_.rbegin(); r != axes_.rend(); ++r) {
      g = resize_grad(g, s, *r);
      s[r->axis] = r->in;
    }
    store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_interpolate(FunctionRegistry& r) {
  register_float_types<InterpolateCpu>(r, decl::Interpolate, "cpu");
}

}  // namespace mg::cpu
