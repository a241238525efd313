// NormNormalization, WeightNormalization and SpectralNorm on the CPU: fp32
// math on converted values, every norm and dot product summed in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/group_index.hpp>
#include <mixgraph/functions/norm_normalization.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

template <class T>
class NormNormalizationCpu : public NormNormalization {
 public:
  using NormNormalization::NormNormalization;

 protected:
  // The norm of each group of x: (sum |x|^p + eps)^(1/p).
  std::vector<float> norms(const std::vector<float>& x,
                           const std::vector<int64_t>& g,
                           int64_t groups) const {
    const double p = opts_.p;
    std::vector<double> s(groups, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      s[g[i]] += std::pow(std::fabs(static_cast<double>(x[i])), p);
    }
    std::vector<float> n(groups);
    for (int64_t k = 0; k < groups; ++k) {
      n[k] = static_cast<float>(std::pow(s[k] + opts_.eps, 1.0 / p));
    }
    return n;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    int64_t groups = 0;
    const auto g = group_index(in[0]->shape(), reduced_, &groups);
    const std::vector<float> n = norms(x, g, groups);
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / n[g[i]];
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  // With n = (S + eps)^(1/p), dn/dx_i = n^(1-p) |x_i|^(p-1) sign(x_i), so
  // dx_i = dy_i / n - (sum_j dy_j x_j) n^(-1-p) |x_i|^(p-1) sign(x_i).
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    int64_t groups = 0;
    const auto g = group_index(in[0]->shape(), reduced_, &groups);
    const std::vector<float> n = norms(x, g, groups);
    std::vector<double> d(groups, 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      d[g[i]] += static_cast<double>(dy[i]) * x[i];
    }
    const double p = opts_.p;
    std::vector<float> coef(groups);
    for (int64_t k = 0; k < groups; ++k) {
      coef[k] = static_cast<float>(d[k] * std::pow(n[k], -1.0 - p));
    }
    std::vector<float> dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float a = std::fabs(x[i]);
      const float sign = x[i] > 0.0f ? 1.0f : (x[i] < 0.0f ? -1.0f : 0.0f);
      const float dn = p == 2.0 ? a : static_cast<float>(std::pow(a, p - 1.0));
      dx[i] = dy[i] / n[g[i]] - coef[g[i]] * dn * sign;
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class WeightNormalizationCpu : public WeightNormalization {
 public:
  using WeightNormalization::WeightNormalization;

 protected:
  // 1 / sqrt(sum of w^2 over every axis but dim + eps), per channel.
  std::vector<float> inv_norms(const std::vector<float>& w) const {
    std::vector<double> s(channels_, 0.0);
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t c = 0; c < channels_; ++c) {
        const float* r = w.data() + (o * channels_ + c) * inner_;
        for (int64_t i = 0; i < inner_; ++i) {
          s[c] += static_cast<double>(r[i]) * r[i];
        }
      }
    }
    std::vector<float> inv(channels_);
    for (int64_t c = 0; c < channels_; ++c) {
      inv[c] = static_cast<float>(1.0 / std::sqrt(s[c] + opts_.eps));
    }
    return inv;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> w = floats_of<T>(in[0]);
    const std::vector<float> g = floats_of<T>(in[1]);
    const std::vector<float> inv = inv_norms(w);
    std::vector<float> y(w.size());
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t c = 0; c < channels_; ++c) {
        const int64_t off = (o * channels_ + c) * inner_;
        const float s = g[c] * inv[c];
        for (int64_t i = 0; i < inner_; ++i) y[off + i] = w[off + i] * s;
      }
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  // With s = 1 / n: dg_c = s sum(dy w); dw = g s dy - g s^3 sum(dy w) w.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const std::vector<float> w = floats_of<T>(in[0]);
    const std::vector<float> g = floats_of<T>(in[1]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> inv = inv_norms(w);
    std::vector<double> d(channels_, 0.0);
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t c = 0; c < channels_; ++c) {
        const int64_t off = (o * channels_ + c) * inner_;
        for (int64_t i = 0; i < inner_; ++i) {
          d[c] += static_cast<double>(dy[off + i]) * w[off + i];
        }
      }
    }
    if (propagate_down[1]) {
      std::vector<float> dg(channels_);
      for (int64_t c = 0; c < channels_; ++c) {
        dg[c] = static_cast<float>(d[c]) * inv[c];
      }
      store_grad<T>(dg.data(), in[1], accum[1]);
    }
    if (!propagate_down[0]) return;
    std::vector<float> dw(w.size());
    for (int64_t o = 0; o < outer_; ++o) {
      for (int64_t c = 0; c < channels_; ++c) {
        const int64_t off = (o * channels_ + c) * inner_;
        const float a = g[c] * inv[c];
        const float b = a * inv[c] * inv[c] * static_cast<float>(d[c]);
        for (int64_t i = 0; i < inner_; ++i) {
          dw[off + i] = a * dy[off + i] - b * w[off + i];
        }
      }
    }
    store_grad<T>(dw.data(), in[0], accum[0]);
  }
};

template <class T>
class SpectralNormCpu : public SpectralNorm {
 public:
  using SpectralNorm::SpectralNorm;

 protected:
  // Calls fn(r, k, j) for each element (r, k) of the matrix, k = o * inner
  // + i, j its index in w's flat order: row by row, k in order within a
  // row (the order of every sum below), no division per element.
  template <class Fn>
  void for_each_element(Fn&& fn) const {
    for (int64_t r = 0; r < rows_; ++r) {
      for (int64_t o = 0; o < outer_; ++o) {
        const int64_t j0 = (o * rows_ + r) * inner_, k0 = o * inner_;
        for (int64_t i = 0; i < inner_; ++i) fn(r, k0 + i, j0 + i);
      }
    }
  }

  // a / sqrt(|a|^2 + eps), in place.
  void normalize(std::vector<float>& a) const {
    double s = 0.0;
    for (float v : a) s += static_cast<double>(v) * v;
    const float inv = static_cast<float>(1.0 / std::sqrt(s + opts_.eps));
    for (float& v : a) v *= inv;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t R = rows_, K = outer_ * inner_;
    const std::vector<float> w = floats_of<T>(in[0]);
    const float* u0 = in[1]->data()->get<const float>();
    u_.assign(u0, u0 + R);
    if (opts_.output_u) {
      std::copy(u_.begin(), u_.end(), out[1]->data()->cast<float>(true));
    }
    v_.assign(K, 0.0f);
    for (int it = 0; it < opts_.itr; ++it) {
      // v = normalize(W^T u), then u = normalize(W v).
      std::vector<double> v(K, 0.0);
      for_each_element([&](int64_t r, int64_t k, int64_t j) {
        v[k] += double(w[j]) * u_[r];
      });
      for (int64_t k = 0; k < K; ++k) v_[k] = static_cast<float>(v[k]);
      normalize(v_);
      std::vector<double> u(R, 0.0);
      for_each_element([&](int64_t r, int64_t k, int64_t j) {
        u[r] += double(w[j]) * v_[k];
      });
      for (int64_t r = 0; r < R; ++r) u_[r] = static_cast<float>(u[r]);
      normalize(u_);
    }
    if (!opts_.test) {
      std::copy(u_.begin(), u_.end(), in[1]->data()->cast<float>());
    }
    double sigma = 0.0;
    for_each_element([&](int64_t r, int64_t k, int64_t j) {
      sigma += double(u_[r]) * w[j] * v_[k];
    });
    sigma_ = static_cast<float>(sigma);
    std::vector<float> y(w.size());
    for (size_t j = 0; j < w.size(); ++j) y[j] = w[j] / sigma_;
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> w = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    double d = 0.0;
    for (size_t j = 0; j < w.size(); ++j) d += double(dy[j]) * w[j];
    const float c = static_cast<float>(d / (double(sigma_) * sigma_));
    std::vector<float> dw(w.size());
    for_each_element([&](int64_t r, int64_t k, int64_t j) {
      dw[j] = dy[j] / sigma_ - c * u_[r] * v_[k];
    });
    store_grad<T>(dw.data(), in[0], accum[0]);
  }

 private:
  // Forward's u, v and sigma: constants for the grad.
  std::vector<float> u_, v_;
  float sigma_ = 1.0f;
};

}  // namespace

void register_norm_normalization(FunctionRegistry& r) {
  register_float_types<NormNormalizationCpu>(r, decl::NormNormalization, "cpu");
  register_float_types<WeightNormalizationCpu>(r, decl::WeightNormalization,
                                               "cpu");
  register_float_types<SpectralNormCpu>(r, decl::SpectralNorm, "cpu");
}

}  // namespace mg::cpu
