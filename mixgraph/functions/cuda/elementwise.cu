// Elementwise functions on CUDA: the loop drivers (unary; binary with
// broadcasting; the elementwise losses) over the same functors as the CPU
// (functions/ops/), in fp32 whatever the storage type. A broadcast input's
// grad is summed over its broadcast axes by the reduction driver.
#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/loss_ops.hpp>
#include <mixgraph/functions/ops/op_list.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>

namespace mg::cuda {

namespace {

template <class T>
__device__ float ld(const T* p, int64_t i) {
  return p ? static_cast<float>(p[i]) : 0.0f;
}

// dst[i] = g, or dst[i] + g with accum, rounded once to T.
template <class T>
__device__ void put(T* dst, int64_t i, float g, bool accum) {
  dst[i] = T(accum ? static_cast<float>(dst[i]) + g : g);
}

// ---- unary ----

template <class T, class Op>
__global__ void unary_forward(Op op, const T* x, T* y, int64_t n) {
  MG_GRID_STRIDE(i, n) { y[i] = T(op(static_cast<float>(x[i]))); }
}

template <class T, class Op>
__global__ void unary_backward(Op op, const T* x, const T* y, const T* dy,
                               T* dx, int64_t n, bool accum) {
  MG_GRID_STRIDE(i, n) {
    put(dx, i, op.grad(ld(x, i), ld(y, i), static_cast<float>(dy[i])), accum);
  }
}

template <class T, class Op>
class UnaryCuda : public UnaryFunction<Op> {
 public:
  using UnaryFunction<Op>::UnaryFunction;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const int64_t n = in[0]->size();
    const T* x = input<T>(*this, in[0]);
    T* y = output<T>(*this, out[0]);
    if (n == 0) return;
    unary_forward<T, Op>
        <<<blocks_for(n), kThreads, 0, l.stream>>>(this->op_, x, y, n);
    MG_CUDA_CHECK_LAUNCH();
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const int64_t n = in[0]->size();
    const T* x = Op::grad_uses_x ? input<T>(*this, in[0]) : nullptr;
    const T* y = Op::grad_uses_y ? input<T>(*this, out[0]) : nullptr;
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[0], accum[0]);
    if (n == 0) return;
    unary_backward<T, Op><<<blocks_for(n), kThreads, 0, l.stream>>>(
        this->op_, x, y, dy, dx, n, accum[0]);
    MG_CUDA_CHECK_LAUNCH();
  }
};

// ---- binary, with broadcasting ----

constexpr int kMaxDims = 8;

// Output index -> the two input offsets, over the broadcast plan's axes with
// size-1 axes dropped and neighbours merged where both inputs allow.
struct Broadcast {
  int nd = 0;
  int64_t shape[kMaxDims];
  int64_t stride0[kMaxDims], stride1[kMaxDims];
  __device__ void offsets(int64_t i, int64_t& o0, int64_t& o1) const {
    o0 = o1 = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = i / shape[d];
      const int64_t idx = i - q * shape[d];
      o0 += idx * stride0[d];
      o1 += idx * stride1[d];
      i = q;
    }
  }
};

Broadcast make_broadcast(const BroadcastPlan& p) {
  std::vector<int64_t> shape, s0, s1;
  for (size_t d = 0; d < p.out_shape.size(); ++d) {
    if (p.out_shape[d] == 1) continue;
    const int64_t n = p.out_shape[d];
    // Axis d continues the previous one when, for both inputs, stepping
    // the previous axis by one steps this one n times.
    if (!shape.empty() && s0.back() == p.stride0[d] * n &&
        s1.back() == p.stride1[d] * n) {
      shape.back() *= n;
      s0.back() = p.stride0[d];
      s1.back() = p.stride1[d];
      continue;
    }
    shape.push_back(n);
    s0.push_back(p.stride0[d]);
    s1.push_back(p.stride1[d]);
  }
  if (shape.size() > static_cast<size_t>(kMaxDims)) {
    throw std::runtime_error(msg("[cuda elementwise] broadcasting over ",
                                 shape_str(p.out_shape), " needs more than ",
                                 kMaxDims, " axes"));
  }
  Broadcast b;
  b.nd = static_cast<int>(shape.size());
  for (int d = 0; d < b.nd; ++d) {
    b.shape[d] = shape[d];
    b.stride0[d] = s0[d];
    b.stride1[d] = s1[d];
  }
  return b;
}

template <class T, class Op>
__global__ void binary_forward(Op op, const T* a, const T* b, T* y,
                               Broadcast bc, int64_t n) {
  MG_GRID_STRIDE(i, n) {
    int64_t o0, o1;
    bc.offsets(i, o0, o1);
    y[i] = T(op(static_cast<float>(a[o0]), static_cast<float>(b[o1])));
  }
}

// The grad of input K at every output element: into dx directly (same
// shape as the output) or into the fp32 buffer `per_output` for summing.
template <class T, class Op, int K>
__global__ void binary_backward(Op op, const T* a, const T* b, const T* y,
                                const T* dy, Broadcast bc, int64_t n, T* dx,
                                float* per_output, bool accum) {
  MG_GRID_STRIDE(i, n) {
    int64_t o0, o1;
    bc.offsets(i, o0, o1);
    const float av = ld(a, o0), bv = ld(b, o1), yv = ld(y, i);
    const float d = static_cast<float>(dy[i]);
    const float g = K == 0 ? op.grad0(av, bv, yv, d) : op.grad1(av, bv, yv, d);
    if (per_output) {
      per_output[i] = g;
    } else {
      put(dx, i, g, accum);
    }
  }
}

template <class T, class Op>
class BinaryCuda : public BinaryFunction<Op> {
 public:
  using BinaryFunction<Op>::BinaryFunction;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const int64_t n = out[0]->size();
    const T* a = input<T>(*this, in[0]);
    const T* b = input<T>(*this, in[1]);
    T* y = output<T>(*this, out[0]);
    if (n == 0) return;
    binary_forward<T, Op><<<blocks_for(n), kThreads, 0, l.stream>>>(
        this->op_, a, b, y, make_broadcast(this->plan_), n);
    MG_CUDA_CHECK_LAUNCH();
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int k = 0; k < 2; ++k) {
      if (propagate_down[k]) backward_input(k, in, out, accum[k]);
    }
  }

 private:
  void backward_input(int k, const Variables& in, const Variables& out,
                      bool accum) {
    const Launch l(*this);
    const int64_t n = out[0]->size();
    const T* a = Op::grad_uses_x ? input<T>(*this, in[0]) : nullptr;
    const T* b = Op::grad_uses_x ? input<T>(*this, in[1]) : nullptr;
    const T* y = Op::grad_uses_y ? input<T>(*this, out[0]) : nullptr;
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[k], accum);
    const int64_t nk = in[k]->size();
    if (nk == 0) return;
    const BroadcastPlan& p = this->plan_;
    const bool same_shape = nk == n;
    std::unique_ptr<Memory> per_output;
    float* po = nullptr;
    if (!same_shape) {
      per_output = l.scratch(std::max<int64_t>(n, 1) * sizeof(float));
      po = static_cast<float*>(per_output->ptr());
    }
    if (n > 0) {
      auto kernel =
          k == 0 ? binary_backward<T, Op, 0> : binary_backward<T, Op, 1>;
      kernel<<<blocks_for(n), kThreads, 0, l.stream>>>(
          this->op_, a, b, y, dy, make_broadcast(p), n, dx, po, accum);
      MG_CUDA_CHECK_LAUNCH();
    }
    if (same_shape) return;
    // Sum the per-output grads over the axes where input k is broadcast.
    const auto& stride = k == 0 ? p.stride0 : p.stride1;
    std::vector<int> axes;
    for (int d = 0; d < static_cast<int>(p.out_shape.size()); ++d) {
      if (stride[d] == 0 && p.out_shape[d] != 1) axes.push_back(d);
    }
    auto sums = l.scratch(nk * sizeof(float));
    float* s = static_cast<float*>(sums->ptr());
    if (n == 0) {
      MG_CUDA_CHECK(cudaMemsetAsync(s, 0, nk * sizeof(float), l.stream));
    } else {
      reduce_sum_f32(l.index, po, p.out_shape, axes, s, l.stream);
    }
    store_f32<T>(s, dx, nk, accum, l.stream);
  }
};

// ---- SigmoidCrossEntropy: x and targets t of one shape ----

template <class T>
__global__ void sce_forward(const T* x, const T* t, T* y, int64_t n) {
  const ops::SigmoidCrossEntropyOp op;
  MG_GRID_STRIDE(i, n) {
    y[i] = T(op(static_cast<float>(x[i]), static_cast<float>(t[i])));
  }
}

template <class T>
__global__ void sce_backward(const T* x, const T* t, const T* dy, T* dx,
                             int64_t n, bool accum) {
  const ops::SigmoidCrossEntropyOp op;
  MG_GRID_STRIDE(i, n) {
    put(dx, i,
        op.grad(static_cast<float>(x[i]), static_cast<float>(t[i]),
                static_cast<float>(dy[i])),
        accum);
  }
}

template <class T>
class SigmoidCrossEntropyCuda : public SigmoidCrossEntropy {
 public:
  using SigmoidCrossEntropy::SigmoidCrossEntropy;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    const int64_t n = in[0]->size();
    const T* x = input<T>(*this, in[0]);
    const T* t = input<T>(*this, in[1]);
    T* y = output<T>(*this, out[0]);
    if (n == 0) return;
    sce_forward<T><<<blocks_for(n), kThreads, 0, l.stream>>>(x, t, y, n);
    MG_CUDA_CHECK_LAUNCH();
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
    const Launch l(*this);
    const int64_t n = in[0]->size();
    const T* x = input<T>(*this, in[0]);
    const T* t = input<T>(*this, in[1]);
    const T* dy = output_grad<T>(*this, out[0]);
    T* dx = input_grad<T>(*this, in[0], accum[0]);
    if (n == 0) return;
    sce_backward<T>
        <<<blocks_for(n), kThreads, 0, l.stream>>>(x, t, dy, dx, n, accum[0]);
    MG_CUDA_CHECK_LAUNCH();
  }
};

template <class Op>
void register_unary(FunctionRegistry& r) {
  register_one<UnaryCuda<float, Op>>(r, decl::unary<Op>, {"cuda", Dtype::f32});
  register_one<UnaryCuda<Half, Op>>(r, decl::unary<Op>, {"cuda", Dtype::f16});
  register_one<UnaryCuda<BFloat16, Op>>(r, decl::unary<Op>,
                                        {"cuda", Dtype::bf16});
}

template <class Op>
void register_binary(FunctionRegistry& r) {
  register_one<BinaryCuda<float, Op>>(r, decl::binary<Op>,
                                      {"cuda", Dtype::f32});
  register_one<BinaryCuda<Half, Op>>(r, decl::binary<Op>, {"cuda", Dtype::f16});
  register_one<BinaryCuda<BFloat16, Op>>(r, decl::binary<Op>,
                                         {"cuda", Dtype::bf16});
}

}  // namespace

void register_elementwise(FunctionRegistry& r) {
  ops::for_each_unary_op(
      [&](auto tag) { register_unary<typename decltype(tag)::type>(r); });
  ops::for_each_binary_op(
      [&](auto tag) { register_binary<typename decltype(tag)::type>(r); });
  register_float_types<SigmoidCrossEntropyCuda>(r, decl::SigmoidCrossEntropy,
                                                "cuda");
}

}  // namespace mg::cuda
