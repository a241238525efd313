// Sum, Mean, Max and GlobalAveragePooling on CUDA, through one reduction
// driver: x seen through its merged axes (reduced runs and kept runs), one
// block per output (or several, with a second pass over their partials when
// there are few outputs), fp32 accumulators, a fixed summation tree so the
// result does not depend on timing.
#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>
#include <mixgraph/functions/pooling.hpp>
#include <mixgraph/functions/reduction.hpp>

namespace mg::cuda {

namespace {

constexpr int kMaxDims = 8;

// Row-major index decomposition over up to kMaxDims axes with strides.
struct Indexer {
  int nd = 0;
  int64_t shape[kMaxDims];
  int64_t stride[kMaxDims];
  __device__ int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = i / shape[d];
      off += (i - q * shape[d]) * stride[d];
      i = q;
    }
    return off;
  }
};

// x of `shape` reduced over `axes`: the kept axes index the outputs, the
// reduced axes the elements of one output. Size-1 axes are dropped and
// neighbours of the same kind merged.
struct ReduceGeom {
  Indexer kept, reduced;
  int64_t outputs = 1, count = 1;
};

// `shape` without its size-1 axes, neighbours of the same kind (reduced
// or kept) merged: each merged axis's size and whether it is reduced.
struct MergedAxes {
  std::vector<int64_t> dims;
  std::vector<bool> red;
};

MergedAxes merge_axes(const Shape& shape, const std::vector<int>& axes) {
  MergedAxes m;
  for (int a = 0; a < static_cast<int>(shape.size()); ++a) {
    if (shape[a] == 1) continue;
    const bool r = std::binary_search(axes.begin(), axes.end(), a);
    if (!m.dims.empty() && m.red.back() == r) {
      m.dims.back() *= shape[a];
    } else {
      m.dims.push_back(shape[a]);
      m.red.push_back(r);
    }
  }
  return m;
}

ReduceGeom reduce_geom(const Shape& shape, const std::vector<int>& axes) {
  const auto [dims, red] = merge_axes(shape, axes);
  ReduceGeom g;
  int64_t stride = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    Indexer& ix = red[i] ? g.reduced : g.kept;
    if (ix.nd == kMaxDims) {
      throw std::runtime_error(msg(
          "[cuda reduce] shape ", shape_str(shape),
          " alternates reduced and kept axes more than ", kMaxDims, " times"));
    }
    // Filled from the last axis; shifted into place below.
    ix.shape[kMaxDims - 1 - ix.nd] = dims[i];
    ix.stride[kMaxDims - 1 - ix.nd] = stride;
    ++ix.nd;
    (red[i] ? g.count : g.outputs) *= dims[i];
    stride *= dims[i];
  }
  for (Indexer* ix : {&g.kept, &g.reduced}) {
    for (int d = 0; d < ix->nd; ++d) {
      ix->shape[d] = ix->shape[kMaxDims - ix->nd + d];
      ix->stride[d] = ix->stride[kMaxDims - ix->nd + d];
    }
  }
  return g;  // a 0-sized axis makes outputs or count 0: nothing is read
}

// The accumulators: Sum adds; Max keeps the first maximum (the lowest flat
// index among equal values; a nan wins), as the CPU's, in a merge that does
// not depend on the order.
struct SumOp {
  using Acc = float;
  __device__ static Acc init() { return 0.0f; }
  __device__ static Acc make(float v, int64_t) { return v; }
  __device__ static void merge(Acc& a, const Acc& b) { a += b; }
};

struct MaxOp {
  struct Acc {
    float value;
    int64_t index;
  };
  __device__ static Acc init() { return {-INFINITY, -1}; }
  __device__ static Acc make(float v, int64_t i) { return {v, i}; }
  __device__ static void merge(Acc& a, const Acc& b) {
    if (b.index < 0) return;
    if (a.index < 0) {
      a = b;
      return;
    }
    const bool an = isnan(a.value), bn = isnan(b.value);
    bool take;
    if (an != bn) {
      take = bn;
    } else if (an || a.value == b.value) {
      take = b.index < a.index;
    } else {
      take = b.value > a.value;
    }
    if (take) a = b;
  }
};

template <class R, class T>
struct LoadX {
  const T* x;
  ReduceGeom g;
  __device__ typename R::Acc operator()(int64_t o, int64_t r) const {
    const int64_t off = g.kept.offset(o) + g.reduced.offset(r);
    return R::make(static_cast<float>(x[off]), off);
  }
};

template <class R>
struct LoadPartial {
  const typename R::Acc* p;
  int64_t parts;
  __device__ typename R::Acc operator()(int64_t o, int64_t r) const {
    return p[o * parts + r];
  }
};

// Job j reduces part j % splits of output j / splits into out[j].
template <class R, class Load>
__global__ void reduce_kernel(Load load, int64_t outputs, int64_t count,
                              int64_t splits, typename R::Acc* out) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* sh = reinterpret_cast<typename R::Acc*>(smem);
  const int64_t chunk = (count + splits - 1) / splits;
  for (int64_t job = blockIdx.x; job < outputs * splits; job += gridDim.x) {
    const int64_t o = job / splits;
    const int64_t begin = (job - o * splits) * chunk;
    const int64_t end = begin + chunk < count ? begin + chunk : count;
    typename R::Acc acc = R::init();
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) {
      R::merge(acc, load(o, r));
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) R::merge(sh[threadIdx.x], sh[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[job] = sh[0];
    __syncthreads();
  }
}

template <class R, class Load>
void launch_reduce(Load load, int64_t outputs, int64_t count, int64_t splits,
                   typename R::Acc* out, cudaStream_t stream) {
  int threads = 32;
  while (threads < 256 && threads < (count + splits - 1) / splits) threads *= 2;
  const int64_t jobs = outputs * splits;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(jobs, 65535 * 8));
  reduce_kernel<R>
      <<<grid, threads, threads * sizeof(typename R::Acc), stream>>>(
          load, outputs, count, splits, out);
  MG_CUDA_CHECK_LAUNCH();
}

// out[o] = the reduction of output o. With few outputs over many elements
// each output is cut into parts reduced by separate blocks, then the parts.
template <class R, class T>
void reduce(int index, const T* x, const ReduceGeom& g, typename R::Acc* out,
            cudaStream_t stream) {
  if (g.outputs == 0) return;
  int64_t splits = 1;
  if (g.outputs < 1024 && g.count >= 16384) {
    splits = std::min<int64_t>((g.count + 8191) / 8192,
                               std::max<int64_t>(1, 2048 / g.outputs));
  }
  if (splits == 1) {
    launch_reduce<R>(LoadX<R, T>{x, g}, g.outputs, g.count, 1, out, stream);
    return;
  }
  auto parts = CudaDevice::get(index).allocate(g.outputs * splits *
                                               sizeof(typename R::Acc));
  auto* p = static_cast<typename R::Acc*>(parts->ptr());
  launch_reduce<R>(LoadX<R, T>{x, g}, g.outputs, g.count, splits, p, stream);
  launch_reduce<R>(LoadPartial<R>{p, splits}, g.outputs, splits, 1, out,
                   stream);
}

template <class T>
__global__ void finish_sum_kernel(const float* acc, T* y, int64_t n,
                                  float divisor) {
  MG_GRID_STRIDE(i, n) { y[i] = T(acc[i] / divisor); }
}

template <class T>
__global__ void finish_max_kernel(const MaxOp::Acc* acc, T* y, int64_t* argmax,
                                  int64_t n) {
  MG_GRID_STRIDE(i, n) {
    y[i] = T(acc[i].value);
    argmax[i] = acc[i].index;
  }
}

// dx[i] = dy[the output of i] * mul / div (+ dx with accum): x's merged axes
// with y's strides, 0 on the reduced ones.
template <class T>
__global__ void broadcast_back_kernel(const T* dy, Indexer to_y, T* dx,
                                      int64_t n, float mul, float div,
                                      bool accum) {
  MG_GRID_STRIDE(i, n) {
    const float g = static_cast<float>(dy[to_y.offset(i)]) * mul / div;
    dx[i] = T(accum ? static_cast<float>(dx[i]) + g : g);
  }
}

template <class T>
__global__ void scatter_add_kernel(const T* dy, const int64_t* argmax, T* dx,
                                   int64_t n) {
  MG_GRID_STRIDE(o, n) {
    const int64_t i = argmax[o];
    if (i >= 0)
      dx[i] = T(static_cast<float>(dx[i]) + static_cast<float>(dy[o]));
  }
}

// x's merged axes (of `shape`, reducing `axes`) indexing y.
Indexer to_reduced(const Shape& shape, const std::vector<int>& axes) {
  const auto [dims, red] = merge_axes(shape, axes);
  if (dims.size() > static_cast<size_t>(kMaxDims)) {
    throw std::runtime_error(msg("[cuda reduce] shape ", shape_str(shape),
                                 " has too many alternating axes"));
  }
  Indexer ix;
  ix.nd = static_cast<int>(dims.size());
  int64_t ystride = 1;
  for (int i = ix.nd - 1; i >= 0; --i) {
    ix.shape[i] = dims[i];
    ix.stride[i] = red[i] ? 0 : ystride;
    if (!red[i]) ystride *= dims[i];
  }
  return ix;
}

template <class T>
void broadcast_back(const T* dy, const Shape& shape,
                    const std::vector<int>& axes, float mul, float div, T* dx,
                    bool accum, cudaStream_t stream) {
  const int64_t n = shape_size(shape);
  if (n == 0) return;
  broadcast_back_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
      dy, to_reduced(shape, axes), dx, n, mul, div, accum);
  MG_CUDA_CHECK_LAUNCH();
}

// Sum (Mean = false) and Mean.
template <class T, class Base, bool Mean>
class SumMeanCuda : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const ReduceGeom g = reduce_geom(in[0]->shape(), this->axes_);
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    const int64_t n = out[0]->size();
    if (n == 0) return;
    auto acc = l.scratch(n * sizeof(float));
    float* a = static_cast<float*>(acc->ptr());
    reduce<SumOp>(l.index, x, g, a, l.stream);  // count 0 gives zeros
    // Divide rather than multiply by 1/count, as the CPU does.
    const float divisor = Mean ? static_cast<float>(this->count_) : 1.0f;
    finish_sum_kernel<T>
        <<<blocks_for(n), kThreads, 0, l.stream>>>(a, y, n, divisor);
    MG_CUDA_CHECK_LAUNCH();
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const float mul = Mean ? 1.0f / static_cast<float>(this->count_) : 1.0f;
    broadcast_back(output_grad<T>(*this, out[0]), in[0]->shape(), this->axes_,
                   mul, 1.0f, input_grad<T>(*this, in[0], accum[0]), accum[0],
                   l.stream);
  }
};

template <class T>
using SumCuda = SumMeanCuda<T, Sum, false>;
template <class T>
using MeanCuda = SumMeanCuda<T, Mean, true>;

template <class T>
class MaxCuda : public Max {
 public:
  using Max::Max;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const ReduceGeom g = reduce_geom(in[0]->shape(), axes_);
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    const int64_t n = out[0]->size();
    argmax_dev_ = l.scratch(std::max<int64_t>(n, 1) * sizeof(int64_t));
    if (n == 0) return;
    auto acc = l.scratch(n * sizeof(MaxOp::Acc));
    auto* a = static_cast<MaxOp::Acc*>(acc->ptr());
    reduce<MaxOp>(l.index, x, g, a, l.stream);
    finish_max_kernel<T><<<blocks_for(n), kThreads, 0, l.stream>>>(
        a, y, static_cast<int64_t*>(argmax_dev_->ptr()), n);
    MG_CUDA_CHECK_LAUNCH();
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const int64_t n = out[0]->size();
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[0], accum[0]);
    if (!accum[0]) {
      MG_CUDA_CHECK(
          cudaMemsetAsync(dx, 0, in[0]->size() * sizeof(T), l.stream));
    }
    if (n == 0) return;
    // Each input element is the max of at most one output: no races.
    scatter_add_kernel<T><<<blocks_for(n), kThreads, 0, l.stream>>>(
        dy, static_cast<const int64_t*>(argmax_dev_->ptr()), dx, n);
    MG_CUDA_CHECK_LAUNCH();
  }

 private:
  std::unique_ptr<Memory> argmax_dev_;  // flat index into x, per output
};

// The mean over every axis after the second: x as (rows, size).
template <class T>
class GlobalAveragePoolingCuda : public GlobalAveragePooling {
 public:
  using GlobalAveragePooling::GlobalAveragePooling;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    if (rows_ == 0) return;
    auto acc = l.scratch(rows_ * sizeof(float));
    float* a = static_cast<float*>(acc->ptr());
    reduce<SumOp>(l.index, x, reduce_geom({rows_, size_}, {1}), a, l.stream);
    finish_sum_kernel<T><<<blocks_for(rows_), kThreads, 0, l.stream>>>(
        a, y, rows_, static_cast<float>(size_));
    MG_CUDA_CHECK_LAUNCH();
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    broadcast_back(output_grad<T>(*this, out[0]), Shape{rows_, size_}, {1},
                   1.0f, static_cast<float>(size_),
                   input_grad<T>(*this, in[0], accum[0]), accum[0], l.stream);
  }
};

}  // namespace

void reduce_sum_f32(int index, const float* x, const Shape& shape,
                    const std::vector<int>& axes, float* y,
                    cudaStream_t stream) {
  const ReduceGeom g = reduce_geom(shape, axes);
  reduce<SumOp>(index, x, g, y, stream);
}

void register_reduction(FunctionRegistry& r) {
  register_float_types<SumCuda>(r, decl::Sum, "cuda");
  register_float_types<MeanCuda>(r, decl::Mean, "cuda");
  register_float_types<MaxCuda>(r, decl::Max, "cuda");
  register_float_types<GlobalAveragePoolingCuda>(r, decl::GlobalAveragePooling,
                                                 "cuda");
}

}  // namespace mg::cuda
