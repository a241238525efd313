// ONNXResize on the CPU: x converted to fp32 once and resized one axis at a
// time from the last (NNabla's order of sums: along x within each row,
// then the rows), rounded to the storage type once. tf_crop_and_resize's
// outputs outside the input are then set to extrapolation_value. Backward
// runs the transposed passes in reverse order, adding in fp32.
#include <mixgraph/functions/onnx_resize.hpp>

#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

std::pair<int64_t, int64_t> outer_inner(const Shape& s, int axis) {
  return {shape_size(s, 0, axis),
          shape_size(s, axis + 1, static_cast<int>(s.size()))};
}

std::vector<float> resize(const std::vector<float>& src, const Shape& s,
                          const ResizeTaps& r) {
  const auto [outer, inner] = outer_inner(s, r.axis);
  const int64_t rows = outer * r.out;
  std::vector<float> dst(static_cast<size_t>(rows * inner), 0.0f);
#pragma omp parallel for schedule(static) if (rows * inner >= parallel_min())
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t o = t / r.out, j = t % r.out;
    float* d = dst.data() + t * inner;
    for (int k = 0; k < r.taps; ++k) {
      const float w = r.weight[j * r.taps + k];
      const float* a =
          src.data() + (o * r.in + r.index[j * r.taps + k]) * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] += w * a[i];
    }
  }
  return dst;
}

std::vector<float> resize_grad(const std::vector<float>& g, const Shape& s,
                               const ResizeTaps& r) {
  const auto [outer, inner] = outer_inner(s, r.axis);
  std::vector<float> dsrc(static_cast<size_t>(outer * r.in * inner), 0.0f);
#pragma omp parallel for schedule(static) if (outer * r.out * inner >= \
                                              parallel_min())
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < r.out; ++j) {
      const float* gj = g.data() + (o * r.out + j) * inner;
      for (int k = 0; k < r.taps; ++k) {
        const float w = r.weight[j * r.taps + k];
        float* a = dsrc.data() + (o * r.in + r.index[j * r.taps + k]) * inner;
        for (int64_t i = 0; i < inner; ++i) a[i] += w * gj[i];
      }
    }
  }
  return dsrc;
}

// Calls fn(flat index) for each output element that tf_crop_and_resize
// samples outside the input along some axis.
template <class Fn>
void for_each_outside(const Shape& y, const std::vector<ResizeTaps>& axes,
                      Fn&& fn) {
  const int64_t n = shape_size(y);
  const int nd = static_cast<int>(y.size());
  std::vector<int64_t> pos(nd);
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e;
    for (int a = nd - 1; a >= 0; --a) pos[a] = rest % y[a], rest /= y[a];
    for (const ResizeTaps& r : axes) {
      if (r.outside[pos[r.axis]]) {
        fn(e);
        break;
      }
    }
  }
}

template <class T>
class ONNXResizeCpu : public ONNXResize {
 public:
  using ONNXResize::ONNXResize;

 protected:
  bool crop() const {
    return opts_.coordinate_transformation_mode == "tf_crop_and_resize";
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y = floats_of<T>(in[0]);
    Shape s = in[0]->shape();
    for (const ResizeTaps& r : axes_) {
      y = resize(y, s, r);
      s[r.axis] = r.out;
    }
    if (crop()) {
      for_each_outside(s, axes_,
                       [&](int64_t e) { y[e] = opts_.extrapolation_value; });
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> g = grad_floats_of<T>(out[0]);
    Shape s = out[0]->shape();
    if (crop()) for_each_outside(s, axes_, [&](int64_t e) { g[e] = 0.0f; });
    for (auto r = axes_.rbegin(); r != axes_.rend(); ++r) {
      g = resize_grad(g, s, *r);
      s[r->axis] = r->in;
    }
    store(g.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_onnx_resize(FunctionRegistry& r) {
  register_float_types<ONNXResizeCpu>(r, decl::ONNXResize, "cpu");
}

}  // namespace mg::cpu
