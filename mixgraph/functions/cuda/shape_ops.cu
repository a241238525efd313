// Reshape, Transpose and Concatenate on the device: the strided gather and
// scatter of cuda/index_kernels.hpp (the CPU stand-in for exact data: see
// cuda/layout_cuda.hpp).
#include <mixgraph/functions/shape_ops.hpp>

#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>
#include <mixgraph/functions/cuda/layout_cuda.hpp>

namespace mg::cuda {

namespace {

// y[i] = x[forward_view.offset(i)]; dx[i] = dy[backward_view.offset(i)].
template <class T, class Base, class Options>
class ViewCuda : public LayoutCuda<T, Base, Options> {
 public:
  using LayoutCuda<T, Base, Options>::LayoutCuda;

 protected:
  void forward_on_device(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    launch(out[0]->size(),
           GatherBody<T>{input<T>(*this, in[0]), output<T>(*this, out[0]),
                         forward_view(in[0]->shape()), false},
           l.stream);
  }

  void backward_on_device(const Variables& in, const Variables& out,
                          const std::vector<bool>& propagate_down,
                          const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    launch(in[0]->size(),
           GatherBody<T>{output_grad<T>(*this, out[0]),
                         input_grad<T>(*this, in[0], accum[0]),
                         backward_view(in[0]->shape()), accum[0]},
           l.stream);
  }

  virtual StridedIndex forward_view(const Shape& x) const = 0;
  virtual StridedIndex backward_view(const Shape& x) const = 0;
};

template <class T>
class ReshapeCuda : public ViewCuda<T, Reshape, ReshapeOptions> {
 public:
  using ViewCuda<T, Reshape, ReshapeOptions>::ViewCuda;

 protected:
  StridedIndex forward_view(const Shape& x) const override {
    return contiguous_view(shape_size(x));
  }
  StridedIndex backward_view(const Shape& x) const override {
    return contiguous_view(shape_size(x));
  }
};

template <class T>
class TransposeCuda : public ViewCuda<T, Transpose, TransposeOptions> {
 public:
  using ViewCuda<T, Transpose, TransposeOptions>::ViewCuda;

 protected:
  StridedIndex forward_view(const Shape& x) const override {
    return transpose_view(x, this->perm_);
  }
  StridedIndex backward_view(const Shape& x) const override {
    return transpose_grad_view(x, this->perm_);
  }
};

// Input k is `outer` rows of chunk(k) elements, written at offset(k) into
// y's rows of `row`; its grad reads them back.
template <class T>
class ConcatenateCuda : public LayoutCuda<T, Concatenate, ConcatenateOptions> {
 public:
  using LayoutCuda<T, Concatenate, ConcatenateOptions>::LayoutCuda;

 protected:
  void forward_on_device(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    T* y = output<T>(*this, out[0]);
    for_each_input(
        in, out,
        [&](size_t k, int64_t offset, int64_t chunk, const StridedIndex& view) {
          launch(this->outer_ * chunk,
                 ScatterBody<T>{input<T>(*this, in[k]), y + offset, view},
                 l.stream);
        });
  }

  // In order: the same variable given twice is overwritten, then added to.
  void backward_on_device(const Variables& in, const Variables& out,
                          const std::vector<bool>& propagate_down,
                          const std::vector<bool>& accum) override {
    const Launch l(*this);
    const T* dy = output_grad<T>(*this, out[0]);
    for_each_input(
        in, out,
        [&](size_t k, int64_t offset, int64_t chunk, const StridedIndex& view) {
          if (!propagate_down[k]) return;
          launch(
              this->outer_ * chunk,
              GatherBody<T>{dy + offset, input_grad<T>(*this, in[k], accum[k]),
                            view, accum[k]},
              l.stream);
        });
  }

 private:
  template <class Fn>
  void for_each_input(const Variables& in, const Variables& out,
                      Fn&& fn) const {
    const int64_t outer = std::max<int64_t>(this->outer_, 1);
    const int64_t row = out[0]->size() / outer;
    int64_t offset = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t chunk = this->outer_ ? in[k]->size() / this->outer_ : 0;
      fn(k, offset, chunk, rows_view(this->outer_, chunk, row));
      offset += chunk;
    }
  }
};

}  // namespace

void register_shape_ops(FunctionRegistry& r) {
  register_float_types<ReshapeCuda>(r, decl::Reshape, "cuda");
  register_float_types<TransposeCuda>(r, decl::Transpose, "cuda");
  register_float_types<ConcatenateCuda>(r, decl::Concatenate, "cuda");
}

}  // namespace mg::cuda
