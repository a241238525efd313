// GatherNd, ScatterNd and ScatterAdd on the CPU. Index columns become
// offsets, checked against the shape they index; every sum (repeated
// indices, added data, grads) is in fp32.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/scatter_ops.hpp>

#include <cstring>

namespace mg::cpu {

namespace {

// The flat offset in `shape` of each column of indices (M, count): index
// m of a column is along axis m, negative ones from the end (NNabla's).
std::vector<int64_t> column_offsets(Variable* indices, const Shape& shape,
                                    const char* what, const std::string& tag) {
  const int32_t* ids = index_data(indices, tag, "indices");
  const int64_t m = indices->shape()[0];
  const int64_t count = m ? indices->size() / m : 0;
  const auto stride = shape_strides(shape);
  std::vector<int64_t> off(static_cast<size_t>(count), 0);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < count; ++c) {
      const int64_t i = ids[r * count + c], n = shape[r];
      if (i < -n || i >= n) {
        throw std::invalid_argument(msg(
            tag, "indices holds ", i, " at row ", r, ", column ", c,
            ", but axis ", r, " of ", what, " with shape ", shape_str(shape),
            " has size ", n, "; indices must be in [", -n, ", ", n, ")"));
      }
      off[c] += (i < 0 ? i + n : i) * stride[r];
    }
  }
  return off;
}

template <class T>
class GatherNdCpu : public GatherNd {
 public:
  using GatherNd::GatherNd;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const auto off = column_offsets(in[1], in[0]->shape(), "x", tag());
    const T* x = input<T>(in[0]);
    T* y = output<T>(out[0]);
    for (int64_t c = 0; c < count_; ++c) {
      std::memcpy(y + c * slice_, x + off[c], slice_ * sizeof(T));
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    const auto off = column_offsets(in[1], in[0]->shape(), "x", tag());
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(static_cast<size_t>(in[0]->size()), 0.0f);
    for (int64_t c = 0; c < count_; ++c) {
      for (int64_t k = 0; k < slice_; ++k) dx[off[c] + k] += dy[c * slice_ + k];
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class ScatterNdCpu : public ScatterNd {
 public:
  using ScatterNd::ScatterNd;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const auto off = column_offsets(in[1], out[0]->shape(), "y", tag());
    const std::vector<float> data = floats_of<T>(in[0]);
    std::vector<float> y = in.size() > 2
                               ? floats_of<T>(in[2])
                               : std::vector<float>(out[0]->size(), 0.0f);
    for (int64_t c = 0; c < count_; ++c) {
      float* dst = y.data() + off[c];
      const float* src = data.data() + c * slice_;
      for (int64_t k = 0; k < slice_; ++k) {
        dst[k] = opts_.add ? dst[k] + src[k] : src[k];
      }
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    const bool to_data = propagate_down[0];
    const bool to_out = in.size() > 2 && propagate_down[2];
    if (!to_data && !to_out) return;
    const auto off = column_offsets(in[1], out[0]->shape(), "y", tag());
    std::vector<float> dy = grad_floats_of<T>(out[0]);
    if (to_data) {
      std::vector<float> dd(static_cast<size_t>(in[0]->size()));
      for (int64_t c = 0; c < count_; ++c) {
        std::copy_n(dy.data() + off[c], slice_, dd.data() + c * slice_);
      }
      store(dd.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (to_out) {
      if (!opts_.add) {  // written over: out's value there never reached y
        for (int64_t c = 0; c < count_; ++c) {
          std::fill_n(dy.data() + off[c], slice_, 0.0f);
        }
      }
      store(dy.data(), input_grad<T>(in[2], accum[2]), in[2]->size(), accum[2]);
    }
  }
};

template <class T>
class ScatterAddCpu : public ScatterAdd {
 public:
  using ScatterAdd::ScatterAdd;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y = floats_of<T>(in[0]);
    const std::vector<float> x1 = floats_of<T>(in[2]);
    for_each_target(in, [&](int64_t dst, int64_t src) { y[dst] += x1[src]; });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0] && !propagate_down[2]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    if (propagate_down[0]) {
      store(dy.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (propagate_down[2]) {
      std::vector<float> dx1(static_cast<size_t>(in[2]->size()), 0.0f);
      for_each_target(in,
                      [&](int64_t dst, int64_t src) { dx1[src] = dy[dst]; });
      store(dx1.data(), input_grad<T>(in[2], accum[2]), in[2]->size(),
            accum[2]);
    }
  }

 private:
  // fn(offset in x0, offset in x1) for each position of indices, checked.
  template <class Fn>
  void for_each_target(const Variables& in, Fn&& fn) const {
    const Shape& x0 = in[0]->shape();
    const Shape& idx = in[1]->shape();
    const auto s0 = shape_strides(x0), s1 = shape_strides(in[2]->shape());
    const int32_t* ids = index_data(in[1], tag(), "indices");
    const int nd = static_cast<int>(idx.size());
    const int64_t n = in[1]->size();
    for (int64_t e = 0; e < n; ++e) {
      const int64_t t = ids[e];
      if (t < 0 || t >= x0[axis_]) {
        throw std::invalid_argument(
            msg(tag(), "indices holds ", t, " at flat index ", e, ", but axis ",
                axis_, " of x0 with shape ", shape_str(x0), " has size ",
                x0[axis_], "; indices must be in [0, ", x0[axis_], ")"));
      }
      int64_t rem = e, dst = 0, src = 0;
      for (int d = nd - 1; d >= 0; --d) {
        const int64_t j = rem % idx[d];
        rem /= idx[d];
        src += j * s1[d];
        dst += (d == axis_ ? t : j) * s0[d];
      }
      fn(dst, src);
    }
  }
};

}  // namespace

void register_scatter_ops(FunctionRegistry& r) {
  register_float_types<GatherNdCpu>(r, decl::GatherNd, "cpu");
  register_float_types<ScatterNdCpu>(r, decl::ScatterNd, "cpu");
  register_float_types<ScatterAddCpu>(r, decl::ScatterAdd, "cpu");
}

}  // namespace mg::cpu
