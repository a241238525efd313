// AffineGrid, WarpByGrid and WarpByFlow on the CPU: inputs converted to fp32
// once, NNabla's coordinate rules in fp32, sums in fp32, the result rounded
// to the storage type once.
#include <mixgraph/functions/geometric.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// ---- AffineGrid ----

// The normalized target coordinate of pixel i of S (NNabla's
// generate_target_grid; a single pixel sits at 0 where NNabla divides 0 by
// 0).
float target_coord(int64_t i, int64_t s, bool align_corners) {
  if (s == 1) return 0.0f;
  float v = 2.0f * static_cast<float>(i) / static_cast<float>(s - 1) - 1.0f;
  if (!align_corners) {
    v *= static_cast<float>(s - 1) / static_cast<float>(s);
  }
  return v;
}

// The target grid (P, d + 1): (x, y[, z], 1) per target pixel, x along the
// last axis.
std::vector<float> target_grid(const std::vector<int64_t>& size,
                               bool align_corners) {
  const int d = static_cast<int>(size.size());
  const int64_t p = shape_size(size);
  std::vector<float> t(static_cast<size_t>(p * (d + 1)));
  for (int64_t q = 0; q < p; ++q) {
    int64_t r = q;
    for (int a = d - 1; a >= 0; --a) {  // a: the size axis, last = x
      const int64_t i = r % size[a];
      r /= size[a];
      t[q * (d + 1) + (d - 1 - a)] = target_coord(i, size[a], align_corners);
    }
    t[q * (d + 1) + d] = 1.0f;
  }
  return t;
}

template <class T>
class AffineGridCpu : public AffineGrid {
 public:
  using AffineGrid::AffineGrid;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int d = static_cast<int>(opts_.size.size());
    const int64_t b = in[0]->shape()[0], p = shape_size(opts_.size);
    const std::vector<float> theta = floats_of<T>(in[0]);
    const std::vector<float> t = target_grid(opts_.size, opts_.align_corners);
    std::vector<float> g(static_cast<size_t>(b * p * d));
    for (int64_t n = 0; n < b; ++n) {
      const float* th = theta.data() + n * d * (d + 1);
      for (int64_t q = 0; q < p; ++q) {
        for (int i = 0; i < d; ++i) {
          float s = 0.0f;
          for (int k = 0; k <= d; ++k) {
            s += t[q * (d + 1) + k] * th[i * (d + 1) + k];
          }
          g[(n * p + q) * d + i] = s;
        }
      }
    }
    store(g.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const int d = static_cast<int>(opts_.size.size());
    const int64_t b = in[0]->shape()[0], p = shape_size(opts_.size);
    const std::vector<float> dg = grad_floats_of<T>(out[0]);
    const std::vector<float> t = target_grid(opts_.size, opts_.align_corners);
    std::vector<float> dtheta(static_cast<size_t>(in[0]->size()));
    for (int64_t n = 0; n < b; ++n) {
      for (int i = 0; i < d; ++i) {
        for (int k = 0; k <= d; ++k) {
          double s = 0.0;  // a sum over every target pixel
          for (int64_t q = 0; q < p; ++q) {
            s += static_cast<double>(dg[(n * p + q) * d + i]) *
                 t[q * (d + 1) + k];
          }
          dtheta[(n * d + i) * (d + 1) + k] = static_cast<float>(s);
        }
      }
    }
    store_grad<T>(dtheta.data(), in[0], accum[0]);
  }
};

// ---- WarpByGrid ----

enum class Pad { zero, repeat, reflect };

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// NNabla's warp_by_grid helpers, in fp32: a normalized coordinate to a
// pixel position, the padding's position and its derivative.
float unnormalize(float g, int64_t s, bool align_corners) {
  const float sf = static_cast<float>(s);
  return align_corners ? (g + 1.0f) * (sf - 1.0f) / 2.0f
                       : ((g + 1.0f) * sf - 1.0f) / 2.0f;
}

float clamp_repeat(float f, int64_t s) {
  if (f < 0.0f) return 0.0f;
  if (f > static_cast<float>(s - 1)) return static_cast<float>(s - 1);
  return f;
}

// How many whole lengths len fit in dist, and whether that count is even,
// in float (an int would overflow for a far-off grid value).
bool even_folds(float dist, float len, float* rest) {
  const float n = std::floor(dist / len);
  *rest = dist - n * len;
  return std::fmod(n, 2.0f) == 0.0f;
}

float reflect(float f, float lo, float hi) {
  const float len = hi - lo;
  if (!(len > 0.0f)) return lo;  // one pixel: every position is that pixel
  if (f < lo || f > hi) {
    float r;
    const bool even = even_folds(f < lo ? lo - f : f - hi, len, &r);
    const bool toward_hi = (f < lo) == even;
    return toward_hi ? lo + r : hi - r;
  }
  return f;
}

// d reflect / d f: -1 where the reflection runs backwards.
float reflect_coef(float f, float lo, float hi) {
  const float len = hi - lo;
  if (!(len > 0.0f)) return 0.0f;
  if (f < lo || f > hi) {
    float r;
    return even_folds(f < lo ? lo - f : f - hi, len, &r) ? -1.0f : 1.0f;
  }
  return 1.0f;
}

float padded(float f, int64_t s, Pad pad, bool align_corners) {
  const float sf = static_cast<float>(s);
  switch (pad) {
    case Pad::zero:
      return f;
    case Pad::repeat:
      return clamp_repeat(f, s);
    case Pad::reflect:
      if (align_corners) return reflect(f, 0.0f, sf - 1.0f);
      // The borders -0.5 and S - 0.5, doubled to stay on whole numbers.
      return clamp_repeat(reflect(2.0f * f, -1.0f, 2.0f * sf - 1.0f) * 0.5f, s);
  }
  return f;
}

// d padded / d g (the unnormalize scale included).
float padded_coef(float f, int64_t s, Pad pad, bool align_corners) {
  const float sf = static_cast<float>(s);
  float c = 1.0f;
  if (pad == Pad::repeat) {
    c = (f < 0.0f || f > sf - 1.0f) ? 0.0f : 1.0f;
  } else if (pad == Pad::reflect) {
    if (align_corners) {
      c = reflect_coef(f, 0.0f, sf - 1.0f);
    } else {
      c = reflect_coef(2.0f * f, -1.0f, 2.0f * sf - 1.0f);
      const float r = reflect(2.0f * f, -1.0f, 2.0f * sf - 1.0f) * 0.5f;
      if (r < 0.0f || r > sf - 1.0f) c = 0.0f;
    }
  }
  return align_corners ? c * (sf - 1.0f) / 2.0f : c * sf / 2.0f;
}

// One output pixel's sampling: per spatial axis (0 = x, the last) the
// position and its taps; the corners are the products of the taps.
struct Sample {
  int d = 2;
  std::array<float, 3> f0{}, f{};
  std::array<int64_t, 3> i0{};
  std::array<float, 3> w1{};  // linear: the weight of tap i0 + 1
  bool finite = true;         // false: an inf or NaN coordinate
};

// The layout of x or y: element (b, c, spatial q) at b * batch + c * chan +
// q * pix.
struct Layout {
  int64_t batch, chan, pix;
};

Layout layout(const Shape& s, bool channel_last) {
  const int nd = static_cast<int>(s.size());
  const int64_t c = channel_last ? s[nd - 1] : s[1];
  const int64_t p = shape_size(s) / (s[0] * c);
  return channel_last ? Layout{p * c, 1, c} : Layout{p * c, p, 1};
}

template <class T>
class WarpByGridCpu : public WarpByGrid {
 public:
  using WarpByGrid::WarpByGrid;

 protected:
  struct Geometry {
    int d;
    int64_t b, c, po;
    std::array<int64_t, 3> si;  // input sizes along x, y, z
    Layout lx, ly;
    // The modes, read once here (sample and corners run per grid point).
    Pad pad;
    bool nearest;
  };

  Geometry geometry(const Variables& in, const Variables& out) const {
    const Shape& x = in[0]->shape();
    const int nd = static_cast<int>(x.size());
    Geometry g{};
    g.d = nd - 2;
    g.b = x[0];
    g.c = opts_.channel_last ? x[nd - 1] : x[1];
    g.po = shape_size(in[1]->shape()) / (g.b * g.d);
    const int first = opts_.channel_last ? 1 : 2;  // x's first spatial axis
    for (int a = 0; a < g.d; ++a) g.si[a] = x[first + g.d - 1 - a];
    g.lx = layout(x, opts_.channel_last);
    g.ly = layout(out[0]->shape(), opts_.channel_last);
    g.pad = opts_.padding_mode == "zero"     ? Pad::zero
            : opts_.padding_mode == "repeat" ? Pad::repeat
                                             : Pad::reflect;
    g.nearest = opts_.mode == "nearest";
    return g;
  }

  Sample sample(const Geometry& g, const float* grid) const {
    Sample s;
    s.d = g.d;
    for (int a = 0; a < g.d; ++a) {
      s.f0[a] = unnormalize(grid[a], g.si[a], opts_.align_corners);
      s.finite = s.finite && std::isfinite(s.f0[a]);
      s.f[a] = padded(s.f0[a], g.si[a], g.pad, opts_.align_corners);
      // Positions 2 pixels or more outside sample nothing (zero padding):
      // held there, they cast to an index safely.
      const float lim = static_cast<float>(g.si[a]) + 2.0f;
      if (!(s.f[a] > -2.0f)) s.f[a] = -2.0f;
      if (!(s.f[a] < lim)) s.f[a] = lim;
      if (g.nearest) {
        s.i0[a] = static_cast<int64_t>(std::round(s.f[a]));
      } else {
        s.i0[a] = static_cast<int64_t>(std::floor(s.f[a]));
        s.w1[a] = s.f[a] - static_cast<float>(s.i0[a]);
      }
    }
    return s;
  }

  // Calls fn(flat input pixel, weight, corner bits) for each corner inside
  // x (one for nearest, 2^d for linear).
  template <class Fn>
  void corners(const Geometry& g, const Sample& s, Fn&& fn) const {
    const bool nearest = g.nearest;
    const int n = nearest ? 1 : 1 << g.d;
    for (int k = 0; k < n; ++k) {
      float w = 1.0f;
      int64_t q = 0;
      bool inside = true;
      for (int a = g.d - 1; a >= 0; --a) {
        const int bit = (k >> a) & 1;
        const int64_t i = s.i0[a] + bit;
        inside = inside && i >= 0 && i < g.si[a];
        q = q * g.si[a] + i;
        if (!nearest) w *= bit ? s.w1[a] : 1.0f - s.w1[a];
      }
      if (inside) fn(q, w, k);
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Geometry g = geometry(in, out);
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> grid = floats_of<T>(in[1]);
    std::vector<float> y(static_cast<size_t>(out[0]->size()), 0.0f);
#pragma omp parallel for schedule(static) if (out[0]->size() >= parallel_min())
    for (int64_t t = 0; t < g.b * g.po; ++t) {
      const int64_t n = t / g.po, p = t % g.po;
      const Sample s = sample(g, grid.data() + t * g.d);
      if (!s.finite) {  // an overflowed grid shows in y, as it would in x
        float* ys = y.data() + n * g.ly.batch + p * g.ly.pix;
        for (int64_t c = 0; c < g.c; ++c) ys[c * g.ly.chan] = kNaN;
        continue;
      }
      corners(g, s, [&](int64_t q, float w, int) {
        const float* xs = x.data() + n * g.lx.batch + q * g.lx.pix;
        float* ys = y.data() + n * g.ly.batch + p * g.ly.pix;
        for (int64_t c = 0; c < g.c; ++c) {
          ys[c * g.ly.chan] += w * xs[c * g.lx.chan];
        }
      });
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const Geometry g = geometry(in, out);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> grid = floats_of<T>(in[1]);
    if (propagate_down[0]) {
      // Scattered adds: one thread per batch item.
      std::vector<float> dx(static_cast<size_t>(in[0]->size()), 0.0f);
#pragma omp parallel for schedule(static) if (in[0]->size() >= parallel_min())
      for (int64_t n = 0; n < g.b; ++n) {
        for (int64_t p = 0; p < g.po; ++p) {
          const Sample s = sample(g, grid.data() + (n * g.po + p) * g.d);
          if (!s.finite) continue;
          corners(g, s, [&](int64_t q, float w, int) {
            float* xs = dx.data() + n * g.lx.batch + q * g.lx.pix;
            const float* ys = dy.data() + n * g.ly.batch + p * g.ly.pix;
            for (int64_t c = 0; c < g.c; ++c) {
              xs[c * g.lx.chan] += w * ys[c * g.ly.chan];
            }
          });
        }
      }
      store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (propagate_down[1]) {
      // Nearest sampling is piecewise constant in the grid: its grad is 0
      // (NNabla refuses to compute it).
      std::vector<float> dgrid(static_cast<size_t>(in[1]->size()), 0.0f);
      if (opts_.mode == "linear") {
        const std::vector<float> x = floats_of<T>(in[0]);
#pragma omp parallel for schedule(static) if (out[0]->size() >= parallel_min())
        for (int64_t t = 0; t < g.b * g.po; ++t) {
          const int64_t n = t / g.po, p = t % g.po;
          const Sample s = sample(g, grid.data() + t * g.d);
          if (!s.finite) {
            for (int a = 0; a < g.d; ++a) dgrid[t * g.d + a] = kNaN;
            continue;
          }
          std::array<float, 3> dfa{};
          corners(g, s, [&](int64_t q, float, int k) {
            const float* xs = x.data() + n * g.lx.batch + q * g.lx.pix;
            const float* ys = dy.data() + n * g.ly.batch + p * g.ly.pix;
            float dot = 0.0f;
            for (int64_t c = 0; c < g.c; ++c) {
              dot += xs[c * g.lx.chan] * ys[c * g.ly.chan];
            }
            // d w / d f along each axis: the other axes' weights, signed.
            for (int a = 0; a < g.d; ++a) {
              float w = ((k >> a) & 1) ? 1.0f : -1.0f;
              for (int e = 0; e < g.d; ++e) {
                if (e == a) continue;
                w *= ((k >> e) & 1) ? s.w1[e] : 1.0f - s.w1[e];
              }
              dfa[a] += w * dot;
            }
          });
          for (int a = 0; a < g.d; ++a) {
            dgrid[t * g.d + a] = dfa[a] * padded_coef(s.f0[a], g.si[a], g.pad,
                                                      opts_.align_corners);
          }
        }
      }
      store(dgrid.data(), input_grad<T>(in[1], accum[1]), in[1]->size(),
            accum[1]);
    }
  }
};

// ---- WarpByFlow ----

// Clamped in float first: a far-off (or NaN) position casts safely.
int64_t clamp_index(float v, int64_t hi) {
  const float h = static_cast<float>(hi);
  return static_cast<int64_t>(v > 0.0f ? (v < h ? v : h) : 0.0f);
}

// NNabla's sampling of one pixel: the clamped corners and the weights of
// the right and bottom ones (which may leave [0, 1] outside the image,
// where the clamped corners coincide).
struct FlowSample {
  int64_t xl, xr, yt, yb;
  float alpha, beta;
};

FlowSample flow_sample(int64_t x, int64_t y, float fx, float fy, int64_t w,
                       int64_t h) {
  const float xf = static_cast<float>(x) + fx;
  const float yf = static_cast<float>(y) + fy;
  FlowSample s;
  s.xl = clamp_index(std::floor(xf), w - 1);
  s.yt = clamp_index(std::floor(yf), h - 1);
  s.xr = clamp_index(std::floor(xf) + 1.0f, w - 1);
  s.yb = clamp_index(std::floor(yf) + 1.0f, h - 1);
  s.alpha = xf - static_cast<float>(s.xl);
  s.beta = yf - static_cast<float>(s.yt);
  return s;
}

template <class T>
class WarpByFlowCpu : public WarpByFlow {
 public:
  using WarpByFlow::WarpByFlow;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Shape& sh = in[0]->shape();
    const int64_t n = sh[0], c = sh[1], h = sh[2], w = sh[3], hw = h * w;
    const std::vector<float> data = floats_of<T>(in[0]);
    const std::vector<float> flow = floats_of<T>(in[1]);
    std::vector<float> y(data.size());
#pragma omp parallel for schedule(static) if (out[0]->size() >= parallel_min())
    for (int64_t t = 0; t < n * c; ++t) {
      const int64_t b = t / c;
      const float* fx = flow.data() + b * 2 * hw;
      const float* fy = fx + hw;
      const float* d = data.data() + t * hw;
      for (int64_t p = 0; p < hw; ++p) {
        const FlowSample s = flow_sample(p % w, p / w, fx[p], fy[p], w, h);
        const float tl = d[s.yt * w + s.xl], tr = d[s.yt * w + s.xr];
        const float bl = d[s.yb * w + s.xl], br = d[s.yb * w + s.xr];
        const float upper = s.alpha * (tr - tl) + tl;
        const float lower = s.alpha * (br - bl) + bl;
        y[t * hw + p] = s.beta * (lower - upper) + upper;
      }
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const Shape& sh = in[0]->shape();
    const int64_t n = sh[0], c = sh[1], h = sh[2], w = sh[3], hw = h * w;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> flow = floats_of<T>(in[1]);
    if (propagate_down[0]) {
      std::vector<float> dd(static_cast<size_t>(in[0]->size()), 0.0f);
#pragma omp parallel for schedule(static) if (in[0]->size() >= parallel_min())
      for (int64_t t = 0; t < n * c; ++t) {
        const int64_t b = t / c;
        const float* fx = flow.data() + b * 2 * hw;
        const float* fy = fx + hw;
        float* g = dd.data() + t * hw;
        for (int64_t p = 0; p < hw; ++p) {
          const FlowSample s = flow_sample(p % w, p / w, fx[p], fy[p], w, h);
          const float d = dy[t * hw + p];
          g[s.yt * w + s.xl] += (1.0f - s.alpha) * (1.0f - s.beta) * d;
          g[s.yb * w + s.xl] += (1.0f - s.alpha) * s.beta * d;
          g[s.yt * w + s.xr] += s.alpha * (1.0f - s.beta) * d;
          g[s.yb * w + s.xr] += s.alpha * s.beta * d;
        }
      }
      store(dd.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (propagate_down[1]) {
      const std::vector<float> data = floats_of<T>(in[0]);
      std::vector<float> df(static_cast<size_t>(in[1]->size()), 0.0f);
#pragma omp parallel for schedule(static) if (out[0]->size() >= parallel_min())
      for (int64_t b = 0; b < n; ++b) {
        const float* fx = flow.data() + b * 2 * hw;
        const float* fy = fx + hw;
        for (int64_t p = 0; p < hw; ++p) {
          const FlowSample s = flow_sample(p % w, p / w, fx[p], fy[p], w, h);
          float gx = 0.0f, gy = 0.0f;  // summed over the channels
          for (int64_t k = 0; k < c; ++k) {
            const float* d = data.data() + (b * c + k) * hw;
            const float tl = d[s.yt * w + s.xl], tr = d[s.yt * w + s.xr];
            const float bl = d[s.yb * w + s.xl], br = d[s.yb * w + s.xr];
            const float g = dy[(b * c + k) * hw + p];
            gx += g * ((1.0f - s.beta) * (tr - tl) + s.beta * (br - bl));
            gy += g * ((1.0f - s.alpha) * (bl - tl) + s.alpha * (br - tr));
          }
          df[b * 2 * hw + p] = gx;
          df[b * 2 * hw + hw + p] = gy;
        }
      }
      store(df.data(), input_grad<T>(in[1], accum[1]), in[1]->size(), accum[1]);
    }
  }
};

}  // namespace

void register_geometric(FunctionRegistry& r) {
  register_float_types<AffineGridCpu>(r, decl::AffineGrid, "cpu");
  register_float_types<WarpByGridCpu>(r, decl::WarpByGrid, "cpu");
  register_float_types<WarpByFlowCpu>(r, decl::WarpByFlow, "cpu");
}

}  // namespace mg::cpu
