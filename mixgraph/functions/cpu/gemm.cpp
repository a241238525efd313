#include <mixgraph/functions/cpu/gemm.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/dnnl_utils.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm_bf16.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
#include <mixgraph/graph/profile.hpp>

namespace mg::cpu {

// A cached primitive, or none when oneDNN has no kernel for the type here.
struct GemmPlan {
  bool native = false;
  CachedPrimitive prim;                  // its arguments: A, B, C [, bias]
  dnnl::memory::desc b_plain, b_kernel;  // B as stored, as the kernel reads it
};

namespace {

struct GemmKey {
  int64_t m, n, k;
  bool ta, tb, bias, accum;
  Dtype type;      // of A and B
  Dtype out_type;  // of C
  int64_t batch;
  bool blocked_b = false;  // B in the layout the kernel chooses (GemmFixedB)
  bool operator<(const GemmKey& o) const {
    return std::tie(m, n, k, ta, tb, bias, accum, type, out_type, batch,
                    blocked_b) < std::tie(o.m, o.n, o.k, o.ta, o.tb, o.bias,
                                          o.accum, o.type, o.out_type, o.batch,
                                          o.blocked_b);
  }
};

using dims = dnnl::memory::dims;

GemmPlan make_plan(const GemmKey& key) {
  const auto dt = dnnl_type(key.type);
  const int64_t m = key.m, n = key.n, k = key.k;
  // (batch, rows, columns), each matrix after the one before; a single
  // product is 2-D: for a 3-D B of format `any`, oneDNN 2.6 keeps B plain,
  // and its AVX-512 kernels then run a recurrent step's product (m 32, k
  // 512, n 2048, fp32) at 0.35 ms where the blocked B it picks for a 2-D
  // one takes 0.26 ms (Intel Xeon, AVX-512 and AMX, 2 threads).
  const bool single = key.batch == 1;
  // A (rows, cols) matrix of each product, `apart` elements from the last.
  const auto md = [&](int64_t rows, int64_t cols, dnnl::memory::data_type t,
                      int64_t apart, int64_t row_stride, int64_t col_stride) {
    return single ? dnnl::memory::desc({rows, cols}, t,
                                       dims{row_stride, col_stride})
                  : dnnl::memory::desc({key.batch, rows, cols}, t,
                                       dims{apart, row_stride, col_stride});
  };
  const dnnl::memory::desc a_md =
      key.ta ? md(m, k, dt, m * k, 1, m) : md(m, k, dt, m * k, k, 1);
  const dnnl::memory::desc b_plain =
      key.tb ? md(k, n, dt, k * n, 1, k) : md(k, n, dt, k * n, n, 1);
  const dnnl::memory::desc b_md =
      key.blocked_b
          ? dnnl::memory::desc(single ? dims{k, n} : dims{key.batch, k, n}, dt,
                               dnnl::memory::format_tag::any)
          : b_plain;
  const dnnl::memory::desc c_md =
      md(m, n, dnnl_type(key.out_type), m * n, n, 1);
  dnnl::primitive_attr attr;
  if (key.accum) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  GemmPlan plan;
  try {
    const dnnl::memory::desc bias_md =
        md(1, n, dnnl::memory::data_type::f32, n, n, 1);
    const dnnl::matmul::primitive_desc pd(
        key.bias ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                 : dnnl::matmul::desc(a_md, b_md, c_md),
        attr, dnnl_engine());
    std::vector<std::pair<int, dnnl::memory::desc>> args{
        {DNNL_ARG_SRC, pd.src_desc()},
        {DNNL_ARG_WEIGHTS, pd.weights_desc()},
        {DNNL_ARG_DST, pd.dst_desc()}};
    if (key.bias) args.emplace_back(DNNL_ARG_BIAS, pd.bias_desc());
    plan.prim = CachedPrimitive(dnnl::matmul(pd), args);
    plan.native = true;
    plan.b_plain = b_plain;
    plan.b_kernel = pd.weights_desc();
  } catch (const dnnl::error& e) {
    if (key.type == Dtype::f32 && key.out_type == Dtype::f32) {
      throw std::runtime_error(msg("[gemm] oneDNN: ", e.what()));
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
  if (bias) {
    plan.prim.execute("gemm", {a, b, c, bias});
  } else {
    plan.prim.execute("gemm", {a, b, c});
  }
}

// The operand as `type`: itself when it is, else converted into `scratch`.
const void* as_type(Operand x, Dtype type, int64_t n,
                    std::unique_ptr<Memory>& scratch) {
  if (x.dtype == type) return x.data;
  scratch = CpuAllocator::instance().allocate(n * dtype_size(type));
  convert(x.data, x.dtype, scratch->ptr(), type, static_cast<size_t>(n));
  return scratch->ptr();
}

// Whether oneDNN's fp32 products run its AVX2 sgemm (`gemm:jit`): no
// AVX-512 here, or ONEDNN_MAX_CPU_ISA holds it back (`--isa avx2`).
bool avx2_sgemm() {
  static const bool avx2 =
      dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core;
  return avx2;
}

}  // namespace

bool gemm_converts_operands() { return gemm_packed_available(); }

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
          Operand b, T* c, const float* bias, bool accum, int64_t batch,
          bool* c_finite) {
  const FunctionProfile::ProductScope timed;
  if (c_finite) *c_finite = false;
  if (m == 0 || n == 0 || batch == 0) return;
  if (batch > 1 && bias) {
    throw std::logic_error("[gemm] a batched product takes no bias");
  }
  if (k == 0) {  // an empty sum: C = bias (or C + bias)
    if (batch > 1) {
      store(std::vector<float>(batch * m * n, 0.0f).data(), c, batch * m * n,
            accum);
      return;
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float base = accum ? static_cast<float>(c[i * n + j]) : 0.0f;
        c[i * n + j] = T(base + (bias ? bias[j] : 0.0f));
      }
    }
    return;
  }
  // oneDNN computes in bf16 where it has bf16 kernels and C or both
  // operands are bf16 (writing C as T, fp32 included); else in fp32.
  const bool bf16 = compute_type<BFloat16>() == Dtype::bf16 &&
                    (std::is_same_v<T, BFloat16> ||
                     (a.dtype == Dtype::bf16 && b.dtype == Dtype::bf16));
  // Products with a 16-bit operand or C that oneDNN would compute in fp32
  // run our own (gemm_packed.hpp), which converts while it packs and rounds
  // C as it writes it; the path below converts each operand into scratch
  // and C back from it. On AVX2 (oneDNN's sgemm) an Affine's three products
  // in half take 0.83-1.01x the time they did (AMD EPYC Zen 3, 2 threads,
  // 1024 rows, GPT shapes); on AVX-512 (oneDNN's brgemm) the GPT's and the
  // LSTM's half products 0.61-0.99x (Intel Emerald Rapids, bench_gemm).
  // fp32 products run ours too where oneDNN's kernel is its AVX2 sgemm,
  // one product a call, with C of 256 rows and columns or more: held to
  // AVX2 on an Intel Xeon (bench_gemm, two runs, 2026-12-05) ours took
  // 0.78-1.03x its time on the GPT's, the LSTM's and ResNet-18's weight-grad
  // products (the GPT's step 0.87-0.94x, the LSTM's, ResNet-18's and the
  // U-Net's level within the noise, three or four alternations each), and
  // it needs none of the copies sgemm's slow cases took (a transposed A
  // with rows 1024 apart; a plain B with rows a multiple of 1 KB apart,
  // which it read in place onto the same L1 sets). Smaller products stay
  // oneDNN's, which reads them in place where ours would pack as much as
  // the operands hold (a batch of 8 through a 256-wide layer: the weight
  // again), and so do batched ones (attention's: ours took 1.10-1.17x).
  // With AVX-512 on an Intel CPU, only those of plain operands (the
  // forward's x W, the LSTM's data grad): on a 2-core Intel Xeon with AMX
  // (2026-12-07) ours took 0.86-0.98x oneDNN's brgemm time on each of the
  // GPT's and the LSTM's (bench_gemm, two runs) and the GPT's float step
  // 0.976-0.987x (four runs of 8-12 processes a side), where taking every
  // fp32 product of that size, the grads' transposed ones too, made it
  // 1.012x (1.014-1.021x in an earlier session). Unmeasured on AMD's
  // Zen 4: oneDNN's there.
  const bool fp32_ours = batch == 1 && m >= 256 && n >= 256 &&
                         (avx2_sgemm() || (!ta && !tb && cpu_features().intel));
  if (!bf16 && gemm_converts_operands() &&
      (fp32_ours || !std::is_same_v<T, float> || a.dtype != Dtype::f32 ||
       b.dtype != Dtype::f32)) {
    return gemm_packed<T>(ta, tb, m, n, k, a, b, c, bias, accum, batch,
                          c_finite);
  }
  std::unique_ptr<Memory> a_scratch, b_scratch, c_scratch;
  if (std::is_same_v<T, float> || bf16) {
    const Dtype in = bf16 ? Dtype::bf16 : Dtype::f32;
    const GemmPlan& plan = plan_for(GemmKey{m, n, k, ta, tb, bias != nullptr,
                                            accum, in, dtype_of<T>, batch});
    if (plan.native) {
      run(plan, as_type(a, in, batch * m * k, a_scratch),
          as_type(b, in, batch * k * n, b_scratch), c, bias);
      return;
    }
  }
  // fp32, with the result rounded to T once (added to C in fp32 with accum).
  const GemmPlan& plan = plan_for(GemmKey{
      m, n, k, ta, tb, bias != nullptr, false, Dtype::f32, Dtype::f32, batch});
  const int64_t size_c = batch * m * n;
  c_scratch = CpuAllocator::instance().allocate(size_c * sizeof(float));
  float* cf = static_cast<float*>(c_scratch->ptr());
  run(plan, as_type(a, Dtype::f32, batch * m * k, a_scratch),
      as_type(b, Dtype::f32, batch * k * n, b_scratch), cf, bias);
  store(cf, c, size_c, accum);
}

GemmFixedB::GemmFixedB(bool tb, int64_t m, int64_t n, int64_t k, Operand b,
                       bool bias, bool accum)
    : type_(b.dtype), m_(m), n_(n), bias_(bias), accum_(accum) {
  const bool bf16 =
      b.dtype == Dtype::bf16 && compute_type<BFloat16>() == Dtype::bf16;
  if (b.dtype != Dtype::f32 && !bf16) {
    throw std::logic_error(msg("[GemmFixedB] B is ", dtype_name(b.dtype),
                               ": fp32, or bf16 where oneDNN computes in it"));
  }
  if (m == 0 || n == 0 || k == 0) return;  // nothing to multiply: C as gemm()
  // fp32 on our own product, B packed once for its tile (PackedB). oneDNN
  // 2.6's AVX2 matmul keeps B plain whatever layout is asked for, and its
  // sgemm packs B on every call; computing C^T = op(B)^T A^T instead, with
  // op(B)^T stored once for sgemm to read in place, ran the LSTM's steps
  // (m 32; n 2048, k 512 with a bias, and n 512, k 2048 with accum) in
  // 1.12-1.20x and 1.10-1.15x our time on an Intel Xeon held to AVX2, and
  // oneDNN's AVX-512 kernel on its blocked B in 1.03-1.04x and 1.00-1.01x
  // (2026-12-05, call against call, medians of 401).
  if (type_ == Dtype::f32 && gemm_packed_available()) {
    packed_ = std::make_unique<PackedB>(tb, n, k, b);
    return;
  }
  // bf16 on our AVX512-BF16 tile, which the steps share out by hidden units
  // (one wake a step where oneDNN's product and the cells took two, and no
  // pass rounding all of h or drh): bench_models' LSTM in bfloat16 took
  // 177-180 ms a step against 181-185 (AMD EPYC Zen 4, 2 threads, five
  // alternations, the faster of the machine's two modes; the step product
  // alone 0.18 ms against oneDNN's 0.20-0.21). Not where the CPU has AMX,
  // whose tiles oneDNN's kernel uses and ours do not: on the Intel Xeon
  // with AMX that LSTM took 192 ms a bf16 step on our tile against 139 on
  // oneDNN's (5 processes each, interleaved, 2026-12-08).
  if (type_ == Dtype::bf16 && PackedBf16B::available() &&
      !cpu_features().amx_bf16) {
    packed_bf16_ = std::make_unique<PackedBf16B>(tb, n, k, b);
    return;
  }
  const GemmPlan& plan = plan_for(
      GemmKey{m, n, k, false, tb, bias, accum, type_, Dtype::f32, 1, true});
  if (!plan.native) {
    throw std::logic_error("[GemmFixedB] oneDNN has no kernel for this type");
  }
  plan_ = &plan;
  b_ = CpuAllocator::instance().allocate(plan.b_kernel.get_size());
  dnnl_call("GemmFixedB", [&] {
    dnnl::memory from(plan.b_plain, dnnl_engine(), const_cast<void*>(b.data));
    dnnl::memory to(plan.b_kernel, dnnl_engine(), b_->ptr());
    dnnl::reorder(from, to).execute(dnnl_stream(), from, to);
    dnnl_stream().wait();
  });
}

GemmFixedB::~GemmFixedB() = default;

bool GemmFixedB::b_relaid() const {
  return packed_ || packed_bf16_ ||
         (plan_ && plan_->b_kernel != plan_->b_plain);
}

void GemmFixedB::operator()(Operand a, float* c, const float* bias) const {
  const FunctionProfile::ProductScope timed;
  if (a.dtype != type_) {
    throw std::logic_error(msg("[GemmFixedB] A is ", dtype_name(a.dtype),
                               ", B ", dtype_name(type_)));
  }
  if (bias_ != (bias != nullptr)) {
    throw std::logic_error(
        "[GemmFixedB] a bias given to a product made "
        "without one, or none to one made with one");
  }
  if (packed_) {
    return packed_->multiply(m_, static_cast<const float*>(a.data), c, bias,
                             accum_);
  }
  if (packed_bf16_) {
    return packed_bf16_->multiply(m_, static_cast<const BFloat16*>(a.data), c,
                                  bias, accum_);
  }
  if (!plan_) {  // k == 0: C = bias (or C + bias); m == 0 or n == 0: empty
    return gemm<float>(false, false, m_, n_, 0, a, a, c, bias, accum_);
  }
  run(*plan_, a.data, b_->ptr(), c, bias);
}

#define MG_INSTANTIATE_GEMM(T)                                          \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, Operand, \
                        Operand, T*, const float*, bool, int64_t, bool*);
MG_INSTANTIATE_GEMM(float)
MG_INSTANTIATE_GEMM(Half)
MG_INSTANTIATE_GEMM(BFloat16)
#undef MG_INSTANTIATE_GEMM

}  // namespace mg::cpu
