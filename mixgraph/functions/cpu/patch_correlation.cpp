// PatchCorrelation on the CPU: the images converted to fp32 once, every
// correlation summed in fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/patch_correlation.hpp>
#include <mixgraph/functions/registry.hpp>

#include <vector>

namespace mg::cpu {

namespace {

template <class T>
class PatchCorrelationCpu : public PatchCorrelation {
 public:
  using PatchCorrelation::PatchCorrelation;

 protected:
  // Calls fn(output index, x offset 1, x offset 2) for every pixel pair
  // (offsets of the first channel) each output sums over C.
  template <class Fn>
  void each_pair(const Variables& in, const Variables& out, Fn&& fn) {
    const Shape& s = in[0]->shape();
    const Shape& ys = out[0]->shape();
    const int64_t h = s[1], w = s[2], c = s[3];
    int64_t o = 0;
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t i = 0; i < ys[1]; ++i)
        for (int64_t j = 0; j < ys[2]; ++j)
          for (int64_t si = 0; si < ys[3]; ++si)
            for (int64_t sj = 0; sj < ys[4]; ++sj, ++o) {
              const int64_t y = i * pstep_[0] - pad_[0];
              const int64_t x = j * pstep_[1] - pad_[2];
              const int64_t dy = si * sstep_[0] - shift_[0];
              const int64_t dx = sj * sstep_[1] - shift_[1];
              for (int64_t ky = 0; ky < patch_[0]; ++ky) {
                const int64_t y1 = y + ky, y2 = y1 + dy;
                if (y1 < 0 || y1 >= h || y2 < 0 || y2 >= h) continue;
                for (int64_t kx = 0; kx < patch_[1]; ++kx) {
                  const int64_t x1 = x + kx, x2 = x1 + dx;
                  if (x1 < 0 || x1 >= w || x2 < 0 || x2 >= w) continue;
                  fn(o, ((n * h + y1) * w + x1) * c,
                     ((n * h + y2) * w + x2) * c, c);
                }
              }
            }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> a = floats_of<T>(in[0]);
    const std::vector<float> b = floats_of<T>(in[1]);
    std::vector<float> y(out[0]->size(), 0.0f);
    each_pair(in, out, [&](int64_t o, int64_t i1, int64_t i2, int64_t c) {
      float s = 0.0f;
      for (int64_t k = 0; k < c; ++k) s += a[i1 + k] * b[i2 + k];
      y[o] += s;
    });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const std::vector<float> a = floats_of<T>(in[0]);
    const std::vector<float> b = floats_of<T>(in[1]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> da(a.size(), 0.0f), db(b.size(), 0.0f);
    each_pair(in, out, [&](int64_t o, int64_t i1, int64_t i2, int64_t c) {
      const float g = dy[o];
      for (int64_t k = 0; k < c; ++k) {
        da[i1 + k] += b[i2 + k] * g;
        db[i2 + k] += a[i1 + k] * g;
      }
    });
    if (propagate_down[0]) {
      store(da.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (propagate_down[1]) {
      store(db.data(), input_grad<T>(in[1], accum[1]), in[1]->size(), accum[1]);
    }
  }
};

}  // namespace

void register_patch_correlation(FunctionRegistry& r) {
  register_float_types<PatchCorrelationCpu>(r, decl::PatchCorrelation, "cpu");
}

}  // namespace mg::cpu
