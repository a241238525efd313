// DeformableConvolution on the CPU: per sample, the deformed columns
// (bilinear samples times the mask) built in fp32, then a grouped fp32
// GEMM with the weight (oneDNN); backward the transposed GEMMs and the
// bilinear sampler's grads, all in fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/deformable_convolution.hpp>
#include <mixgraph/functions/registry.hpp>

#include <cmath>
#include <vector>

namespace mg::cpu {

namespace {

// One bilinear sample of an H x W map at (y, x): its 4 corners (index -1
// for a corner outside the map) with their weights and the weights'
// derivatives along y and x.
struct Sample {
  bool inside = false;  // (y, x) in (-1, H) x (-1, W)
  int64_t at[4] = {-1, -1, -1, -1};
  float wt[4] = {0, 0, 0, 0}, dwy[4] = {0, 0, 0, 0}, dwx[4] = {0, 0, 0, 0};
};

Sample bilinear(float y, float x, int64_t h, int64_t w) {
  Sample s;
  if (!(y > -1.0f && x > -1.0f && y < static_cast<float>(h) &&
        x < static_cast<float>(w))) {
    return s;
  }
  s.inside = true;
  const float fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  const float ly = y - fy, lx = x - fx, hy = 1.0f - ly, hx = 1.0f - lx;
  const int64_t ys[4] = {y0, y0, y0 + 1, y0 + 1};
  const int64_t xs[4] = {x0, x0 + 1, x0, x0 + 1};
  const float wt[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
  const float dwy[4] = {-hx, -lx, hx, lx};
  const float dwx[4] = {-hy, hy, -ly, ly};
  for (int k = 0; k < 4; ++k) {
    if (ys[k] < 0 || ys[k] >= h || xs[k] < 0 || xs[k] >= w) continue;
    s.at[k] = ys[k] * w + xs[k];
    s.wt[k] = wt[k], s.dwy[k] = dwy[k], s.dwx[k] = dwx[k];
  }
  return s;
}

template <class T>
class DeformableConvolutionCpu : public DeformableConvolution {
 public:
  using DeformableConvolution::DeformableConvolution;

 protected:
  int64_t taps() const { return kh_ * kw_; }
  int64_t positions() const { return oh_ * ow_; }

  // Calls fn(c, tap, p, sample, offset index of dy, mask index or -1) for
  // every column entry of sample n: c the channel, tap = i kw + j, p the
  // output position.
  template <class Fn>
  void each_entry(const float* off, const float* mask, Fn&& fn) const {
    const int64_t hw = h_ * w_, k = taps();
    const int64_t per_dg = c_ / opts_.deformable_group;
    for (int64_t dg = 0; dg < opts_.deformable_group; ++dg) {
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = t / kw_, j = t % kw_;
        for (int64_t oy = 0; oy < oh_; ++oy) {
          for (int64_t ox = 0; ox < ow_; ++ox) {
            const int64_t at = oy * stride_[0] * w_ + ox * stride_[1];
            const int64_t oi = (dg * 2 * k + 2 * t) * hw + at;
            const int64_t mi = mask ? (dg * k + t) * hw + at : -1;
            const float y =
                static_cast<float>(oy * stride_[0] + i * dil_[0] - pad_[0]) +
                off[oi];
            const float x =
                static_cast<float>(ox * stride_[1] + j * dil_[1] - pad_[1]) +
                off[oi + hw];
            const Sample s = bilinear(y, x, h_, w_);
            const int64_t p = oy * ow_ + ox;
            for (int64_t c = dg * per_dg; c < (dg + 1) * per_dg; ++c) {
              fn(c, t, p, s, oi, mi);
            }
          }
        }
      }
    }
  }

  // The columns (C kh kw, Ho Wo) of sample n.
  void columns(const float* x, const float* off, const float* mask,
               float* col) const {
    const int64_t hw = h_ * w_, k = taps(), np = positions();
    each_entry(off, mask,
               [&](int64_t c, int64_t t, int64_t p, const Sample& s, int64_t,
                   int64_t mi) {
                 float v = 0.0f;
                 const float* xc = x + c * hw;
                 for (int q = 0; q < 4; ++q) {
                   if (s.at[q] >= 0) v += s.wt[q] * xc[s.at[q]];
                 }
                 col[(c * k + t) * np + p] = mask ? v * mask[mi] : v;
               });
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> wt = floats_of<T>(in[1]);
    const std::vector<float> off = floats_of<T>(in[2]);
    std::vector<float> mask, bias;
    if (mask_index_ >= 0) mask = floats_of<T>(in[mask_index_]);
    if (bias_index_ >= 0) bias = floats_of<T>(in[bias_index_]);
    const int64_t g = opts_.group, np = positions(), k = taps();
    const int64_t ocg = oc_ / g, ckg = c_ / g * k;
    const int64_t xs = c_ * h_ * w_,
                  os = 2 * opts_.deformable_group * k * h_ * w_,
                  ms = opts_.deformable_group * k * h_ * w_, ys = oc_ * np;
    std::vector<float> col(c_ * k * np), y(out[0]->size());
    for (int64_t n = 0; n < batch_; ++n) {
      columns(x.data() + n * xs, off.data() + n * os,
              mask.empty() ? nullptr : mask.data() + n * ms, col.data());
      for (int64_t gi = 0; gi < g; ++gi) {
        gemm<float>(false, false, ocg, np, ckg, wt.data() + gi * ocg * ckg,
                    col.data() + gi * ckg * np,
                    y.data() + n * ys + gi * ocg * np);
      }
      if (!bias.empty()) {
        for (int64_t o = 0; o < oc_; ++o) {
          float* yo = y.data() + n * ys + o * np;
          for (int64_t p = 0; p < np; ++p) yo[p] += bias[o];
        }
      }
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    bool any = false;
    for (size_t i = 0; i < in.size(); ++i) any = any || propagate_down[i];
    if (!any) return;
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> wt = floats_of<T>(in[1]);
    const std::vector<float> off = floats_of<T>(in[2]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> mask;
    if (mask_index_ >= 0) mask = floats_of<T>(in[mask_index_]);
    const int64_t g = opts_.group, np = positions(), k = taps();
    const int64_t ocg = oc_ / g, ckg = c_ / g * k, hw = h_ * w_;
    const int64_t xs = c_ * hw, os = 2 * opts_.deformable_group * k * hw,
                  ms = opts_.deformable_group * k * hw, ys = oc_ * np;
    const bool want_w = propagate_down[1];
    const bool want_sampled = propagate_down[0] || propagate_down[2] ||
                              (mask_index_ >= 0 && propagate_down[mask_index_]);
    std::vector<float> dx(x.size()), dw(wt.size()), doff(off.size()),
        dmask(mask.size()), db(oc_), col(c_ * k * np), dcol(c_ * k * np);
    for (int64_t n = 0; n < batch_; ++n) {
      const float* dyn = dy.data() + n * ys;
      const float* xn = x.data() + n * xs;
      const float* offn = off.data() + n * os;
      const float* maskn = mask.empty() ? nullptr : mask.data() + n * ms;
      if (want_w) {
        columns(xn, offn, maskn, col.data());
        for (int64_t gi = 0; gi < g; ++gi) {
          gemm<float>(false, true, ocg, ckg, np, dyn + gi * ocg * np,
                      col.data() + gi * ckg * np, dw.data() + gi * ocg * ckg,
                      nullptr, /*accum=*/true);
        }
      }
      if (bias_index_ >= 0 && propagate_down[bias_index_]) {
        for (int64_t o = 0; o < oc_; ++o) {
          float s = 0.0f;
          for (int64_t p = 0; p < np; ++p) s += dyn[o * np + p];
          db[o] += s;
        }
      }
      if (!want_sampled) continue;
      for (int64_t gi = 0; gi < g; ++gi) {
        gemm<float>(true, false, ckg, np, ocg, wt.data() + gi * ocg * ckg,
                    dyn + gi * ocg * np, dcol.data() + gi * ckg * np);
      }
      float* dxn = dx.data() + n * xs;
      float* doffn = doff.data() + n * os;
      float* dmaskn = dmask.empty() ? nullptr : dmask.data() + n * ms;
      each_entry(offn, maskn,
                 [&](int64_t c, int64_t t, int64_t p, const Sample& s,
                     int64_t oi, int64_t mi) {
                   if (!s.inside) return;
                   const float gc = dcol[(c * k + t) * np + p];
                   const float m = maskn ? maskn[mi] : 1.0f;
                   const float* xc = xn + c * hw;
                   float v = 0.0f, vy = 0.0f, vx = 0.0f;
                   for (int q = 0; q < 4; ++q) {
                     if (s.at[q] < 0) continue;
                     dxn[c * hw + s.at[q]] += gc * m * s.wt[q];
                     v += s.wt[q] * xc[s.at[q]];
                     vy += s.dwy[q] * xc[s.at[q]];
                     vx += s.dwx[q] * xc[s.at[q]];
                   }
                   doffn[oi] += gc * m * vy;
                   doffn[oi + hw] += gc * m * vx;
                   if (dmaskn) dmaskn[mi] += gc * v;
                 });
    }
    auto put = [&](int i, const std::vector<float>& grad) {
      if (i < 0 || !propagate_down[i]) return;
      store_grad<T>(grad.data(), in[i], accum[i]);
    };
    put(0, dx);
    put(1, dw);
    put(2, doff);
    put(mask_index_, dmask);
    put(bias_index_, db);
  }
};

}  // namespace

void register_deformable_convolution(FunctionRegistry& r) {
  register_float_types<DeformableConvolutionCpu>(r, decl::DeformableConvolution,
                                                 "cpu");
}

}  // namespace mg::cpu
