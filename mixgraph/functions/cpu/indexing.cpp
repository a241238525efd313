// Embed, Gather, OneHot and Where on the CPU. Forward copies elements of T;
// backward sums into fp32 buffers where indices repeat.
#include <cstring>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/elementwise.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/registry.hpp>
#include <stdexcept>

namespace mg::cpu {

namespace {

// v's values as int32, each checked to be in [0, limit). `has` says where
// the limit comes from: "W with shape (10, 4) has 10 rows".
const int32_t* indices(Variable* v, int64_t limit, const std::string& has,
                       const std::string& tag, const char* what) {
  const int32_t* ids = index_data(v, tag, what);
  check_indices(ids, v->size(), limit, has, tag, what);
  return ids;
}

template <class T>
class EmbedCpu : public Embed {
 public:
  using Embed::Embed;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int32_t* ids = index_data(in[0], tag(), "x");
    check_ids(ids, in);
    const T* w = input<T>(in[1]);
    T* y = output<T>(out[0]);
    const int64_t n = in[0]->size();
#pragma omp parallel for schedule(static) if (n * width_ >= parallel_min())
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(y + i * width_, w + ids[i] * width_, width_ * sizeof(T));
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
    if (!propagate_down[1]) return;
    const int32_t* ids = in[0]->data()->get<const int32_t>();
    const T* dy = output_grad<T>(out[0]);
    std::vector<float> sum(rows_ * width_, 0.0f);
    std::vector<float> buf(width_);
    for (int64_t i = 0; i < in[0]->size(); ++i) {
      const float* g = load(dy + i * width_, buf.data(), width_);
      float* s = sum.data() + ids[i] * width_;
      for (int64_t j = 0; j < width_; ++j) s[j] += g[j];
    }
    store_grad<T>(sum.data(), in[1], accum[1]);  // fp32 for an fp32 master
  }
};

template <class T>
class GatherCpu : public Gather {
 public:
  using Gather::Gather;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int32_t* ids =
        indices(in[1], size_,
                "x with shape " + shape_str(in[0]->shape()) + " has " +
                    std::to_string(size_) + " entries along axis " +
                    std::to_string(opts_.axis),
                tag(), "indices");
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const int64_t rows = batch_ * outer_ * count_;
#pragma omp parallel for schedule(static) if (rows * inner_ >= parallel_min())
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / (outer_ * count_), c = r % count_;
      const int64_t o = (r / count_) % outer_;
      const T* src =
          x + ((b * outer_ + o) * size_ + ids[b * count_ + c]) * inner_;
      std::memcpy(y + r * inner_, src, inner_ * sizeof(T));
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    const int32_t* ids = in[1]->data()->get<const int32_t>();
    const T* dy = output_grad<T>(out[0]);
    std::vector<float> sum(in[0]->size(), 0.0f);
    std::vector<float> buf(inner_);
    const int64_t rows = batch_ * outer_ * count_;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / (outer_ * count_), c = r % count_;
      const int64_t o = (r / count_) % outer_;
      float* s = sum.data() +
                 ((b * outer_ + o) * size_ + ids[b * count_ + c]) * inner_;
      const float* g = load(dy + r * inner_, buf.data(), inner_);
      for (int64_t j = 0; j < inner_; ++j) s[j] += g[j];
    }
    store(sum.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class OneHotCpu : public OneHot {
 public:
  using OneHot::OneHot;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Shape& s = opts_.shape;
    const int k = static_cast<int>(s.size());
    const int32_t* ids = index_data(in[0], tag(), "x");
    const int64_t rows = in[0]->size() / k, width = shape_size(s);
    T* y = output<T>(out[0]);
    std::fill_n(y, out[0]->size(), T(0.0f));
    for (int64_t n = 0; n < rows; ++n) {
      int64_t flat = 0;
      for (int d = 0; d < k; ++d) {
        const int32_t id = ids[n * k + d];
        if (id < 0 || id >= s[d]) {
          throw std::invalid_argument(msg(tag(), "x holds id ", id,
                                          " at flat index ", n * k + d,
                                          ", but axis ", d, " of shape ",
                                          shape_str(s), " has size ", s[d]));
        }
        flat = flat * s[d] + id;
      }
      y[n * width + flat] = T(1.0f);
    }
  }

  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
  }
};

template <class T>
class WhereCpu : public Where {
 public:
  using Where::Where;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const float* c = input<float>(in[0]);
    const T* xt = input<T>(in[1]);
    const T* xf = input<T>(in[2]);
    T* y = output<T>(out[0]);
    for_each_row(in, [&](int64_t o, int64_t o0, int64_t s0, int64_t len) {
      for (int64_t j = 0; j < len; ++j) {
        y[o + j] = c[o0 + j * s0] != 0.0f ? xt[o + j] : xf[o + j];
      }
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
    const float* c = input<float>(in[0]);
    const T* dy = output_grad<T>(out[0]);
    for (int k = 1; k <= 2; ++k) {
      if (!propagate_down[k]) continue;
      T* dx = input_grad<T>(in[k], accum[k]);
      const bool pick = k == 1;  // x_true takes dy where c holds
      for_each_row(in, [&](int64_t o, int64_t o0, int64_t s0, int64_t len) {
        float g[kBlock], buf[kBlock];
        const float* d = load(dy + o, buf, len);
        for (int64_t j = 0; j < len; ++j) {
          g[j] = (c[o0 + j * s0] != 0.0f) == pick ? d[j] : 0.0f;
        }
        store(g, dx + o, len, accum[k]);
      });
    }
  }

 private:
  // fn(out_offset, condition_offset, condition_step, len) over y's rows.
  template <class Fn>
  void for_each_row(const Variables& in, Fn&& fn) {
    const BroadcastPlan p =
        broadcast_plan(in[0]->shape(), in[1]->shape(), tag());
    for_each_broadcast_row(
        p, [&](int64_t o, int64_t o0, int64_t s0, int64_t, int64_t,
               int64_t len) { fn(o, o0, s0, len); });
  }
};

}  // namespace

void register_indexing(FunctionRegistry& r) {
  register_float_types<EmbedCpu>(r, decl::Embed, "cpu");
  register_float_types<GatherCpu>(r, decl::Gather, "cpu");
  register_float_types<OneHotCpu>(r, decl::OneHot, "cpu");
  register_float_types<WhereCpu>(r, decl::Where, "cpu");
}

}  // namespace mg::cpu
