// Convolution through cuDNN (legacy API: descriptors and
// cudnnConvolutionForward / BackwardData / BackwardFilter), 1 to 3 spatial
// axes, groups and dilation; fp32 compute for every storage type, tensor
// cores for fp16 and bf16, FMA only for float (no TF32). Algorithms come
// from cuDNN's heuristics (deterministic ones first) and are kept in a plan
// cache keyed by the geometry. More spatial axes (and empty arrays) run on
// the CPU.
#include <mixgraph/functions/convolution.hpp>

#include <algorithm>
#include <tuple>
#include <vector>

#include <mixgraph/contexts/cuda/cudnn_utils.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/kernels.hpp>

namespace mg::cuda {

namespace {

struct ConvKey {
  int device;
  Dtype dtype;
  ConvGeometry geom;
  bool operator<(const ConvKey& o) const {
    if (device != o.device || dtype != o.dtype) {
      return std::tie(device, dtype) < std::tie(o.device, o.dtype);
    }
    return geom < o.geom;
  }
};

// One convolution descriptor per direction: each carries the math type of
// the algorithm chosen for it.
struct ConvPlan {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc fwd_conv, data_conv, filter_conv;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t data{};
  cudnnConvolutionBwdFilterAlgo_t filter{};
  size_t fwd_ws = 0, data_ws = 0, filter_ws = 0;
};

std::vector<int> ints(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

// 1-D convolutions run as 2-D ones over a trailing axis of size 1.
ConvGeometry as_2d(ConvGeometry g) {
  if (g.in_spatial.size() == 1) {
    g.in_spatial.push_back(1);
    g.out_spatial.push_back(1);
    g.kernel.push_back(1);
    g.pad.push_back(0);
    g.stride.push_back(1);
    g.dilation.push_back(1);
  }
  return g;
}

void set_conv(cudnnConvolutionDescriptor_t c, const ConvGeometry& g,
              cudnnMathType_t math) {
  MG_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(
      c, static_cast<int>(g.kernel.size()), ints(g.pad).data(),
      ints(g.stride).data(), ints(g.dilation).data(), CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  MG_CUDNN_CHECK(cudnnSetConvolutionGroupCount(c, static_cast<int>(g.group)));
  MG_CUDNN_CHECK(cudnnSetConvolutionMathType(c, math));
}

// The first usable algorithm cuDNN's heuristics list, a deterministic one
// if there is one; float never takes a tensor-op (TF32) algorithm.
template <class Perf>
const Perf& pick(const std::vector<Perf>& perf, int n, Dtype dtype,
                 const char* what) {
  const Perf* first = nullptr;
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (dtype == Dtype::f32 && p.mathType != CUDNN_DEFAULT_MATH &&
        p.mathType != CUDNN_FMA_MATH) {
      continue;
    }
    if (p.determinism == CUDNN_DETERMINISTIC) return p;
    if (!first) first = &p;
  }
  if (!first) {
    throw std::runtime_error(msg("[convolution] cuDNN has no ", what,
                                 " algorithm for this geometry and dtype ",
                                 dtype_name(dtype)));
  }
  return *first;
}

// The math type a direction runs with: the chosen algorithm's for fp16 and
// bf16, always FMA for float. The heuristics report CUDNN_DEFAULT_MATH for
// float algorithms, and DEFAULT_MATH lets cuDNN 8+ run them on TF32 tensor
// cores on sm_80 and later (10-bit mantissas, errors near 1e-3).
cudnnMathType_t math_for(Dtype dtype, cudnnMathType_t chosen) {
  return dtype == Dtype::f32 ? CUDNN_FMA_MATH : chosen;
}

std::shared_ptr<ConvPlan> make_plan(int index, Dtype dtype,
                                    const ConvGeometry& geom) {
  DeviceGuard guard(index);
  const ConvGeometry g = as_2d(geom);
  auto p = std::make_shared<ConvPlan>();
  std::vector<int64_t> xd{g.batch, g.in_channels}, yd{g.batch, g.out_channels},
      wd{g.out_channels, g.in_channels / g.group};
  xd.insert(xd.end(), g.in_spatial.begin(), g.in_spatial.end());
  yd.insert(yd.end(), g.out_spatial.begin(), g.out_spatial.end());
  wd.insert(wd.end(), g.kernel.begin(), g.kernel.end());
  set_tensor(p->x, dtype, xd);
  set_tensor(p->y, dtype, yd);
  MG_CUDNN_CHECK(cudnnSetFilterNdDescriptor(
      p->w, cudnn_data_type(dtype), CUDNN_TENSOR_NCHW,
      static_cast<int>(wd.size()), ints(wd).data()));
  const cudnnMathType_t math =
      dtype == Dtype::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  set_conv(p->fwd_conv, g, math);
  // cuDNN's output shape must be ours (it is, for the NNabla rule).
  std::vector<int> got(yd.size());
  MG_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(
      p->fwd_conv, p->x, p->w, static_cast<int>(got.size()), got.data()));
  if (std::vector<int64_t>(got.begin(), got.end()) != yd) {
    throw std::runtime_error(
        "[convolution] cuDNN's output shape differs from "
        "the function's");
  }
  cudnnHandle_t h = cudnn_handle(index);
  int max = 0, n = 0;
  MG_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(max);
  MG_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      h, p->x, p->w, p->fwd_conv, p->y, max, &n, fwd.data()));
  const auto& f = pick(fwd, n, dtype, "forward");
  p->fwd = f.algo;
  MG_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p->fwd_conv, math_for(dtype, f.mathType)));
  // The workspace for the math type now set (not only the heuristics').
  size_t ws = 0;
  MG_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
      h, p->x, p->w, p->fwd_conv, p->y, p->fwd, &ws));
  p->fwd_ws = std::max(f.memory, ws);

  set_conv(p->data_conv, g, math);
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> bd(max);
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      h, p->w, p->y, p->data_conv, p->x, max, &n, bd.data()));
  const auto& d = pick(bd, n, dtype, "backward data");
  p->data = d.algo;
  MG_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p->data_conv, math_for(dtype, d.mathType)));
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
      h, p->w, p->y, p->data_conv, p->x, p->data, &ws));
  p->data_ws = std::max(d.memory, ws);

  set_conv(p->filter_conv, g, math);
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> bf(max);
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      h, p->x, p->y, p->filter_conv, p->w, max, &n, bf.data()));
  const auto& w = pick(bf, n, dtype, "backward filter");
  p->filter = w.algo;
  MG_CUDNN_CHECK(
      cudnnSetConvolutionMathType(p->filter_conv, math_for(dtype, w.mathType)));
  MG_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      h, p->x, p->y, p->filter_conv, p->w, p->filter, &ws));
  p->filter_ws = std::max(w.memory, ws);
  return p;
}

PlanCache<ConvKey, ConvPlan>& plans() {
  static auto* cache = new PlanCache<ConvKey, ConvPlan>();
  return *cache;
}

// Convolution, and DepthwiseConvolution (a Convolution with group = C,
// whose weight (C * multiplier, kernel...) is the grouped weight's layout).
template <class T, class Base, class Options>
class ConvolutionCudnnOf : public Base {
 public:
  using Base::Base;

 protected:
  using Base::geom_;

  void setup_impl(const Variables& in, const Variables& out) override {
    Base::setup_impl(in, out);
    stand_in_.reset();
    if (geom_.in_spatial.empty() || geom_.in_spatial.size() > 3 ||
        geom_.x_size() == 0 || geom_.y_size() == 0) {
      stand_in_ = cpu_stand_in(this->decl(), dtype_of<T>, typeid(Options),
                               &this->options());
      stand_in_->setup(in, out);
      return;
    }
    const int index = checked_device(*this);
    plan_ = plans().get({index, dtype_of<T>, geom_},
                        [&] { return make_plan(index, dtype_of<T>, geom_); });
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    if (stand_in_) return stand_in_->forward(in, out);
    const Launch l(*this);
    const ConvPlan& p = *plan_;
    const T* x = input<T>(*this, in[0]);
    const T* w = input<T>(*this, in[1]);
    T* y = output<T>(*this, out[0]);
    auto ws = l.scratch(p.fwd_ws);
    const float one = 1.0f, zero = 0.0f;
    MG_CUDNN_CHECK(cudnnConvolutionForward(cudnn_handle(l.index), &one, p.x, x,
                                           p.w, w, p.fwd_conv, p.fwd, ws->ptr(),
                                           p.fwd_ws, &zero, p.y, y));
    if (in.size() == 3) {
      add_channel_bias<T, T>(y, input<float>(*this, in[2]), y, geom_.batch,
                             geom_.out_channels, shape_size(geom_.out_spatial),
                             l.stream);
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (stand_in_) return stand_in_->backward(in, out, propagate_down, accum);
    const Launch l(*this);
    const ConvPlan& p = *plan_;
    cudnnHandle_t h = cudnn_handle(l.index);
    const T* dy = output_grad<T>(*this, out[0]);
    const float one = 1.0f;
    if (propagate_down[0]) {
      const float beta = accum[0] ? 1.0f : 0.0f;
      auto ws = l.scratch(p.data_ws);
      MG_CUDNN_CHECK(cudnnConvolutionBackwardData(
          h, &one, p.w, input<T>(*this, in[1]), p.y, dy, p.data_conv, p.data,
          ws->ptr(), p.data_ws, &beta, p.x,
          input_grad<T>(*this, in[0], accum[0])));
    }
    if (propagate_down[1] && grad_in_float<T>(*this, in[1])) {
      filter_grad_f32(l, in, out, dy, accum[1]);
    } else if (propagate_down[1]) {
      const float beta = accum[1] ? 1.0f : 0.0f;
      auto ws = l.scratch(p.filter_ws);
      MG_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          h, &one, p.x, input<T>(*this, in[0]), p.y, dy, p.filter_conv,
          p.filter, ws->ptr(), p.filter_ws, &beta, p.w,
          input_grad<T>(*this, in[1], accum[1])));
    }
    if (in.size() == 3 && propagate_down[2]) {  // db = sum over N and space
      const int64_t oc = geom_.out_channels;
      auto sums = l.scratch(oc * sizeof(float));
      float* s = static_cast<float*>(sums->ptr());
      channel_sums<T>(dy, nullptr, nullptr, geom_.batch, oc,
                      shape_size(geom_.out_spatial), s, nullptr, l.stream);
      store_param_grad<T>(*this, s, in[2], accum[2], l.stream);
    }
  }

 private:
  // The fp32 grad of an fp32 master weight under half or bfloat16. cuDNN's
  // backward filter writes dW in the type of x and dy, which would round
  // it to T and overflow past 65504 under a loss scale, where the CPU
  // (and cuBLAS for Affine) sums and stores it in fp32. So x and dy are
  // widened (exactly) into fp32 scratch and the fp32 plan of the same
  // geometry writes dW in fp32: the same sums as the CPU's, at the cost of
  // an fp32 (non tensor-core) backward filter.
  void filter_grad_f32(const Launch& l, const Variables& in,
                       const Variables& out, const T* dy, bool accum) {
    const std::shared_ptr<ConvPlan> plan32 =
        plans().get({l.index, Dtype::f32, geom_},
                    [&] { return make_plan(l.index, Dtype::f32, geom_); });
    const int64_t nx = in[0]->size(), ny = out[0]->size();
    auto x32 = l.scratch(nx * sizeof(float));
    auto dy32 = l.scratch(ny * sizeof(float));
    convert_on_device(input<T>(*this, in[0]), dtype_of<T>, x32->ptr(),
                      Dtype::f32, nx, l.stream);
    convert_on_device(dy, dtype_of<T>, dy32->ptr(), Dtype::f32, ny, l.stream);
    auto ws = l.scratch(plan32->filter_ws);
    const float one = 1.0f, beta = accum ? 1.0f : 0.0f;
    MG_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnn_handle(l.index), &one, plan32->x, x32->ptr(), plan32->y,
        dy32->ptr(), plan32->filter_conv, plan32->filter, ws->ptr(),
        plan32->filter_ws, &beta, plan32->w,
        input_grad<float>(*this, in[1], accum)));
  }

  std::shared_ptr<ConvPlan> plan_;
  std::shared_ptr<Function> stand_in_;
};

template <class T>
using ConvolutionCudnn = ConvolutionCudnnOf<T, Convolution, ConvolutionOptions>;
template <class T>
using DepthwiseConvolutionCudnn =
    ConvolutionCudnnOf<T, DepthwiseConvolution, DepthwiseConvolutionOptions>;

}  // namespace

void register_convolution(FunctionRegistry& r) {
  register_float_types<ConvolutionCudnn>(r, decl::Convolution, "cudnn");
  register_float_types<DepthwiseConvolutionCudnn>(r, decl::DepthwiseConvolution,
                                                  "cudnn");
}

}  // namespace mg::cuda
