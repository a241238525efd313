// Interpolate on the device, as on the CPU: one pass per resized axis in
// fp32 (the first reads T, the last rounds to T once), the grad the
// transposed passes in reverse order. Each pass is an index body of
// cuda/index_kernels.hpp; an axis's sources, weights and their inverse
// are made once per setup and live on the device.
#include <mixgraph/functions/interpolate.hpp>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

template <class T>
class InterpolateCuda : public Interpolate {
 public:
  using Interpolate::Interpolate;

 protected:
  // Per axis: its (outer, in, out, inner) and where its tables start in
  // the int64 and float arrays.
  struct Pass {
    ResizeAxisTables sizes;
    int64_t i0, i1, ptr, pair_j;  // in ints_
    int64_t w, pair_w;            // in floats_
  };

  void setup_impl(const Variables& in, const Variables& out) override {
    Interpolate::setup_impl(in, out);
    std::vector<int64_t> ints;
    std::vector<float> floats;
    passes_.clear();
    Shape s = in[0]->shape();
    for (const ResizedAxis& r : axes_) {
      Pass p;
      const int nd = static_cast<int>(s.size());
      p.sizes.outer = shape_size(s, 0, r.axis);
      p.sizes.inner = shape_size(s, r.axis + 1, nd);
      p.sizes.in = r.in;
      p.sizes.out = r.out;
      auto put = [](auto& all, const auto& part) {
        const int64_t at = static_cast<int64_t>(all.size());
        all.insert(all.end(), part.begin(), part.end());
        return at;
      };
      p.i0 = put(ints, r.i0);
      p.i1 = put(ints, r.i1);
      p.ptr = put(ints, r.ptr);
      p.pair_j = put(ints, r.pair_j);
      p.w = put(floats, r.w);
      p.pair_w = put(floats, r.pair_w);
      passes_.push_back(p);
      s[r.axis] = r.out;
    }
    // Host data, copied to the device at the first forward and kept there.
    ints_ = std::make_unique<SyncedArray>(ints.size());
    floats_ = std::make_unique<SyncedArray>(floats.size());
    if (!ints.empty()) {
      std::copy(ints.begin(), ints.end(),
                static_cast<int64_t*>(ints_->cast(Dtype::i64, "cpu", true)));
    }
    if (!floats.empty()) {
      std::copy(floats.begin(), floats.end(),
                static_cast<float*>(floats_->cast(Dtype::f32, "cpu", true)));
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    if (passes_.empty()) {  // nothing resized: a copy
      copy(l, x, y, in[0]->size(), false);
      return;
    }
    std::unique_ptr<Memory> prev, next;
    const float* src = nullptr;
    for (size_t k = 0; k < passes_.size(); ++k) {
      const ResizeAxisTables t = tables(k);
      const int64_t n = t.outer * t.out * t.inner;
      const bool first = k == 0, last = k + 1 == passes_.size();
      if (last) {
        first ? launch(n, ResizeBody<T, T>{x, y, t}, l.stream)
              : launch(n, ResizeBody<float, T>{src, y, t}, l.stream);
        break;
      }
      next = l.scratch(n * sizeof(float));
      float* dst = static_cast<float*>(next->ptr());
      first ? launch(n, ResizeBody<T, float>{x, dst, t}, l.stream)
            : launch(n, ResizeBody<float, float>{src, dst, t}, l.stream);
      prev = std::move(next);
      src = dst;
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[0], accum[0]);
    if (passes_.empty()) {
      copy(l, dy, dx, in[0]->size(), accum[0]);
      return;
    }
    std::unique_ptr<Memory> prev, next;
    const float* g = nullptr;
    for (size_t k = passes_.size(); k-- > 0;) {
      const ResizeAxisTables t = tables(k);
      const int64_t n = t.outer * t.in * t.inner;
      const bool first = k + 1 == passes_.size(), last = k == 0;
      if (last) {
        first
            ? launch(n, ResizeGradBody<T, T>{dy, dx, t, accum[0]}, l.stream)
            : launch(n, ResizeGradBody<float, T>{g, dx, t, accum[0]}, l.stream);
        break;
      }
      next = l.scratch(n * sizeof(float));
      float* dst = static_cast<float*>(next->ptr());
      first
          ? launch(n, ResizeGradBody<T, float>{dy, dst, t, false}, l.stream)
          : launch(n, ResizeGradBody<float, float>{g, dst, t, false}, l.stream);
      prev = std::move(next);
      g = dst;
    }
  }

 private:
  // The identity (no axis resized): y = x, dx = dy (+ dx with accum).
  void copy(const Launch& l, const T* src, T* dst, int64_t n, bool accum) {
    launch(n, GatherBody<T>{src, dst, contiguous_view(n), accum}, l.stream);
  }

  ResizeAxisTables tables(size_t k) const {
    const Pass& p = passes_[k];
    const auto* ints =
        static_cast<const int64_t*>(ints_->get(Dtype::i64, device()));
    const auto* floats =
        static_cast<const float*>(floats_->get(Dtype::f32, device()));
    ResizeAxisTables t = p.sizes;
    t.i0 = ints + p.i0;
    t.i1 = ints + p.i1;
    t.ptr = ints + p.ptr;
    t.pair_j = ints + p.pair_j;
    t.w = floats + p.w;
    t.pair_w = floats + p.pair_w;
    return t;
  }

  std::vector<Pass> passes_;
  std::unique_ptr<SyncedArray> ints_, floats_;
};

}  // namespace

void register_interpolate(FunctionRegistry& r) {
  register_float_types<InterpolateCuda>(r, decl::Interpolate, "cuda");
}

}  // namespace mg::cuda
