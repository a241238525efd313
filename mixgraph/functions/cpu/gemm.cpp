#include <mixgraph/functions/cpu/gemm.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/cpu/dnnl_utils.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>

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
  int64_t ldb = 0;         // a plain B's row stride where it is padded; 0: n
  bool operator<(const GemmKey& o) const {
    return std::tie(m, n, k, ta, tb, bias, accum, type, out_type, batch,
                    blocked_b, ldb) <
           std::tie(o.m, o.n, o.k, o.ta, o.tb, o.bias, o.accum, o.type,
                    o.out_type, o.batch, o.blocked_b, o.ldb);
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
  const int64_t ldb = key.ldb ? key.ldb : n;
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
      key.tb ? md(k, n, dt, k * n, 1, k) : md(k, n, dt, k * ldb, ldb, 1);
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

// oneDNN 2.6's AVX2 sgemm reads a transposed A slowly when A's rows are a
// multiple of 1024 floats apart and C is narrow: at 0.67-0.73x of a plain
// A, even counting a transposing copy first (AMD EPYC Zen 3, 2 threads,
// m 1024 or 2048, n 256, k 256-2048). Elsewhere (n 512 or 1024, other m,
// AVX-512's kernels) the copy costs more than it saves (0.80-1.06x), so
// only there is A transposed first: the GPT's MLP weight grad, x^T dy.
bool transpose_a_first(bool ta, int64_t m, int64_t n, int64_t batch) {
  return ta && batch == 1 && m % 1024 == 0 && n <= 256 && avx2_sgemm();
}

// oneDNN 2.6's AVX2 sgemm reads a plain B in place (its "nocopy" kernels)
// where 1/m + 1/n >= 0.0038 (gemm_driver.cpp's threshold), and B's rows,
// when a multiple of 1 KB apart, then fall on the same L1 sets: 1.7-2.1x
// slower than rows 16 floats longer (AMD EPYC Zen 3, 2 threads: m 256, n
// 1024, k 1024: 7.9 -> 4.1 ms; m 64: 2.2 -> 1.0 ms; n 512: 4.1 -> 3.6;
// a transposed B is not read so). There B is read from a copy with padded
// rows, which costs a pass over B (none for a half B, converted anyway):
// from m 64 up that is less than it saves (at m 32, n 2048, k 512 it is
// about even). The GPT's fc1 weight grad x^T dy (m 256, n 1024) is one;
// a weight (B in forward) is copied on each call too, and still gains:
// the GPT's projections, m 1024, n 256, k 256, 1.08 -> 1.05 ms with it.
int64_t padded_ldb(bool tb, int64_t m, int64_t n, int64_t batch) {
  const bool nocopy =
      1.0 / static_cast<double>(m) + 1.0 / static_cast<double>(n) >= 0.0038;
  if (tb || batch != 1 || m < 64 || n % 256 != 0 || !nocopy) return 0;
  return avx2_sgemm() ? n + 16 : 0;
}

// B (k x n, row-major, of any float type) as fp32 rows `ldb` apart in
// `scratch` (the padding is never read).
const float* padded(Operand b, int64_t k, int64_t n, int64_t ldb,
                    std::unique_ptr<Memory>& scratch) {
  std::unique_ptr<Memory> out =
      CpuAllocator::instance().allocate(k * ldb * sizeof(float));
  float* to = static_cast<float*>(out->ptr());
  const auto* from = static_cast<const unsigned char*>(b.data);
  const size_t row = static_cast<size_t>(n) * dtype_size(b.dtype);
#pragma omp parallel for if (k * n >= (1 << 15)) schedule(static)
  for (int64_t r = 0; r < k; ++r) {
    convert(from + r * row, b.dtype, to + r * ldb, Dtype::f32,
            static_cast<size_t>(n));
  }
  scratch = std::move(out);
  return to;
}

// The fp32 A (k x m, row-major) as a row-major m x k copy in `scratch`,
// through a oneDNN reorder (0.9-1.4 ms for 4 MB there).
const float* transposed(const float* a, int64_t k, int64_t m,
                        std::unique_ptr<Memory>& scratch) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int64_t>, CachedPrimitive> cache;
  const CachedPrimitive* reorder;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find({k, m});
    if (it == cache.end()) {
      const auto f32 = dnnl::memory::data_type::f32;
      const dnnl::memory::desc from({k, m}, f32, dims{m, 1});
      const dnnl::memory::desc to({k, m}, f32, dims{1, k});
      const auto pd = dnnl_call("gemm", [&] {
        return dnnl::reorder::primitive_desc(dnnl_engine(), from, dnnl_engine(),
                                             to);
      });
      it = cache
               .emplace(
                   std::make_pair(k, m),
                   CachedPrimitive(dnnl::reorder(pd),
                                   {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}))
               .first;
    }
    reorder = &it->second;
  }
  std::unique_ptr<Memory> out =
      CpuAllocator::instance().allocate(m * k * sizeof(float));
  reorder->execute("gemm", {a, out->ptr()});
  scratch = std::move(out);
  return static_cast<const float*>(scratch->ptr());
}

}  // namespace

bool gemm_converts_operands() { return gemm_packed_available(); }

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
          Operand b, T* c, const float* bias, bool accum, int64_t batch) {
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
  // fp32 products stay oneDNN's: ours reads fp32 at 0.8-1.1x its speed.
  if (!bf16 && gemm_converts_operands() &&
      (!std::is_same_v<T, float> || a.dtype != Dtype::f32 ||
       b.dtype != Dtype::f32)) {
    return gemm_packed<T>(ta, tb, m, n, k, a, b, c, bias, accum, batch);
  }
  std::unique_ptr<Memory> a_scratch, b_scratch, c_scratch;
  if (std::is_same_v<T, float> || bf16) {
    const Dtype in = bf16 ? Dtype::bf16 : Dtype::f32;
    const bool t_first = !bf16 && transpose_a_first(ta, m, n, batch);
    const int64_t ldb = bf16 ? 0 : padded_ldb(tb, m, n, batch);
    const GemmPlan& plan =
        plan_for(GemmKey{m, n, k, ta && !t_first, tb, bias != nullptr, accum,
                         in, dtype_of<T>, batch, false, ldb});
    if (plan.native) {
      const void* ap = as_type(a, in, batch * m * k, a_scratch);
      if (t_first) {
        ap = transposed(static_cast<const float*>(ap), k, m, a_scratch);
      }
      const void* bp = ldb ? padded(b, k, n, ldb, b_scratch)
                           : as_type(b, in, batch * k * n, b_scratch);
      run(plan, ap, bp, c, bias);
      return;
    }
  }
  // fp32, with the result rounded to T once (added to C in fp32 with accum).
  const void* ap = as_type(a, Dtype::f32, batch * m * k, a_scratch);
  if (transpose_a_first(ta, m, n, batch)) {
    ap = transposed(static_cast<const float*>(ap), k, m, a_scratch);
    ta = false;
  }
  const int64_t ldb = padded_ldb(tb, m, n, batch);
  const GemmPlan& plan =
      plan_for(GemmKey{m, n, k, ta, tb, bias != nullptr, false, Dtype::f32,
                       Dtype::f32, batch, false, ldb});
  const int64_t size_c = batch * m * n;
  c_scratch = CpuAllocator::instance().allocate(size_c * sizeof(float));
  float* cf = static_cast<float*>(c_scratch->ptr());
  const void* bp = ldb ? padded(b, k, n, ldb, b_scratch)
                       : as_type(b, Dtype::f32, batch * k * n, b_scratch);
  run(plan, ap, bp, cf, bias);
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
  return packed_ || (plan_ && plan_->b_kernel != plan_->b_plain);
}

void GemmFixedB::operator()(Operand a, float* c, const float* bias) const {
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
  if (!plan_) {  // k == 0: C = bias (or C + bias); m == 0 or n == 0: empty
    return gemm<float>(false, false, m_, n_, 0, a, a, c, bias, accum_);
  }
  run(*plan_, a.data, b_->ptr(), c, bias);
}

#define MG_INSTANTIATE_GEMM(T)                                          \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, Operand, \
                        Operand, T*, const float*, bool, int64_t);
MG_INSTANTIATE_GEMM(float)
MG_INSTANTIATE_GEMM(Half)
MG_INSTANTIATE_GEMM(BFloat16)
#undef MG_INSTANTIATE_GEMM

}  // namespace mg::cpu
