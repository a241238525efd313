// The quantization layers on the CPU. Everything is computed in fp32 on
// converted values; the levels QuantizeLinear gives are whole numbers in
// [-128, 255], exact in half and bfloat16. The weight layers write their
// quantized weight into a buffer held as the float weight is (fp32 for a
// master parameter, else T), run the Affine or Convolution kernel on it and
// so write the weight's grad as that kernel does.
#include <mixgraph/functions/quantize_layers.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <type_traits>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/graph/random.hpp>

namespace mg::cpu {

namespace {

// For each element of x, the index of its element in p (same rank, each
// axis 1 or x's).
std::vector<int64_t> broadcast_index(const Shape& x, const Shape& p) {
  const int r = static_cast<int>(x.size());
  std::vector<int64_t> index(static_cast<size_t>(shape_size(x)), 0);
  std::vector<int64_t> pos(r, 0), stride(r, 0);
  int64_t s = 1;
  for (int a = r - 1; a >= 0; --a) {
    stride[a] = p[a] == 1 ? 0 : s;
    s *= p[a];
  }
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t k = 0;
    for (int a = 0; a < r; ++a) k += pos[a] * stride[a];
    index[i] = k;
    for (int a = r - 1; a >= 0; --a) {
      if (++pos[a] < x[a]) break;
      pos[a] = 0;
    }
  }
  return index;
}

// Writes values into v's data in fp32 when `in_float`, else in T.
template <class T>
void write_as(Variable* v, const std::vector<float>& values, bool in_float) {
  if (in_float) {
    std::copy(values.begin(), values.end(), v->data()->cast<float>(true));
  } else {
    store(values.data(), v->data()->cast<T>(true), v->size());
  }
}

// Writes values into v in the type v is held in (fp32 for a parameter).
template <class T>
void write_back(Variable* v, const std::vector<float>& values) {
  write_as<T>(v, values, std::is_same_v<T, float> || held_in_float(v));
}

template <class T>
class QuantizeLinearCpu : public QuantizeLinear {
 public:
  using QuantizeLinear::QuantizeLinear;

 protected:
  float round(float v) const {
    if (opts_.round_mode == "HALF_AWAY_FROM_ZERO") return std::round(v);
    const float t = std::round(v);  // NNabla's half-to-even
    return std::abs(v - t) == 0.5f ? std::round(v * 0.5f) * 2 : t;
  }
  float saturate(float v) const { return std::min(hi_, std::max(lo_, v)); }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> scale = floats_of<T>(in[1]);
    const std::vector<float> zp = floats_of<T>(in[2]);
    const auto si = broadcast_index(in[0]->shape(), in[1]->shape());
    const auto zi = broadcast_index(in[0]->shape(), in[2]->shape());
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const float z = saturate(round(zp[zi[i]]));
      y[i] = saturate(round(x[i] / scale[si[i]]) + z);
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> scale = floats_of<T>(in[1]);
    const auto si = broadcast_index(in[0]->shape(), in[1]->shape());
    std::vector<float> dx(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) dx[i] = dy[i] / scale[si[i]];
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class DequantizeLinearCpu : public DequantizeLinear {
 public:
  using DequantizeLinear::DequantizeLinear;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> scale = floats_of<T>(in[1]);
    const std::vector<float> zp = floats_of<T>(in[2]);
    const auto si = broadcast_index(in[0]->shape(), in[1]->shape());
    const auto zi = broadcast_index(in[0]->shape(), in[2]->shape());
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      y[i] = (x[i] - zp[zi[i]]) * scale[si[i]];
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const std::vector<float> scale = floats_of<T>(in[1]);
    const auto si = broadcast_index(in[0]->shape(), in[1]->shape());
    std::vector<float> dx(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) dx[i] = dy[i] * scale[si[i]];
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class MinMaxQuantizeCpu : public MinMaxQuantize {
 public:
  using MinMaxQuantize::MinMaxQuantize;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> qmin = floats_of<T>(in[1]);
    std::vector<float> qmax = floats_of<T>(in[2]);
    const std::vector<float> lmin = floats_of<T>(in[3]);
    const std::vector<float> lmax = floats_of<T>(in[4]);
    const size_t np = qmin.size();
    if (opts_.x_min_max) {
      std::vector<float> mn(np, INFINITY), mx(np, -INFINITY);
      for (size_t i = 0; i < x.size(); ++i) {
        const int64_t k = param_index_[i];
        mn[k] = std::min(mn[k], x[i]);
        mx[k] = std::max(mx[k], x[i]);
      }
      for (size_t k = 0; k < np; ++k) {
        if (opts_.ema) {
          qmin[k] = opts_.decay * qmin[k] + (1.0f - opts_.decay) * mn[k];
          qmax[k] = opts_.decay * qmax[k] + (1.0f - opts_.decay) * mx[k];
        } else {
          qmin[k] = mn[k];
          qmax[k] = mx[k];
        }
      }
      write_back<T>(in[1], qmin);
    }
    bool nudged = false;  // NNabla's nudge_range, in place
    for (size_t k = 0; k < np; ++k) {
      if (qmax[k] - qmin[k] < opts_.eps) {
        qmax[k] = qmin[k] + opts_.eps;
        nudged = true;
      }
    }
    if (opts_.x_min_max || (nudged && !in[2]->parent())) {
      write_back<T>(in[2], qmax);
    }
    scale_.assign(np, 0.0f);
    lo_.assign(np, 0.0f);
    hi_.assign(np, 0.0f);
    for (size_t k = 0; k < np; ++k) {
      const float s = (qmax[k] - qmin[k]) / (lmax[k] - lmin[k]);
      const float zf = lmin[k] - qmin[k] / s;
      const float zp = zf <= lmin[k]   ? lmin[k]
                       : zf >= lmax[k] ? lmax[k]
                                       : std::round(zf);
      scale_[k] = s;
      lo_[k] = (lmin[k] - zp) * s;
      hi_[k] = (lmax[k] - zp) * s;
    }
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t k = param_index_[i];
      const float c = std::min(std::max(x[i], lo_[k]), hi_[k]);
      y[i] = std::round((c - lo_[k]) / scale_[k]) * scale_[k] + lo_[k];
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    if (propagate_down[0]) {
      std::vector<float> dx(dy);
      if (opts_.ste_fine_grained) {
        for (size_t i = 0; i < x.size(); ++i) {
          const int64_t k = param_index_[i];
          if (!(x[i] >= lo_[k] && x[i] <= hi_[k])) dx[i] = 0.0f;
        }
      }
      store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    const bool learnt = !opts_.x_min_max && !opts_.ema;
    for (int p = 1; p <= 2; ++p) {
      if (!propagate_down[p]) continue;
      std::vector<float> g(in[p]->size(), 0.0f);
      if (learnt) {
        for (size_t i = 0; i < x.size(); ++i) {
          const int64_t k = param_index_[i];
          if (p == 1 ? x[i] < lo_[k] : x[i] > hi_[k]) g[k] += dy[i];
        }
      }
      store_grad<T>(g.data(), in[p], accum[p]);
    }
  }

  std::vector<float> scale_;
};

// sign(w), with quantize_zero_to at 0.
float binarize(float w, float zero_to) {
  return w > 0 ? 1.0f : (w < 0 ? -1.0f : zero_to);
}

// BinaryConnect: wq = binary_weight = sign(weight).
template <class T, class Base>
class BinaryConnectCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> w = floats_of<T>(in[1]);
    for (float& v : w) v = binarize(v, this->opts_.quantize_zero_to);
    write_back<T>(in[2], w);
    write_as<T>(this->wq_.get(), w, held_in_float(in[1]));
    this->inner_->forward(this->inner_inputs(in), out);
  }
};

// BinaryWeight: binary_weight = sign(weight), alpha the mean magnitude per
// output (per column of an affine weight (K, M), per row of a convolution
// weight (OC, ...)), wq = binary_weight * alpha.
template <class T, class Base>
class BinaryWeightCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    constexpr bool conv = std::is_same_v<Base, BinaryWeightConvolution>;
    std::vector<float> w = floats_of<T>(in[1]);
    const int64_t rows = in[1]->shape()[0];
    const int64_t cols = in[1]->size() / rows;
    const int64_t outputs = conv ? rows : cols;
    const int64_t reduced = conv ? cols : rows;
    std::vector<float> alpha(outputs, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        alpha[conv ? r : c] += std::abs(w[r * cols + c]);
      }
    }
    for (float& a : alpha) a *= 1.0f / static_cast<float>(reduced);
    std::vector<float> scaled(w.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        float& v = w[r * cols + c];
        v = binarize(v, this->opts_.quantize_zero_to);
        scaled[r * cols + c] = v * alpha[conv ? r : c];
      }
    }
    write_back<T>(in[2], w);
    write_back<T>(in[3], alpha);
    write_as<T>(this->wq_.get(), scaled, held_in_float(in[1]));
    this->inner_->forward(this->inner_inputs(in), out);
  }
};

// INQ: fixed weights restored, some learnable ones fixed at the scheduled
// forwards, the fixed ones quantized to powers of two in place (NNabla's
// algorithm, float arithmetic as its float kernel); wq is the weight itself.
template <class T, class Base>
class INQCpu : public Base {
 public:
  using Base::Base;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    Base::setup_impl(in, out);
    this->wq_->set_data(in[1]->data());
    if (old_w_.size() != static_cast<size_t>(in[1]->size())) {
      counter_ = 0;
      old_w_.assign(in[1]->size(), 0.0f);
      old_ind_.assign(in[1]->size(), 0);
      if (this->opts_.selection_algorithm == "random" &&
          this->opts_.seed != -1) {
        rgen_.seed(static_cast<uint32_t>(this->opts_.seed));
      }
    }
  }

  std::vector<int32_t> read_indicators(Variable* v) {
    std::vector<int32_t> ind(v->size());
    if (holds_integers(v)) {
      const int32_t* p = v->data()->get<const int32_t>();
      std::copy(p, p + ind.size(), ind.begin());
    } else {
      const std::vector<float> f = floats_of<T>(v);
      for (size_t i = 0; i < f.size(); ++i) ind[i] = static_cast<int32_t>(f[i]);
    }
    return ind;
  }

  void write_indicators(Variable* v, const std::vector<int32_t>& ind) {
    if (holds_integers(v)) {
      std::copy(ind.begin(), ind.end(), v->data()->cast<int32_t>(true));
    } else {
      write_back<T>(v, std::vector<float>(ind.begin(), ind.end()));
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const auto& o = this->opts_;
    this->wq_->set_data(in[1]->data());  // the kernel reads the weight
    std::vector<float> w = floats_of<T>(in[1]);
    std::vector<int32_t> ind = read_indicators(in[2]);
    const size_t n = w.size();
    for (size_t i = 0; i < n; ++i) {
      if (old_ind_[i] == 1) w[i] = old_w_[i];
    }
    const auto& its = o.inq_iterations;
    if (std::find(its.begin(), its.end(), counter_) != its.end()) {
      if (its.back() == counter_) {
        std::fill(ind.begin(), ind.end(), 1);
      } else if (o.selection_algorithm == "largest_abs") {
        std::vector<size_t> idx(n);
        std::iota(idx.begin(), idx.end(), 0);
        // Stable, so ties go in index order (NNabla's std::sort leaves
        // their order to the library).
        std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
          return std::abs(w[a]) > std::abs(w[b]);
        });
        int64_t learnable = 0;
        for (int32_t v : ind) learnable += v == 0;
        int64_t fixed = 0;
        for (size_t i = 0; i < n; ++i) {
          if (ind[idx[i]] == 0) {
            ind[idx[i]] = 1;
            ++fixed;
          }
          if (fixed >= learnable / 2) break;
        }
      } else {
        std::mt19937& g = o.seed == -1 ? random_engine() : rgen_;
        std::bernoulli_distribution coin(0.5);
        for (size_t i = 0; i < n; ++i) {
          if (ind[i] == 0) ind[i] = coin(g);
        }
      }
    }
    float max_abs = 0.0f;
    for (float v : w) max_abs = std::max(max_abs, std::abs(v));
    if (max_abs == 0.0f) max_abs = 1.0f;
    const float lm = std::log2(max_abs);
    const int n1 = static_cast<int>(std::floor(lm) +
                                    (lm - std::floor(lm) >= std::log2(1.5)));
    const int n2 = n1 + 1 - static_cast<int>(std::pow(2, o.num_bits - 2));
    const float threshold = static_cast<float>(std::pow(2, n2 - 1));
    const float d = 0.58496250072115619f;  // log2(1.5)
    for (size_t i = 0; i < n; ++i) {
      if (ind[i] != 1) continue;
      if (std::abs(w[i]) < threshold) {
        w[i] = 0.0f;
      } else {
        const float s = w[i] < 0.0f ? -1.0f : 1.0f;
        const float b = std::log2(std::abs(w[i]));
        int e = static_cast<int>(std::floor(b) + (b - std::floor(b) >= d));
        e = std::min(std::max(e, n2), n1);
        w[i] = std::ldexp(s, e);
      }
    }
    const std::vector<float> before = floats_of<T>(in[1]);
    if (w != before) {
      if (in[1]->parent()) {
        throw std::invalid_argument(
            msg(this->tag(), "weight is the output of ",
                in[1]->parent()->function().name(),
                ": forward writes its fixed weights, so it must be a leaf "
                "variable (a parameter)"));
      }
      write_back<T>(in[1], w);
    }
    if (ind != read_indicators(in[2])) write_indicators(in[2], ind);
    this->inner_->forward(this->inner_inputs(in), out);
    ++counter_;
    old_w_ = floats_of<T>(in[1]);
    old_ind_ = ind;
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    this->wq_->set_data(in[1]->data());
    Base::backward_impl(in, out, propagate_down, accum);
  }

  int64_t counter_ = 0;
  std::vector<float> old_w_;
  std::vector<int32_t> old_ind_;
  std::mt19937 rgen_;
};

template <class T>
using BinaryConnectAffineCpu = BinaryConnectCpu<T, BinaryConnectAffine>;
template <class T>
using BinaryConnectConvolutionCpu =
    BinaryConnectCpu<T, BinaryConnectConvolution>;
template <class T>
using BinaryWeightAffineCpu = BinaryWeightCpu<T, BinaryWeightAffine>;
template <class T>
using BinaryWeightConvolutionCpu = BinaryWeightCpu<T, BinaryWeightConvolution>;
template <class T>
using INQAffineCpu = INQCpu<T, INQAffine>;
template <class T>
using INQConvolutionCpu = INQCpu<T, INQConvolution>;

}  // namespace

void register_quantize_layers(FunctionRegistry& r) {
  register_float_types<QuantizeLinearCpu>(r, decl::QuantizeLinear, "cpu");
  register_float_types<DequantizeLinearCpu>(r, decl::DequantizeLinear, "cpu");
  register_float_types<MinMaxQuantizeCpu>(r, decl::MinMaxQuantize, "cpu");
  register_float_types<BinaryConnectAffineCpu>(r, decl::BinaryConnectAffine,
                                               "cpu");
  register_float_types<BinaryConnectConvolutionCpu>(
      r, decl::BinaryConnectConvolution, "cpu");
  register_float_types<BinaryWeightAffineCpu>(r, decl::BinaryWeightAffine,
                                              "cpu");
  register_float_types<BinaryWeightConvolutionCpu>(
      r, decl::BinaryWeightConvolution, "cpu");
  register_float_types<INQAffineCpu>(r, decl::INQAffine, "cpu");
  register_float_types<INQConvolutionCpu>(r, decl::INQConvolution, "cpu");
}

}  // namespace mg::cpu
