// RNN, LSTM and GRU on the device: the driver of
// functions/ops/recurrent_driver.hpp, the one the CPU runs, over cuBLAS
// products (fp32 compute) and the cells of functions/ops/recurrent_cells.hpp
// one thread per element. The storage type is converted to fp32 on the
// device once per call; only the outputs and the grads are rounded, once.
// tests/functions/test_cuda_kernel_bodies.cpp runs this driver with the very
// same bodies on the CPU (RecurrentDriverWithDeviceBodies), so only the
// launches and cuBLAS are left for the GPU.
#include <mixgraph/functions/recurrent.hpp>

#include <type_traits>

#include <mixgraph/contexts/cuda/cublas_utils.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>
#include <mixgraph/functions/ops/recurrent_driver.hpp>

namespace mg::cuda {

namespace {

/// n floats of device scratch, back in the cache when it goes.
class DeviceFloats {
 public:
  DeviceFloats() = default;
  DeviceFloats(const Launch& l, int64_t n) : n_(n) {
    if (n > 0) memory_ = l.scratch(n * sizeof(float));
  }
  float* data() {
    return memory_ ? static_cast<float*>(memory_->ptr()) : nullptr;
  }
  const float* data() const {
    return memory_ ? static_cast<const float*>(memory_->ptr()) : nullptr;
  }
  int64_t size() const { return n_; }

 private:
  std::unique_ptr<Memory> memory_;
  int64_t n_ = 0;
};

struct DeviceOperand {
  const void* data;
  Dtype dtype;
};

/// The driver's backend on one device, on its stream.
class RecurrentBackend : public recurrent::StepsInTheDriver {
 public:
  using Buffer = DeviceFloats;
  using Operand = DeviceOperand;
  /// fp32 operands as they are (cuBLAS computes in fp32).
  struct Operands {
    Operand of(const float* p, int64_t) const { return {p, Dtype::f32}; }
  };

  explicit RecurrentBackend(const Launch& l) : l_(l) {}

  Buffer buffer(int64_t n) { return Buffer(l_, n); }
  Buffer zeros(int64_t n) {
    Buffer b(l_, n);
    if (n > 0) {
      MG_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, n * sizeof(float), l_.stream));
    }
    return b;
  }
  static Operand advanced(Operand o, int64_t n) {
    return {static_cast<const char*>(o.data) + n * dtype_size(o.dtype),
            o.dtype};
  }
  void copy(const float* src, float* dst, int64_t n) {
    if (n <= 0) return;
    MG_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, l_.stream));
  }
  void add(const float* src, float* dst, int64_t n) {
    launch(n, AddToBody{src, dst}, l_.stream);
  }
  void copy_rows(const float* src, int64_t src_stride, float* dst,
                 int64_t dst_stride, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    MG_CUDA_CHECK(cudaMemcpy2DAsync(
        dst, dst_stride * sizeof(float), src, src_stride * sizeof(float),
        cols * sizeof(float), rows, cudaMemcpyDeviceToDevice, l_.stream));
  }
  /// With a bias, c's rows start from it and the product adds to them.
  void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
            Operand b, float* c, const float* bias, bool accum) {
    if (bias) launch(m * n, BiasRowsBody{bias, c, n, accum}, l_.stream);
    cuda::gemm(l_.index, ta, tb, m, n, k, 1.0f, a.data, a.dtype, b.data,
               b.dtype, bias || accum ? 1.0f : 0.0f, c, Dtype::f32);
  }
  /// The products of one B: one cuBLAS call each.
  recurrent::PlainStepProduct<RecurrentBackend> step_product(
      bool tb, int64_t m, int64_t n, int64_t k, Operand b, bool, bool accum) {
    return {this, tb, m, n, k, b, accum};
  }
  void column_sums(const float* a, int64_t rows, int64_t cols, float* sums) {
    channel_sums<float>(a, nullptr, nullptr, rows, cols, 1, sums, nullptr,
                        l_.stream);
  }
  template <class Cell>
  void forward_cells(const Cell& cell, const recurrent::StepForward& s,
                     int64_t B, int64_t H) {
    launch(B * H, recurrent::CellForwardBody<Cell>{cell, s, H}, l_.stream);
  }
  template <class Cell>
  void backward_cells(const Cell& cell, const recurrent::StepBack& s, int64_t B,
                      int64_t H) {
    launch(B * H, recurrent::CellBackwardBody<Cell>{cell, s, H}, l_.stream);
  }

 private:
  const Launch& l_;
};

template <class T, class Base, class Cell>
class RecurrentCuda
    : public recurrent::RecurrentWith<Base, Cell, RecurrentBackend> {
  using With = recurrent::RecurrentWith<Base, Cell, RecurrentBackend>;

 public:
  using With::With;

 protected:
  using Params = typename With::Params;

  /// v's data as fp32 on the device: an fp32 master (or fp32 data) as it
  /// is, anything else read in T and converted (as the CPU's floats_of).
  DeviceFloats floats_of(const Launch& l, Variable* v) const {
    DeviceFloats out(l, v->size());
    if (out.size() == 0) return out;
    if (std::is_same_v<T, float> || grad_in_float<T>(*this, v)) {
      MG_CUDA_CHECK(cudaMemcpyAsync(out.data(), input<float>(*this, v),
                                    out.size() * sizeof(float),
                                    cudaMemcpyDeviceToDevice, l.stream));
    } else {
      convert_on_device(input<T>(*this, v), dtype_of<T>, out.data(), Dtype::f32,
                        out.size(), l.stream);
    }
    return out;
  }
  DeviceFloats grad_floats_of(const Launch& l, Variable* v) const {
    DeviceFloats out(l, v->size());
    if (out.size() > 0) {
      convert_on_device(output_grad<T>(*this, v), dtype_of<T>, out.data(),
                        Dtype::f32, out.size(), l.stream);
    }
    return out;
  }
  /// Rounds n fp32 values on the device into dst (adding with accum).
  static void store(const Launch& l, const DeviceFloats& src, T* dst, int64_t n,
                    bool accum) {
    store_f32<T>(src.data(), dst, n, accum, l.stream);
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    RecurrentBackend be(l);
    auto& driver = this->new_driver();
    auto floats = [&](Variable* v) { return floats_of(l, v); };
    const auto p = this->template inputs<DeviceFloats>(in, floats);
    const auto y = driver.forward(be, floats(in[0]), p.template view<Params>());
    store(l, y.y, output<T>(*this, out[0]), out[0]->size(), false);
    store(l, y.hn, output<T>(*this, out[1]), out[1]->size(), false);
    if (this->layout_.cell) {
      store(l, y.cn, output<T>(*this, out[2]), out[2]->size(), false);
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const Launch l(*this);
    RecurrentBackend be(l);
    const bool has_c = this->layout_.cell;
    const DeviceFloats dhn = grad_floats_of(l, out[1]);
    const DeviceFloats dcn = has_c ? grad_floats_of(l, out[2]) : DeviceFloats{};
    const auto g = this->forward_driver().backward(
        be, grad_floats_of(l, out[0]), dhn.data(), dcn.data());
    this->store_grads(
        g, propagate_down,
        [&](int i, const DeviceFloats& grad) {
          store(l, grad, input_grad<T>(*this, in[i], accum[i]), in[i]->size(),
                accum[i]);
        },
        [&](int i, const DeviceFloats& grad) {
          store_param_grad<T>(*this, grad.data(), in[i], accum[i], l.stream);
        });
  }
};

template <class T>
using RNNCuda = RecurrentCuda<T, RNN, recurrent::RnnCell>;
template <class T>
using LSTMCuda = RecurrentCuda<T, LSTM, recurrent::LstmCell>;
template <class T>
using GRUCuda = RecurrentCuda<T, GRU, recurrent::GruCell>;

}  // namespace

void register_recurrent(FunctionRegistry& r) {
  register_float_types<RNNCuda>(r, decl::RNN, "cuda");
  register_float_types<LSTMCuda>(r, decl::LSTM, "cuda");
  register_float_types<GRUCuda>(r, decl::GRU, "cuda");
}

}  // namespace mg::cuda
