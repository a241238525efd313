// Layer, group, instance and tensor normalization and weight
// standardization on the CPU. The statistics, the
// normalised values and every grad sum are fp32 whatever the storage type.
#include <omp.h>

#include <cmath>
#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/elementwise.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// The elementwise loops over one row of LayerNormalization's rows, once
// per vector ISA (isa_loops.hpp): 16 wide where the CPU can, where this
// file's own loops compile for the baseline's 4 (most of the rows' time in
// a GPT step); the same bits at every width. The rows' sums stay
// sum_floats'.
namespace row_loops {
// clang-format off
#define MG_NORM_ROW_LOOPS(NS, TARGET)                                         \
  namespace NS {                                                              \
  /* d = (x - mean)^2 */                                                      \
  TARGET void squared_deviations(const float* x, float mean, int64_t len,     \
                                 float* d) {                                  \
    for (int64_t j = 0; j < len; ++j) d[j] = (x[j] - mean) * (x[j] - mean);   \
  }                                                                           \
  /* y = (x - mean) rstd, times gamma and plus beta where given */            \
  TARGET void normalize(const float* x, float mean, float rstd,               \
                        const float* gamma, const float* beta, int64_t len,   \
                        float* y) {                                           \
    for (int64_t j = 0; j < len; ++j) {                                       \
      float v = (x[j] - mean) * rstd;                                         \
      if (gamma) v *= gamma[j];                                               \
      if (beta) v += beta[j];                                                 \
      y[j] = v;                                                               \
    }                                                                         \
  }                                                                           \
  /* xhat = (x - mean) rstd (x may be xhat), g = dy gamma (dy without      */ \
  /* gamma); dgamma += dy xhat and dbeta += dy where given                 */ \
  TARGET void grad_terms(const float* x, const float* dy,                     \
                         const float* gamma, float mean, float rstd,          \
                         int64_t len, float* xhat, float* g, float* dgamma,   \
                         float* dbeta) {                                      \
    for (int64_t j = 0; j < len; ++j) {                                       \
      xhat[j] = (x[j] - mean) * rstd;                                         \
      g[j] = gamma ? dy[j] * gamma[j] : dy[j];                                \
    }                                                                         \
    if (dgamma) {                                                             \
      for (int64_t j = 0; j < len; ++j) dgamma[j] += dy[j] * xhat[j];         \
    }                                                                         \
    if (dbeta) {                                                              \
      for (int64_t j = 0; j < len; ++j) dbeta[j] += dy[j];                    \
    }                                                                         \
  }                                                                           \
  /* dx = rstd (g - m1 - xhat m2) */                                          \
  TARGET void grad_x(const float* g, const float* xhat, float m1, float m2,   \
                     float rstd, int64_t len, float* dx) {                    \
    for (int64_t j = 0; j < len; ++j) {                                       \
      dx[j] = rstd * (g[j] - m1 - xhat[j] * m2);                              \
    }                                                                         \
  }                                                                           \
  }
MG_FOR_EACH_VECTOR_ISA(MG_NORM_ROW_LOOPS)
#undef MG_NORM_ROW_LOOPS
// clang-format on

void squared_deviations(const float* x, float mean, int64_t len, float* d) {
  MG_CALL_VECTOR_ISA(squared_deviations(x, mean, len, d));
}
void normalize(const float* x, float mean, float rstd, const float* gamma,
               const float* beta, int64_t len, float* y) {
  MG_CALL_VECTOR_ISA(normalize(x, mean, rstd, gamma, beta, len, y));
}
void grad_terms(const float* x, const float* dy, const float* gamma, float mean,
                float rstd, int64_t len, float* xhat, float* g, float* dgamma,
                float* dbeta) {
  MG_CALL_VECTOR_ISA(
      grad_terms(x, dy, gamma, mean, rstd, len, xhat, g, dgamma, dbeta));
}
void grad_x(const float* g, const float* xhat, float m1, float m2, float rstd,
            int64_t len, float* dx) {
  MG_CALL_VECTOR_ISA(grad_x(g, xhat, m1, m2, rstd, len, dx));
}

}  // namespace row_loops

// Which statistics group each element of x belongs to. When every kept axis
// comes before every reduced one (the usual layouts: (N, C, H, W) per
// sample, per channel or per group) group g is the run [g * size, (g + 1) *
// size); otherwise `of` lists each element's group.
struct Grouping {
  int64_t groups = 1, size = 0;
  bool contiguous = true;
  std::vector<int64_t> of;
  int64_t group(int64_t i) const { return contiguous ? i / size : of[i]; }
};

Grouping grouping(const Normalization::Layout& l) {
  Grouping g;
  const int nd = static_cast<int>(l.view.size());
  bool seen_reduced = false;
  for (int d = 0; d < nd; ++d) {
    if (l.kept[d]) {
      g.groups *= l.view[d];
      if (seen_reduced && l.view[d] > 1) g.contiguous = false;
    } else if (l.view[d] > 1) {
      seen_reduced = true;
    }
  }
  const int64_t n = shape_size(l.view);
  g.size = g.groups ? n / g.groups : 0;
  if (g.contiguous) return g;
  g.of.resize(n);
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = 0;
    for (int d = 0; d < nd; ++d) {
      if (l.kept[d]) k = k * l.view[d] + idx[d];
    }
    g.of[i] = k;
    for (int d = nd - 1; d >= 0 && ++idx[d] == l.view[d]; --d) idx[d] = 0;
  }
  return g;
}

// sums[g] = the sum of f(i) over the elements i of group g, in fp32.
template <class F>
std::vector<float> group_sums(const Grouping& g, int64_t n, F&& f) {
  std::vector<float> sums(g.groups, 0.0f);
  if (g.contiguous) {
#pragma omp parallel for schedule(static) if (n >= parallel_min())
    for (int64_t k = 0; k < g.groups; ++k) {
      const int64_t first = k * g.size;
      sums[k] = lanes_sum(g.size, [&](int64_t j) { return f(first + j); });
    }
  } else {
    for (int64_t i = 0; i < n; ++i) sums[g.of[i]] += f(i);
  }
  return sums;
}

// fn(i) for every element, in parallel for big arrays.
template <class F>
void for_each_element(int64_t n, F&& fn) {
#pragma omp parallel for schedule(static) if (n >= parallel_min())
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// fn(x_offset, param_offset, param_step, len) over x's rows, where the
// parameter p (of x's rank, 1 or x's size per axis) broadcasts to x.
template <class F>
void for_each_param_row(const Shape& x, const Shape& p, const std::string& tag,
                        F&& fn, bool serial) {
  const BroadcastPlan plan = broadcast_plan(x, p, tag);
  for_each_broadcast_row(
      plan,
      [&](int64_t o, int64_t, int64_t, int64_t o1, int64_t s1, int64_t len) {
        fn(o, o1, s1, len);
      },
      serial);
}

// Whether parameter shape p varies only along x's reduced axes and those
// come last (layer normalization's gamma and beta over its feature axes):
// then element i of x reads the parameter at i % (elements per group), and
// a group is a contiguous row.
bool params_per_row(const Normalization::Layout& l, const Shape& x,
                    const Shape& p, const Grouping& g) {
  if (!g.contiguous || p.size() != x.size() || l.view.size() != x.size()) {
    return false;
  }
  for (size_t d = 0; d < x.size(); ++d) {
    if (l.view[d] != x[d]) return false;
    if (p[d] != (l.kept[d] ? 1 : x[d])) return false;
  }
  return true;
}

template <class T, class Base, class Options>
class NormalizationCpu : public Base {
 public:
  explicit NormalizationCpu(const Options& opts) : Base(opts) {}

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    rowwise_ = rowwise(in);
    if (rowwise_) return forward_rows(in, out);
    const int64_t n = in[0]->size();
    std::vector<float> y = xhat_of(in[0], /*compute_stats=*/true);
    const std::string t = this->tag();
    if (const int gi = this->gamma_index(); gi >= 0) {
      const float* gamma = input<float>(in[gi]);
      for_each_param_row(
          in[0]->shape(), in[gi]->shape(), t,
          [&](int64_t o, int64_t o1, int64_t s1, int64_t len) {
            for (int64_t j = 0; j < len; ++j) {
              y[o + j] *= gamma[o1 + j * s1];
            }
          },
          false);
    }
    if (const int bi = this->beta_index(); bi >= 0) {
      const float* beta = input<float>(in[bi]);
      for_each_param_row(
          in[0]->shape(), in[bi]->shape(), t,
          [&](int64_t o, int64_t o1, int64_t s1, int64_t len) {
            for (int64_t j = 0; j < len; ++j) {
              y[o + j] += beta[o1 + j * s1];
            }
          },
          false);
    }
    store(y.data(), output<T>(out[0]), n);
  }

  // With xhat = (x - mean) rstd and g = dy gamma: dx = rstd (g - mean(g) -
  // xhat mean(g xhat)) per group; dbeta and dgamma sum dy and dy xhat over
  // the axes they broadcast along.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    // forward's choice, with forward's statistics
    if (rowwise_) return backward_rows(in, out, propagate_down, accum);
    const int64_t n = in[0]->size();
    const Shape& xs = in[0]->shape();
    const std::string t = this->tag();
    std::vector<float> xhat = xhat_of(in[0], /*compute_stats=*/false);
    std::vector<float> dy(n);
    {
      const T* g = output_grad<T>(out[0]);
      for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t len = std::min(kBlock, n - b);
        const float* f = load(g + b, dy.data() + b, len);
        if (f != dy.data() + b) std::copy(f, f + len, dy.data() + b);
      }
    }
    for (int p : {this->beta_index(), this->gamma_index()}) {
      if (p < 0 || !propagate_down[p]) continue;
      const bool is_gamma = p == this->gamma_index();
      std::vector<float> sum(in[p]->size(), 0.0f);
      for_each_param_row(
          xs, in[p]->shape(), t,
          [&](int64_t o, int64_t o1, int64_t s1, int64_t len) {
            for (int64_t j = 0; j < len; ++j) {
              sum[o1 + j * s1] +=
                  is_gamma ? dy[o + j] * xhat[o + j] : dy[o + j];
            }
          },
          /*serial=*/true);
      store_grad<T>(sum.data(), in[p], accum[p]);  // fp32 for an fp32 master
    }
    if (!propagate_down[0]) return;
    if (const int gi = this->gamma_index(); gi >= 0) {
      const float* gamma = input<float>(in[gi]);
      for_each_param_row(
          xs, in[gi]->shape(), t,
          [&](int64_t o, int64_t o1, int64_t s1, int64_t len) {
            for (int64_t j = 0; j < len; ++j) {
              dy[o + j] *= gamma[o1 + j * s1];
            }
          },
          false);
    }
    const Grouping& g = grouping_;
    const float inv = 1.0f / static_cast<float>(g.size);
    auto m1 = group_sums(g, n, [&](int64_t i) { return dy[i]; });
    auto m2 = group_sums(g, n, [&](int64_t i) { return dy[i] * xhat[i]; });
    for_each_element(n, [&](int64_t i) {
      const int64_t k = g.group(i);
      dy[i] = rstd_[k] * (dy[i] - m1[k] * inv - xhat[i] * m2[k] * inv);
    });
    store(dy.data(), input_grad<T>(in[0], accum[0]), n, accum[0]);
  }

 private:
  // Every group a contiguous row and every parameter per row (layer
  // normalization over the last axes): one pass per row in forward and one
  // in backward, on a row's worth of fp32 scratch, instead of whole-array
  // fp32 copies (a Transformer step spent 8% of its time there, much of it
  // faulting in fresh pages for them).
  bool rowwise(const Variables& in) {
    grouping_ = grouping(this->layout_);
    for (int p : {this->beta_index(), this->gamma_index()}) {
      if (p >= 0 && !params_per_row(this->layout_, in[0]->shape(),
                                    in[p]->shape(), grouping_)) {
        return false;
      }
    }
    return grouping_.contiguous && grouping_.size > 0;
  }

  void forward_rows(const Variables& in, const Variables& out) {
    const int64_t rows = grouping_.groups, len = grouping_.size;
    const int gi = this->gamma_index(), bi = this->beta_index();
    const float* gamma = gi >= 0 ? input<float>(in[gi]) : nullptr;
    const float* beta = bi >= 0 ? input<float>(in[bi]) : nullptr;
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    mean_.assign(rows, 0.0f);
    rstd_.assign(rows, 0.0f);
    const float inv = 1.0f / static_cast<float>(len), eps = this->eps_;
    const std::uintptr_t row_bytes = len * sizeof(T);
#pragma omp parallel if (rows * len >= parallel_min())
    {
      std::vector<float> xb(len), yb(len);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        ask_for_lines(x + r * len, row_bytes, row_bytes);  // the next row's
        const float* xr = load(x + r * len, xb.data(), len);
        const float mean = sum_floats(xr, len) * inv;
        float* d = yb.data();
        row_loops::squared_deviations(xr, mean, len, d);
        // Two passes: the variance of x - mean loses nothing to cancellation.
        const float rstd = 1.0f / std::sqrt(sum_floats(d, len) * inv + eps);
        float* yr = store_buffer(y + r * len, yb.data());
        row_loops::normalize(xr, mean, rstd, gamma, beta, len, yr);
        store(yr, y + r * len, len);
        mean_[r] = mean;
        rstd_[r] = rstd;
      }
    }
  }

  // dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma, per row;
  // dgamma and dbeta summed per thread, then over the threads in order.
  void backward_rows(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) {
    const int64_t rows = grouping_.groups, len = grouping_.size;
    const int gi = this->gamma_index(), bi = this->beta_index();
    const bool want_dx = propagate_down[0];
    const bool want_dgamma = gi >= 0 && propagate_down[gi];
    const bool want_dbeta = bi >= 0 && propagate_down[bi];
    if (!want_dx && !want_dgamma && !want_dbeta) return;
    const float* gamma = gi >= 0 ? input<float>(in[gi]) : nullptr;
    const T* x = input<T>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = want_dx ? input_grad<T>(in[0], accum[0]) : nullptr;
    const float inv = 1.0f / static_cast<float>(len);
    const std::uintptr_t row_bytes = len * sizeof(T);
    const bool parallel = rows * len >= parallel_min();
    const int threads = parallel ? omp_get_max_threads() : 1;
    // Per thread: dgamma's partial sums, then dbeta's.
    std::vector<float> partial(static_cast<size_t>(threads) * 2 * len, 0.0f);
#pragma omp parallel num_threads(threads) if (parallel)
    {
      std::vector<float> xb(len), dyb(len), gb(len), dxb(len);
      float* dgamma = partial.data() + omp_get_thread_num() * 2 * len;
      float* dbeta = dgamma + len;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        ask_for_lines(x + r * len, row_bytes, row_bytes);  // the next row's
        ask_for_lines(dy + r * len, row_bytes, row_bytes);
        const float* xr = load(x + r * len, xb.data(), len);
        const float* dyr = load(dy + r * len, dyb.data(), len);
        const float mean = mean_[r], rstd = rstd_[r];
        float* xhat = xb.data();  // over x's copy, or a new one for float
        float* g = gb.data();
        row_loops::grad_terms(xr, dyr, gamma, mean, rstd, len, xhat, g,
                              want_dgamma ? dgamma : nullptr,
                              want_dbeta ? dbeta : nullptr);
        if (!want_dx) continue;
        const float m1 = sum_floats(g, len) * inv;
        const float m2 = sum_floats(g, len, xhat) * inv;
        float* dxr =
            accum[0] ? dxb.data() : store_buffer(dx + r * len, dxb.data());
        row_loops::grad_x(g, xhat, m1, m2, rstd, len, dxr);
        store(dxr, dx + r * len, len, accum[0]);
      }
    }
    for (const int p : {gi, bi}) {
      if (p < 0 || !propagate_down[p]) continue;
      const int64_t off = p == gi ? 0 : len;
      std::vector<float> sum(len, 0.0f);
      for (int t = 0; t < threads; ++t) {
        const float* part = partial.data() + t * 2 * len + off;
        for (int64_t j = 0; j < len; ++j) sum[j] += part[j];
      }
      store_grad<T>(sum.data(), in[p], accum[p]);  // fp32 for an fp32 master
    }
  }

  // x normalised per group, in fp32; with compute_stats the mean and rstd
  // are computed (forward), else those of forward are reused (backward).
  std::vector<float> xhat_of(Variable* xv, bool compute_stats) {
    const int64_t n = xv->size();
    const T* x = input<T>(xv);
    std::vector<float> xf(n);
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t len = std::min(kBlock, n - b);
      const float* f = load(x + b, xf.data() + b, len);
      if (f != xf.data() + b) std::copy(f, f + len, xf.data() + b);
    }
    if (compute_stats) {  // grouping_ is forward's (rowwise())
      const Grouping& g = grouping_;
      const float inv = g.size ? 1.0f / static_cast<float>(g.size) : 0.0f;
      mean_ = group_sums(g, n, [&](int64_t i) { return xf[i]; });
      for (float& m : mean_) m *= inv;
      // Two passes: the variance of x - mean loses nothing to cancellation.
      rstd_ = group_sums(g, n, [&](int64_t i) {
        const float d = xf[i] - mean_[g.group(i)];
        return d * d;
      });
      for (float& v : rstd_) v = 1.0f / std::sqrt(v * inv + this->eps_);
    }
    const Grouping& g = grouping_;
    for_each_element(n, [&](int64_t i) {
      const int64_t k = g.group(i);
      xf[i] = (xf[i] - mean_[k]) * rstd_[k];
    });
    return xf;
  }

  Grouping grouping_;
  bool rowwise_ = false;
  std::vector<float> mean_, rstd_;  // per group, from forward
};

template <class T>
using LayerNormalizationCpu =
    NormalizationCpu<T, LayerNormalization, LayerNormalizationOptions>;
template <class T>
using GroupNormalizationCpu =
    NormalizationCpu<T, GroupNormalization, GroupNormalizationOptions>;
template <class T>
using InstanceNormalizationCpu =
    NormalizationCpu<T, InstanceNormalization, InstanceNormalizationOptions>;

template <class T>
using TensorNormalizationCpu =
    NormalizationCpu<T, TensorNormalization, TensorNormalizationOptions>;
template <class T>
using WeightStandardizationCpu =
    NormalizationCpu<T, WeightStandardization, WeightStandardizationOptions>;

}  // namespace

void register_normalization(FunctionRegistry& r) {
  register_float_types<TensorNormalizationCpu>(r, decl::TensorNormalization,
                                               "cpu");
  register_float_types<WeightStandardizationCpu>(r, decl::WeightStandardization,
                                                 "cpu");
  register_float_types<LayerNormalizationCpu>(r, decl::LayerNormalization,
                                              "cpu");
  register_float_types<GroupNormalizationCpu>(r, decl::GroupNormalization,
                                              "cpu");
  register_float_types<InstanceNormalizationCpu>(r, decl::InstanceNormalization,
                                                 "cpu");
}

}  // namespace mg::cpu
