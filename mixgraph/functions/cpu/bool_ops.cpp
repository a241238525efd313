// BoolFill and BoolScatter on the CPU: the mask is read as floats (nonzero
// is true); values move as T or through exact fp32 copies.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/bool_ops.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/elementwise.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// A mask input's grad: zero.
template <class T>
void zero_mask_grad(Variable* v, bool accum) {
  if (!accum) std::fill_n(input_grad<T>(v, false), v->size(), T(0.0f));
}

template <class T>
class BoolFillCpu : public BoolFill {
 public:
  using BoolFill::BoolFill;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const float* m = input<float>(in[1]);
    const T* d = input<T>(in[0]);
    T* y = output<T>(out[0]);
    const T v(opts_.value);
    for_each_row(in, [&](int64_t o, int64_t o0, int64_t s0, int64_t len) {
      for (int64_t j = 0; j < len; ++j) {
        y[o + j] = m[o0 + j * s0] != 0.0f ? v : d[o + j];
      }
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_mask_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    const float* m = input<float>(in[1]);
    const T* dy = output_grad<T>(out[0]);
    T* dx = input_grad<T>(in[0], accum[0]);
    for_each_row(in, [&](int64_t o, int64_t o0, int64_t s0, int64_t len) {
      float g[kBlock], buf[kBlock];
      const float* d = load(dy + o, buf, len);
      for (int64_t j = 0; j < len; ++j) {
        g[j] = m[o0 + j * s0] != 0.0f ? 0.0f : d[j];
      }
      store(g, dx + o, len, accum[0]);
    });
  }

 private:
  // fn(out_offset, mask_offset, mask_step, len) over y's rows.
  template <class Fn>
  void for_each_row(const Variables& in, Fn&& fn) {
    const BroadcastPlan p =
        broadcast_plan(in[1]->shape(), in[0]->shape(), tag());
    for_each_broadcast_row(
        p, [&](int64_t o, int64_t o0, int64_t s0, int64_t, int64_t,
               int64_t len) { fn(o, o0, s0, len); });
  }
};

template <class T>
class BoolScatterCpu : public BoolScatter {
 public:
  using BoolScatter::BoolScatter;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const auto rows = masked_rows(in);
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y = in.size() > 2
                               ? floats_of<T>(in[2])
                               : std::vector<float>(out[0]->size(), 0.0f);
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy_n(x.data() + r * row_, row_, y.data() + rows[r] * row_);
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_mask_grad<T>(in[1], accum[1]);
    const bool to_out = in.size() > 2 && propagate_down[2];
    if (!propagate_down[0] && !to_out) return;
    const auto rows = masked_rows(in);
    std::vector<float> dy = grad_floats_of<T>(out[0]);
    if (propagate_down[0]) {
      std::vector<float> dx(static_cast<size_t>(in[0]->size()));
      for (size_t r = 0; r < rows.size(); ++r) {
        std::copy_n(dy.data() + rows[r] * row_, row_, dx.data() + r * row_);
      }
      store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (to_out) {
      for (int64_t r : rows) std::fill_n(dy.data() + r * row_, row_, 0.0f);
      store(dy.data(), input_grad<T>(in[2], accum[2]), in[2]->size(), accum[2]);
    }
  }

 private:
  // The positions of the mask's nonzeros, as many as input has rows.
  std::vector<int64_t> masked_rows(const Variables& in) const {
    const float* m = input<float>(in[1]);
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < in[1]->size(); ++i) {
      if (m[i] != 0.0f) rows.push_back(i);
    }
    const int64_t nnz = in[0]->shape()[0];
    if (static_cast<int64_t>(rows.size()) != nnz) {
      throw std::invalid_argument(msg(
          tag(), "mask with shape ", shape_str(in[1]->shape()), " has ",
          rows.size(), " nonzeros, but input with shape ",
          shape_str(in[0]->shape()), " has ", nnz, " rows; they must match"));
    }
    return rows;
  }
};

}  // namespace

void register_bool_ops(FunctionRegistry& r) {
  register_float_types<BoolFillCpu>(r, decl::BoolFill, "cpu");
  register_float_types<BoolScatterCpu>(r, decl::BoolScatter, "cpu");
}

}  // namespace mg::cpu
