// Solvers on CUDA (solvers/device_ops.hpp): the update rules of
// solvers/*.hpp as kernels (the same MG_HD functors apply_rule runs on the
// host), and the fused multi-tensor pass of the loss scaler: unscale into
// fp32, inf/nan check and sum of squares over every grad, one launch per
// grad dtype and one host read. Registered as "cuda" at load time.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/contexts/transfers.hpp>
#include <mixgraph/solvers/adabound.hpp>
#include <mixgraph/solvers/adagrad.hpp>
#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/adam_variants.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/lamb.hpp>
#include <mixgraph/solvers/lars.hpp>
#include <mixgraph/solvers/lion.hpp>
#include <mixgraph/solvers/nesterov.hpp>
#include <mixgraph/solvers/rmsprop.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/solvers/sgdw.hpp>
#include <mixgraph/solvers/weight_decay_rule.hpp>

namespace mg::cuda {

namespace {

// ---- update rules ----

template <int NS>
struct States {
  float* s[NS > 0 ? NS : 1];
};

template <class Rule, int NS>
__global__ void rule_kernel(Rule rule, int64_t n, float* w, const float* g,
                            float gs, States<NS> st) {
  MG_GRID_STRIDE(i, n) {
    if constexpr (NS == 0) {
      rule(w[i], g[i] * gs);
    } else if constexpr (NS == 1) {
      rule(w[i], g[i] * gs, st.s[0][i]);
    } else if constexpr (NS == 2) {
      rule(w[i], g[i] * gs, st.s[0][i], st.s[1][i]);
    } else {
      rule(w[i], g[i] * gs, st.s[0][i], st.s[1][i], st.s[2][i]);
    }
  }
}

using Launcher = void (*)(cudaStream_t, const void*, int64_t, float*,
                          const float*, float, float* const*);

template <class Rule, int NS>
void launch_rule(cudaStream_t stream, const void* rule, int64_t n, float* w,
                 const float* g, float gs, float* const* s) {
  States<NS> st{};
  for (int k = 0; k < NS; ++k) st.s[k] = s[k];
  rule_kernel<Rule, NS><<<blocks_for(n), kThreads, 0, stream>>>(
      *static_cast<const Rule*>(rule), n, w, g, gs, st);
  MG_CUDA_CHECK_LAUNCH();
}

// One launcher per entry of MG_UPDATE_RULES, at the entry's slot: every rule
// a solver can apply has its kernel (apply_rule checks the list at compile
// time).
constexpr Launcher kLaunchers[] = {
#define MG_RULE_LAUNCHER(R, N) &launch_rule<R, N>,
    MG_UPDATE_RULES(MG_RULE_LAUNCHER)
#undef MG_RULE_LAUNCHER
};
static_assert(sizeof(kLaunchers) / sizeof(kLaunchers[0]) ==
                  mg::detail::kNumRuleSlots,
              "one launcher per rule slot");

// ---- the fused unscale / check / norm pass ----

constexpr int kPerBlock = kThreads * 16;  // elements per block

// One grad of the pass: blocks [first_block, first_block + its blocks).
struct Tensor {
  const void* in;
  float* out;
  int64_t n;
  int64_t first_block;
};

struct Result {
  double norm2[3];  // one per dtype launch
  int bad;
  unsigned done;  // blocks finished in the current launch
};

template <class T>
__global__ void scale_check_kernel(const Tensor* tensors, int count,
                                   float scale, double* partials,
                                   Result* result, int slot) {
  __shared__ double sums[kThreads];
  __shared__ int bads[kThreads];
  __shared__ bool last;
  // The block's tensor: the last whose first block is not after this one.
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tensors[mid].first_block <= static_cast<int64_t>(blockIdx.x)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const Tensor t = tensors[lo];
  const int64_t begin =
      (static_cast<int64_t>(blockIdx.x) - t.first_block) * kPerBlock;
  const int64_t end = begin + kPerBlock < t.n ? begin + kPerBlock : t.n;
  const T* in = static_cast<const T*>(t.in);
  double sum = 0.0;
  int bad = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = static_cast<float>(in[i]) * scale;
    if (t.out) t.out[i] = v;
    bad |= !isfinite(v);
    sum += static_cast<double>(v) * v;
  }
  sums[threadIdx.x] = sum;
  bads[threadIdx.x] = bad;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      sums[threadIdx.x] += sums[threadIdx.x + s];
      bads[threadIdx.x] |= bads[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sums[0];
    if (bads[0]) atomicOr(&result->bad, 1);
    __threadfence();
    last = atomicAdd(&result->done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // The last block adds the partials in a fixed order: deterministic.
  __threadfence();
  double total = 0.0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    total += static_cast<volatile double*>(partials)[b];
  }
  sums[threadIdx.x] = total;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    result->norm2[slot] = sums[0];
    result->done = 0;  // ready for the next launch
  }
}

class CudaSolverOps final : public SolverDeviceOps {
 public:
  void apply_rule(int index, int rule_slot, const void* rule, int64_t n,
                  float* w, const float* g, float grad_scale,
                  float* const* states) override {
    if (rule_slot < 0 || rule_slot >= mg::detail::kNumRuleSlots) {
      throw std::out_of_range(msg("[cuda solver] update rule slot ", rule_slot,
                                  " is outside MG_UPDATE_RULES (",
                                  mg::detail::kNumRuleSlots, " rules)"));
    }
    if (n == 0) return;
    DeviceGuard guard(index);
    kLaunchers[rule_slot](stream(index), rule, n, w, g, grad_scale, states);
  }

  bool scale_check(int index, const std::vector<FusedGrad>& grads, float scale,
                   double* norm2) override {
    DeviceGuard guard(index);
    CudaDevice& dev = CudaDevice::get(index);
    cudaStream_t s = dev.stream();
    // The tables of the three dtype launches, one after the other.
    const Dtype order[3] = {Dtype::f32, Dtype::f16, Dtype::bf16};
    std::vector<Tensor> tables;
    int64_t first[4] = {0, 0, 0, 0}, blocks[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      first[k] = static_cast<int64_t>(tables.size());
      for (const FusedGrad& fg : grads) {
        if (fg.dtype != order[k] || fg.n == 0) continue;
        tables.push_back({fg.in, fg.out, fg.n, blocks[k]});
        blocks[k] += (fg.n + kPerBlock - 1) / kPerBlock;
      }
    }
    first[3] = static_cast<int64_t>(tables.size());
    for (const FusedGrad& fg : grads) {
      if (fg.dtype != Dtype::f32 && fg.dtype != Dtype::f16 &&
          fg.dtype != Dtype::bf16) {
        throw std::invalid_argument(
            msg("[Solver] a grad of dtype ", dtype_name(fg.dtype),
                " cannot be unscaled; grads are float, half or bfloat16"));
      }
    }
    auto result_mem = dev.allocate(sizeof(Result));
    auto* result = static_cast<Result*>(result_mem->ptr());
    MG_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(Result), s));
    std::unique_ptr<Memory> table_mem, partials_mem;
    if (!tables.empty()) {
      table_mem = dev.allocate(tables.size() * sizeof(Tensor));
      dev.copy_to_device(table_mem->ptr(), tables.data(),
                         tables.size() * sizeof(Tensor));
      partials_mem =
          dev.allocate(std::max({blocks[0], blocks[1], blocks[2], int64_t{1}}) *
                       sizeof(double));
    }
    const auto* dev_tables =
        table_mem ? static_cast<const Tensor*>(table_mem->ptr()) : nullptr;
    auto* partials =
        partials_mem ? static_cast<double*>(partials_mem->ptr()) : nullptr;
    for (int k = 0; k < 3; ++k) {
      const int count = static_cast<int>(first[k + 1] - first[k]);
      if (count == 0) continue;
      const Tensor* t = dev_tables + first[k];
      const unsigned grid = static_cast<unsigned>(blocks[k]);
      // The same partials buffer serves each launch in turn (stream order).
      switch (order[k]) {
        case Dtype::f32:
          scale_check_kernel<float>
              <<<grid, kThreads, 0, s>>>(t, count, scale, partials, result, k);
          break;
        case Dtype::f16:
          scale_check_kernel<Half>
              <<<grid, kThreads, 0, s>>>(t, count, scale, partials, result, k);
          break;
        default:
          scale_check_kernel<BFloat16>
              <<<grid, kThreads, 0, s>>>(t, count, scale, partials, result, k);
          break;
      }
      MG_CUDA_CHECK_LAUNCH();
    }
    Result host{};
    dev.copy_to_host(&host, result, sizeof(Result));  // the one host read
    count_transfer_to_host(sizeof(Result));
    if (norm2) *norm2 = host.norm2[0] + host.norm2[1] + host.norm2[2];
    return host.bad != 0;
  }
};

// Registers the ops at load time (no CUDA call happens here).
const bool registered = [] {
  static CudaSolverOps* ops = new CudaSolverOps();
  register_solver_device_ops("cuda", ops);
  return true;
}();

}  // namespace

}  // namespace mg::cuda
