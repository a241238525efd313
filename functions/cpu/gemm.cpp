#include <mixgraph/functions/cpu/gemm.hpp>

#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <mixgraph/contexts/cpu/dnnl_utils.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

namespace {

struct GemmKey {
  int64_t m, n, k;
  bool ta, tb, bias, accum;
  Dtype type;
  bool operator<(const GemmKey& o) const {
    return std::tie(m, n, k, ta, tb, bias, accum, type) <
           std::tie(o.m, o.n, o.k, o.ta, o.tb, o.bias, o.accum, o.type);
  }
};

// A cached primitive, or none when oneDNN has no kernel for the type here.
struct GemmPlan {
  bool native = false;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

using dims = dnnl::memory::dims;

GemmPlan make_plan(const GemmKey& key) {
  const auto dt = dnnl_type(key.type);
  const dnnl::memory::desc a_md({key.m, key.k}, dt,
                                key.ta ? dims{1, key.m} : dims{key.k, 1});
  const dnnl::memory::desc b_md({key.k, key.n}, dt,
                                key.tb ? dims{1, key.k} : dims{key.n, 1});
  const dnnl::memory::desc c_md({key.m, key.n}, dt, dims{key.n, 1});
  dnnl::primitive_attr attr;
  if (key.accum) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  GemmPlan plan;
  try {
    if (key.bias) {
      const dnnl::memory::desc bias_md({1, key.n},
                                       dnnl::memory::data_type::f32,
                                       dims{key.n, 1});
      plan.pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr, dnnl_engine());
    } else {
      plan.pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(a_md, b_md, c_md), attr, dnnl_engine());
    }
    plan.prim = dnnl::matmul(plan.pd);
    plan.native = true;
  } catch (const dnnl::error& e) {
    if (key.type == Dtype::f32) {
      throw std::runtime_error(std::string("[gemm] oneDNN: ") + e.what());
    }
  }
  return plan;
}

const GemmPlan& plan_for(const GemmKey& key) {
  static std::mutex mutex;
  static std::map<GemmKey, GemmPlan> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_plan(key)).first;
  return it->second;
}

void run(const GemmPlan& plan, const void* a, const void* b, void* c,
         const float* bias) {
  auto& eng = dnnl_engine();
  const auto& pd = plan.pd;
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(pd.src_desc(), eng, const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS,
       dnnl::memory(pd.weights_desc(), eng, const_cast<void*>(b))},
      {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng, c)}};
  if (bias) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(pd.bias_desc(), eng,
                                             const_cast<float*>(bias)));
  }
  dnnl_call("gemm", [&] {
    plan.prim.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  });
}

// Converts n elements of T into a float scratch block from the allocator.
template <class T>
std::unique_ptr<Memory> to_float(const T* src, int64_t n) {
  auto mem = CpuAllocator::instance().allocate(n * sizeof(float));
  convert(src, dtype_of<T>, mem->ptr(), Dtype::f32, n);
  return mem;
}

}  // namespace

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, const float* bias, bool accum) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: C = bias (or C + bias)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float base = accum ? static_cast<float>(c[i * n + j]) : 0.0f;
        c[i * n + j] = T(base + (bias ? bias[j] : 0.0f));
      }
    }
    return;
  }
  GemmKey key{m, n, k, ta, tb, bias != nullptr, accum, dtype_of<T>};
  const GemmPlan& plan = plan_for(key);
  if (plan.native) {
    run(plan, a, b, c, bias);
    return;
  }
  // fp32 fallback: convert the operands, multiply, convert the result.
  key.type = Dtype::f32;
  const GemmPlan& fplan = plan_for(key);
  auto af = to_float(a, m * k);
  auto bf = to_float(b, k * n);
  auto cf = accum ? to_float(c, m * n)
                  : CpuAllocator::instance().allocate(m * n * sizeof(float));
  run(fplan, af->ptr(), bf->ptr(), cf->ptr(), bias);
  convert(cf->ptr(), Dtype::f32, c, dtype_of<T>, m * n);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*,
                          const float*, float*, const float*, bool);
template void gemm<Half>(bool, bool, int64_t, int64_t, int64_t, const Half*,
                         const Half*, Half*, const float*, bool);
template void gemm<BFloat16>(bool, bool, int64_t, int64_t, int64_t,
                             const BFloat16*, const BFloat16*, BFloat16*,
                             const float*, bool);

}  // namespace mg::cpu
