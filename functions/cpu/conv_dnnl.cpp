#include <mixgraph/functions/cpu/conv_dnnl.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <mixgraph/contexts/cpu/dnnl_utils.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;

enum class ConvOp { forward, backward_data, backward_weights };

struct PlanKey {
  ConvGeometry geom;
  ConvOp op;
  Dtype type;  // of the two inputs; the output is always fp32
  bool bias;
  bool operator<(const PlanKey& o) const {
    return std::tie(geom, op, type, bias) <
           std::tie(o.geom, o.op, o.type, o.bias);
  }
};

// A cached primitive with the descriptors of its two inputs (a, b), its
// output and its bias; native is false when oneDNN has no optimized kernel
// for the type here.
struct Plan {
  bool native = false;
  dnnl::primitive prim;
  dnnl::memory::desc a_md, b_md, out_md, bias_md;
};

// Row-major ("nchw", "oihw", "goihw") descriptors: the arrays are used in
// place, with no reorders.
dnnl::memory::desc plain(const dims& d, dt type) {
  dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * d[i + 1];
  }
  return dnnl::memory::desc(d, type, strides);
}

dims data_dims(const ConvGeometry& g, int64_t channels,
               const std::vector<int64_t>& spatial) {
  dims d{g.batch, channels};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

dims weight_dims(const ConvGeometry& g) {
  dims d;
  if (g.group > 1) d.push_back(g.group);
  d.push_back(g.out_channels / g.group);
  d.push_back(g.in_channels / g.group);
  d.insert(d.end(), g.kernel.begin(), g.kernel.end());
  return d;
}

Plan make_plan(const PlanKey& key) {
  const ConvGeometry& g = key.geom;
  const dt in_type = dnnl_type(key.type);
  auto src = [&](dt t) {
    return plain(data_dims(g, g.in_channels, g.in_spatial), t);
  };
  auto dst = [&](dt t) {
    return plain(data_dims(g, g.out_channels, g.out_spatial), t);
  };
  auto wei = [&](dt t) { return plain(weight_dims(g), t); };
  const dims strides(g.stride.begin(), g.stride.end());
  const dims pad(g.pad.begin(), g.pad.end());
  dims dilates;  // oneDNN counts the gaps: 0 is a dense kernel
  for (int64_t d : g.dilation) dilates.push_back(d - 1);
  using fwd = dnnl::convolution_forward;
  const auto algo = dnnl::algorithm::convolution_direct;
  const auto prop = dnnl::prop_kind::forward_training;
  auto& eng = dnnl_engine();
  // The backward primitives need a forward one as a hint.
  auto hint = [&] {
    return fwd::primitive_desc(
        fwd::desc(prop, algo, src(in_type), wei(in_type), dst(in_type), strides,
                  dilates, pad, pad),
        eng);
  };
  Plan plan;
  try {
    std::string impl;
    if (key.op == ConvOp::forward) {
      plan.a_md = src(in_type);
      plan.b_md = wei(in_type);
      plan.out_md = dst(dt::f32);
      plan.bias_md = plain({g.out_channels}, dt::f32);
      const auto d =
          key.bias ? fwd::desc(prop, algo, plan.a_md, plan.b_md, plan.bias_md,
                               plan.out_md, strides, dilates, pad, pad)
                   : fwd::desc(prop, algo, plan.a_md, plan.b_md, plan.out_md,
                               strides, dilates, pad, pad);
      fwd::primitive_desc pd(d, eng);
      impl = pd.impl_info_str();
      plan.prim = fwd(pd);
    } else if (key.op == ConvOp::backward_data) {
      using bwd = dnnl::convolution_backward_data;
      plan.a_md = dst(in_type);
      plan.b_md = wei(in_type);
      plan.out_md = src(dt::f32);
      bwd::primitive_desc pd(bwd::desc(algo, plan.out_md, plan.b_md, plan.a_md,
                                       strides, dilates, pad, pad),
                             eng, hint());
      impl = pd.impl_info_str();
      plan.prim = bwd(pd);
    } else {
      using bwd = dnnl::convolution_backward_weights;
      plan.a_md = src(in_type);
      plan.b_md = dst(in_type);
      plan.out_md = wei(dt::f32);
      bwd::primitive_desc pd(bwd::desc(algo, plan.a_md, plan.out_md, plan.b_md,
                                       strides, dilates, pad, pad),
                             eng, hint());
      impl = pd.impl_info_str();
      plan.prim = bwd(pd);
    }
    // A reference kernel in a 16-bit type is far slower than converting to
    // fp32 and running the optimized fp32 kernel.
    plan.native = key.type == Dtype::f32 || impl.rfind("ref", 0) != 0;
  } catch (const dnnl::error& e) {
    if (key.type == Dtype::f32) {
      throw std::runtime_error(std::string("[convolution] oneDNN: ") +
                               e.what());
    }
  }
  return plan;
}

const Plan& plan_for(const PlanKey& key) {
  static std::mutex mutex;
  static std::map<PlanKey, Plan> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_plan(key)).first;
  return it->second;
}

void run(ConvOp op, const Plan& plan, const void* a, const void* b,
         const float* bias, float* out) {
  int a_arg = DNNL_ARG_SRC, b_arg = DNNL_ARG_WEIGHTS, out_arg = DNNL_ARG_DST;
  if (op == ConvOp::backward_data) {
    a_arg = DNNL_ARG_DIFF_DST, out_arg = DNNL_ARG_DIFF_SRC;
  } else if (op == ConvOp::backward_weights) {
    b_arg = DNNL_ARG_DIFF_DST, out_arg = DNNL_ARG_DIFF_WEIGHTS;
  }
  auto& eng = dnnl_engine();
  std::unordered_map<int, dnnl::memory> args{
      {a_arg, dnnl::memory(plan.a_md, eng, const_cast<void*>(a))},
      {b_arg, dnnl::memory(plan.b_md, eng, const_cast<void*>(b))},
      {out_arg, dnnl::memory(plan.out_md, eng, out)}};
  if (bias) {
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(plan.bias_md, eng, const_cast<float*>(bias)));
  }
  dnnl_call("convolution", [&] {
    plan.prim.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  });
}

// Converts n elements of T into an fp32 scratch block from the allocator.
template <class T>
std::unique_ptr<Memory> to_float(const T* src, int64_t n) {
  auto mem = CpuAllocator::instance().allocate(n * sizeof(float));
  convert(src, dtype_of<T>, mem->ptr(), Dtype::f32, n);
  return mem;
}

// out[n, c, s] += b[c] for out laid out (batch, channels, spatial).
void add_channel_bias(float* out, const float* b, int64_t batch,
                      int64_t channels, int64_t spatial) {
#pragma omp parallel for schedule(static) if (batch * channels * spatial >= \
                                              kParallelMin)
  for (int64_t nc = 0; nc < batch * channels; ++nc) {
    const float v = b[nc % channels];
    float* row = out + nc * spatial;
    for (int64_t s = 0; s < spatial; ++s) row[s] += v;
  }
}

// Runs `op` on inputs a and b (of T) into out (of T): the primitive writes
// fp32, straight into out for float without accum, else into a scratch
// buffer that is then stored (added with accum) in T. post_bias, when
// given, is added per output channel before the store.
template <class T>
void execute(ConvOp op, const ConvGeometry& g, const T* a, const T* b,
             const float* bias, T* out, bool accum, const float* post_bias) {
  int64_t na = g.x_size(), nb = g.w_size(), nout = g.y_size();
  int64_t out_channels = g.out_channels;
  std::vector<int64_t> out_spatial = g.out_spatial;
  if (op == ConvOp::backward_data) {
    na = g.y_size(), nout = g.x_size();
    out_channels = g.in_channels, out_spatial = g.in_spatial;
  } else if (op == ConvOp::backward_weights) {
    nb = g.y_size(), nout = g.w_size();
  }
  if (nout == 0) return;
  float* dst = nullptr;
  std::unique_ptr<Memory> scratch;
  if constexpr (std::is_same_v<T, float>) {
    if (!accum) dst = out;
  }
  if (!dst) {
    scratch = CpuAllocator::instance().allocate(nout * sizeof(float));
    dst = static_cast<float*>(scratch->ptr());
  }
  if (na == 0 || nb == 0) {  // an empty sum: only padding, or batch 0
    std::fill(dst, dst + nout, 0.0f);
    if (bias) {
      add_channel_bias(dst, bias, g.batch, out_channels,
                       shape_size(out_spatial));
    }
  } else {
    PlanKey key{g, op, dtype_of<T>, bias != nullptr};
    const Plan* plan = &plan_for(key);
    std::unique_ptr<Memory> af, bf;
    const void *ap = a, *bp = b;
    if (!plan->native) {
      key.type = Dtype::f32;
      plan = &plan_for(key);
      af = to_float(a, na), bf = to_float(b, nb);
      ap = af->ptr(), bp = bf->ptr();
    }
    run(op, *plan, ap, bp, bias, dst);
  }
  if (post_bias) {
    add_channel_bias(dst, post_bias, g.batch, out_channels,
                     shape_size(out_spatial));
  }
  if (static_cast<void*>(dst) != static_cast<void*>(out)) {
    store(dst, out, nout, accum);
  }
}

}  // namespace

template <class T>
void conv_forward(const ConvGeometry& g, const T* x, const T* w, const float* b,
                  T* y, bool accum) {
  execute(ConvOp::forward, g, x, w, b, y, accum, nullptr);
}

template <class T>
void conv_backward_data(const ConvGeometry& g, const T* dy, const T* w, T* dx,
                        bool accum, const float* b) {
  execute(ConvOp::backward_data, g, dy, w, nullptr, dx, accum, b);
}

template <class T>
void conv_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                           T* dw, bool accum) {
  execute(ConvOp::backward_weights, g, x, dy, nullptr, dw, accum, nullptr);
}

template <class T>
void channel_sums(const T* a, int64_t batch, int64_t channels, int64_t spatial,
                  float* sums) {
#pragma omp parallel for schedule(static) if (batch * channels * spatial >= \
                                              kParallelMin)
  for (int64_t c = 0; c < channels; ++c) {
    float buf[kBlock];
    float s = 0.0f;
    for (int64_t n = 0; n < batch; ++n) {
      const T* row = a + (n * channels + c) * spatial;
      for (int64_t i = 0; i < spatial; i += kBlock) {
        const int64_t len = std::min(kBlock, spatial - i);
        const float* f = load(row + i, buf, len);
        for (int64_t j = 0; j < len; ++j) s += f[j];
      }
    }
    sums[c] = s;
  }
}

#define MG_INSTANTIATE_CONV(T)                                                 \
  template void conv_forward<T>(const ConvGeometry&, const T*, const T*,       \
                                const float*, T*, bool);                       \
  template void conv_backward_data<T>(const ConvGeometry&, const T*, const T*, \
                                      T*, bool, const float*);                 \
  template void conv_backward_weights<T>(const ConvGeometry&, const T*,        \
                                         const T*, T*, bool);                  \
  template void channel_sums<T>(const T*, int64_t, int64_t, int64_t, float*);
MG_INSTANTIATE_CONV(float)
MG_INSTANTIATE_CONV(Half)
MG_INSTANTIATE_CONV(BFloat16)
#undef MG_INSTANTIATE_CONV

}  // namespace mg::cpu
