// The losses on the CPU: the class-axis ones in fp32 tiles (axis_tile.hpp),
// the elementwise ones in fp32 blocks.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/axis_tile.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/ops/loss_ops.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// t's labels as int32 (float labels convert), each checked to be a class of
// x. Labels are data, so this is only known in forward; it runs before any
// parallel loop, which must not throw.
const int32_t* labels(const Variables& in, const AxisSplit& s,
                      const std::string& tag) {
  const int32_t* l = index_data(in[1], tag, "t");
  check_class_labels(l, in[1]->size(), in[0]->shape(), s, tag);
  return l;
}

// The type in which a loss kept in fp32 (the precision policy) reads x: the
// type its data is held in where that is half or bfloat16 on the host,
// plain, with no fp32 copy made yet; else T. Its tiles then convert as they
// are read, where reading x as float made and kept an fp32 copy of the
// whole array in a pass of its own: the GPT's loss in half (logits 1024 x
// 1000) went from 1.2 to 0.63 ms forward and 0.92 to 0.80 backward, and its
// step's allocations from 31.4 to 26.4 MiB (Intel Xeon, 2026-12-07).
template <class T, class Fn>
void with_held_type(Variable* x, Fn&& fn) {
  const SyncedArray& a = x->data()->array();
  if constexpr (std::is_same_v<T, float>) {
    const bool host_16 =
        a.has_head() && a.layout().plain() &&
        (a.dtype() == Dtype::f16 || a.dtype() == Dtype::bf16) &&
        a.has_copy(a.dtype(), "cpu") && !a.has_copy(Dtype::f32, "cpu");
    if (host_16 && a.dtype() == Dtype::f16) return fn(Half{});
    if (host_16) return fn(BFloat16{});
  }
  fn(T{});
}

template <class T>
class SoftmaxCrossEntropyCpu : public SoftmaxCrossEntropy {
 public:
  using SoftmaxCrossEntropy::SoftmaxCrossEntropy;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    with_held_type<T>(in[0],
                      [&](auto held) { forward_as<decltype(held)>(in, out); });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) refuse_label_grad(tag());
    if (!propagate_down[0]) return;
    with_held_type<T>(in[0], [&](auto held) {
      backward_as<decltype(held)>(in, out, accum[0]);
    });
  }

 private:
  // y = log(sum(exp(x - max))) + max - x[label]: never exp of a large value.
  // x is read as S (T, or the 16-bit type it is held in); y is T.
  template <class S>
  void forward_as(const Variables& in, const Variables& out) {
    const AxisSplit& s = split_;
    const int32_t* l = labels(in, s, tag());
    const S* x = input<S>(in[0]);
    T* y = output<T>(out[0]);
    const int64_t w_max = tile_width(s), tile = s.size * w_max;
    auto tile_fn = [&](int64_t o, int64_t j0, int64_t w, float* scratch) {
      float* e = scratch + tile;
      float* mx = e + tile;
      float* sum = mx + w_max;
      float* yb = sum + w_max;
      int64_t ld;
      const float* xf = read_tile(x, s, o, j0, w, scratch, &ld);
      exp_and_sum(xf, ld, s.size, w, e, mx, sum);
      const int32_t* lt = l + o * s.inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        yb[j] = mx[j] + std::log(sum[j]) - xf[lt[j] * ld + j];
      }
      store(yb, y + o * s.inner + j0, w);
    };
    for_each_tile(s, 2 * tile + 3 * w_max, tile_fn, parallel_min_exp());
  }

  // dx = dy (softmax(x) - onehot(t)), softmax recomputed from x rather than
  // kept from forward: no activation-sized buffer lives between the passes.
  // dx is written in S, rounded once from fp32 as the function reading it
  // would have converted it; added to in fp32 (T) where accum asks.
  template <class S>
  void backward_as(const Variables& in, const Variables& out, bool accum) {
    if (accum && !std::is_same_v<S, T>) return backward_as<T>(in, out, accum);
    const AxisSplit& s = split_;
    const int32_t* l = in[1]->data()->get<const int32_t>();
    const S* x = input<S>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    S* dx = input_grad<S>(in[0], accum);
    const int64_t w_max = tile_width(s), tile = s.size * w_max;
    auto tile_fn = [&](int64_t o, int64_t j0, int64_t w, float* scratch) {
      float* e = scratch + tile;
      float* mx = e + tile;
      float* sum = mx + w_max;
      float* dyb = sum + w_max;
      int64_t ld;
      const float* xf = read_tile(x, s, o, j0, w, scratch, &ld);
      exp_and_sum(xf, ld, s.size, w, e, mx, sum);
      const float* dyf = load(dy + o * s.inner + j0, dyb, w);
      for (int64_t j = 0; j < w; ++j) sum[j] = dyf[j] / sum[j];
      if (w == 1) {  // the last axis (a vocabulary's logits): one run
        const float scale = sum[0];
        for (int64_t a = 0; a < s.size; ++a) e[a] *= scale;
      } else {
        for (int64_t a = 0; a < s.size; ++a) {
          for (int64_t j = 0; j < w; ++j) e[a * w + j] *= sum[j];
        }
      }
      const int32_t* lt = l + o * s.inner + j0;
      for (int64_t j = 0; j < w; ++j) e[lt[j] * w + j] -= dyf[j];
      write_tile(e, dx, s, o, j0, w, accum);
    };
    for_each_tile(s, 2 * tile + 3 * w_max, tile_fn, parallel_min_exp());
  }
};

template <class T>
class TopNErrorCpu : public TopNError {
 public:
  using TopNError::TopNError;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const AxisSplit& s = split_;
    const int32_t* l = labels(in, s, tag());
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const int64_t w_max = tile_width(s), tile = s.size * w_max;
    auto tile_fn = [&](int64_t o, int64_t j0, int64_t w, float* scratch) {
      float* yb = scratch + tile;
      int64_t ld;
      const float* xf = read_tile(x, s, o, j0, w, scratch, &ld);
      const int32_t* lt = l + o * s.inner + j0;
      for (int64_t j = 0; j < w; ++j) {
        const float threshold = xf[lt[j] * ld + j];
        int64_t count = 0;  // classes scoring at least the true one, itself too
        bool nan = false;
        for (int64_t a = 0; a < s.size; ++a) {
          const float v = xf[a * ld + j];
          count += v >= threshold;
          nan |= v != v;
        }
        // A nan score (a diverged model's) is an error: compared with it,
        // no class scores above the label, which would count as right.
        yb[j] = nan || count > opts_.n ? 1.0f : 0.0f;
      }
      store(yb, y + o * s.inner + j0, w);
    };
    for_each_tile(s, tile + w_max, tile_fn);
  }

  // A metric: nothing to propagate, whatever propagate_down says.
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

template <class T>
class SigmoidCrossEntropyCpu : public SigmoidCrossEntropy {
 public:
  using SigmoidCrossEntropy::SigmoidCrossEntropy;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const T* x = input<T>(in[0]);
    const T* t = input<T>(in[1]);
    T* y = output<T>(out[0]);
    const ops::SigmoidCrossEntropyOp op;
    for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], tb[kBlock], yb[kBlock];
      const float* xf = load(x + begin, xb, len);
      const float* tf = load(t + begin, tb, len);
      for (int64_t i = 0; i < len; ++i) yb[i] = op(xf[i], tf[i]);
      store(yb, y + begin, len);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) {
      throw std::invalid_argument(
          msg(tag(),
              "t holds targets and has no gradient; make t "
              "need_grad = false"));
    }
    if (!propagate_down[0]) return;
    const T* x = input<T>(in[0]);
    const T* t = input<T>(in[1]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    const ops::SigmoidCrossEntropyOp op;
    for_each_block(in[0]->size(), [&](int64_t begin, int64_t len) {
      float xb[kBlock], tb[kBlock], dyb[kBlock], dxb[kBlock];
      const float* xf = load(x + begin, xb, len);
      const float* tf = load(t + begin, tb, len);
      const float* dyf = load(dy + begin, dyb, len);
      for (int64_t i = 0; i < len; ++i) dxb[i] = op.grad(xf[i], tf[i], dyf[i]);
      store(dxb, dx + begin, len, accum[0]);
    });
  }
};

// Probabilities are clamped here inside the log (BinaryCrossEntropy's).
constexpr float kMinProbability = 1e-12f;

template <class T>
class CategoricalCrossEntropyCpu : public CategoricalCrossEntropy {
 public:
  using CategoricalCrossEntropy::CategoricalCrossEntropy;

 protected:
  // Calls fn(position, flat index of x at the label) for every position.
  template <class Fn>
  void for_each_label(const Variables& in, Fn&& fn) const {
    const AxisSplit& s = split_;
    const int32_t* l = labels(in, s, tag());
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t j = 0; j < s.inner; ++j) {
        const int64_t pos = o * s.inner + j;
        fn(pos, (o * s.size + l[pos]) * s.inner + j);
      }
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(out[0]->size());
    for_each_label(in, [&](int64_t pos, int64_t at) {
      y[pos] = -std::log(std::max(x[at], kMinProbability));
    });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(in[0]->size(), 0.0f);
    for_each_label(in, [&](int64_t pos, int64_t at) {
      dx[at] = x[at] > kMinProbability ? -dy[pos] / x[at] : 0.0f;
    });
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class KLMultinomialCpu : public KLMultinomial {
 public:
  using KLMultinomial::KLMultinomial;

 protected:
  static constexpr double kEps = 1e-8;  // NNabla's, inside both logs

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> p = floats_of<T>(in[0]), q = floats_of<T>(in[1]);
    std::vector<float> y(rows_);
    for (int64_t r = 0; r < rows_; ++r) {
      double sum = 0.0;
      for (int64_t k = r * row_size_; k < (r + 1) * row_size_; ++k) {
        sum += p[k] * (std::log(p[k] + kEps) - std::log(q[k] + kEps));
      }
      y[r] = static_cast<float>(sum);
    }
    store(y.data(), output<T>(out[0]), rows_);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const std::vector<float> p = floats_of<T>(in[0]), q = floats_of<T>(in[1]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dp(p.size()), dq(q.size());
    for (int64_t k = 0; k < static_cast<int64_t>(p.size()); ++k) {
      const double g = dy[k / row_size_];
      dp[k] = static_cast<float>(
          g * (std::log(p[k] + kEps) - std::log(q[k] + kEps) + 1.0));
      dq[k] = static_cast<float>(-g * p[k] / (q[k] + kEps));
    }
    if (propagate_down[0]) {
      store(dp.data(), input_grad<T>(in[0], accum[0]), dp.size(), accum[0]);
    }
    if (propagate_down[1]) {
      store(dq.data(), input_grad<T>(in[1], accum[1]), dq.size(), accum[1]);
    }
  }
};

template <class T>
class ConfusionMatrixCpu : public ConfusionMatrix {
 public:
  using ConfusionMatrix::ConfusionMatrix;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const AxisSplit& s = split_;
    const int32_t* l = labels(in, s, tag());
    const std::vector<float> x = floats_of<T>(in[0]);
    float* y = out[0]->data()->template cast<float>(/*write_only=*/true);
    std::fill(y, y + s.size * s.size, 0.0f);
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t j = 0; j < s.inner; ++j) {
        int64_t best = 0;
        for (int64_t a = 1; a < s.size; ++a) {
          if (x[(o * s.size + a) * s.inner + j] >
              x[(o * s.size + best) * s.inner + j]) {
            best = a;
          }
        }
        y[l[o * s.inner + j] * s.size + best] += 1.0f;
      }
    }
  }

  // A metric: nothing to propagate.
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

}  // namespace

void register_loss(FunctionRegistry& r) {
  register_float_types<SoftmaxCrossEntropyCpu>(r, decl::SoftmaxCrossEntropy,
                                               "cpu");
  register_float_types<SigmoidCrossEntropyCpu>(r, decl::SigmoidCrossEntropy,
                                               "cpu");
  register_float_types<TopNErrorCpu>(r, decl::TopNError, "cpu");
  register_float_types<CategoricalCrossEntropyCpu>(
      r, decl::CategoricalCrossEntropy, "cpu");
  register_float_types<KLMultinomialCpu>(r, decl::KLMultinomial, "cpu");
  register_float_types<ConfusionMatrixCpu>(r, decl::ConfusionMatrix, "cpu");
}

}  // namespace mg::cpu
