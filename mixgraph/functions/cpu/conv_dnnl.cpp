// The oneDNN convolutions of conv_dnnl.hpp: the primitive cache, the
// chunking of a batch by the L3 cache, and the three passes (about 600
// lines, kept together: the passes share the cache and the chunking).
#include <mixgraph/functions/cpu/conv_dnnl.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <mixgraph/contexts/cpu/channel_blocks.hpp>
#include <mixgraph/contexts/cpu/dnnl_utils.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/conv_direct.hpp>
#include <mixgraph/functions/cpu/conv_winograd.hpp>
#include <mixgraph/graph/profile.hpp>

namespace mg::cpu {

// A scratch block from the allocator (empty for 0 bytes). Outside the
// anonymous namespace: ConvStaging::Kept holds some.
struct Scratch {
  std::unique_ptr<Memory> mem;
  void* get(size_t bytes) {
    if (!mem || mem->bytes() < bytes) {
      mem = CpuAllocator::instance().allocate(bytes);
    }
    return mem->ptr();
  }
};

namespace {

using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

enum class ConvOp { forward, backward_data, backward_weights };

// The pass a public entry point names ("forward", "backward_data",
// "backward_weights"); any other name is the caller's error.
ConvOp conv_op(const std::string& name) {
  if (name == "forward") return ConvOp::forward;
  if (name == "backward_data") return ConvOp::backward_data;
  if (name == "backward_weights") return ConvOp::backward_weights;
  throw std::invalid_argument(
      msg("[convolution] unknown pass '", name,
          "' (forward, backward_data or backward_weights)"));
}

// A batch is cut into chunks only to bound the scratch copies (the blocked
// layouts, an fp32 output to be summed): a chunk's activations are at most
// the L3 cache, between 16 MB and 64 MB. Smaller chunks are slower: chunks
// of half the L2 cache (1 MB on 2 Zen 4 cores), the rule before, ran
// ResNet-18's step 17-19% and LeNet's 14-20% slower than one chunk in every
// type (oneDNN threads a few images poorly, each call wakes the team, and
// the weight grads are summed over the chunks); 16 MB, 32 MB and 256 MB
// chunks ran alike.
std::atomic<int64_t> chunk_bytes_override{0};

// Whether fp32 3x3 convolutions may take oneDNN's Winograd kernels
// (MIXGRAPH_CONV_WINOGRAD=0 in the environment starts with them off).
std::atomic<bool> winograd_allowed{[] {
  const char* v = std::getenv("MIXGRAPH_CONV_WINOGRAD");
  return !(v && std::string(v) == "0");
}()};

// Whether convolutions hand their activations over channel-blocked
// (MIXGRAPH_BLOCKED_ACTIVATIONS=0 in the environment starts with it off).
std::atomic<bool> blocked_activations{[] {
  const char* v = std::getenv("MIXGRAPH_BLOCKED_ACTIVATIONS");
  return !(v && std::string(v) == "0");
}()};

int64_t l3_bytes() {
  static const int64_t l3 = [] {
    const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{32} << 20;  // unknown: 32 MB
  }();
  return l3;
}

struct PlanKey {
  ConvGeometry geom;  // the batch is the chunk's
  ConvOp op;
  Dtype compute;    // the type of the primitive's two inputs
  Dtype out;        // the type of its output
  bool bias;        // forward: a bias input; backward_weights: a bias grad
  bool winograd;    // try oneDNN's Winograd kernel first
  bool one_thread;  // made and run on the calling thread alone
  // Made for one thread with a scratchpad of the caller's, run by each
  // thread of a team at once on its own images (ByThread below).
  bool concurrent = false;
  bool operator<(const PlanKey& o) const {
    return std::tie(geom, op, compute, out, bias, winograd, one_thread,
                    concurrent) < std::tie(o.geom, o.op, o.compute, o.out,
                                           o.bias, o.winograd, o.one_thread,
                                           o.concurrent);
  }
};

// oneDNN (its OpenMP runtime) splits a primitive among as many threads as
// omp_get_max_threads() said when the primitive was made, and wakes them
// at every call; with one, it runs on the calling thread and wakes none.
// A scope in which this thread's OpenMP calls (oneDNN's and ours) run on
// it alone, where `on`.
class OneThread {
 public:
  explicit OneThread(bool on) : saved_(on ? omp_get_max_threads() : 0) {
    if (on) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

// A pass's flops (the three passes have the same multiply-adds).
double pass_flops(const ConvGeometry& g) {
  return 2.0 * g.batch * g.out_channels *
         (g.in_channels / std::max<int64_t>(g.group, 1)) *
         shape_size(g.kernel) * shape_size(g.out_spatial);
}

// Whether a pass of g is small enough to run on one thread: under 32
// flops per element of parallel_min() (34 MFLOP where the team sleeps between
// regions, 1 MFLOP where it spins). Under the passive wait policy each of the
// pass's parallel regions (the layout conversions, the primitive) pays a wake
// of the team of about 0.15 ms; the U-Net's 1x1 layers (6-13 MFLOP a pass) took
// 0.25-0.46 ms for their three passes on one thread against 0.60-0.74 ms on two
// (Xeon, batch 32, 2026-12-05). A bound of its own, not gemm_packed's 4 MFLOP:
// a pass here is several regions, a product one.
bool one_thread_pass(const ConvGeometry& g) {
  return pass_flops(g) < 32.0 * static_cast<double>(parallel_min());
}

// A primitive with the layouts it picked for its inputs a, b and its output,
// the row-major layouts of the same, and the reorders between them (valid
// only where the layouts differ). ok is false where oneDNN has no kernel.
struct Plan {
  bool ok = false;
  std::string impl;
  // Its arguments: a, b, out [, bias or bias grad] [, scratchpad where
  // the key is concurrent].
  CachedPrimitive prim;
  size_t scratchpad_bytes = 0;
  md a, b, out;
  md a_plain, b_plain, out_plain;
  CachedPrimitive a_in, b_in, out_back;  // from, to
  bool a_reorder = false, b_reorder = false, out_reorder = false;
};

// Row-major ("ncw", "nchw", "goihw", ...) descriptors.
md plain(const dims& d, dt type) {
  dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * d[i + 1];
  }
  return md(d, type, strides);
}

md any(const dims& d, dt type) {
  return md(d, type, dnnl::memory::format_tag::any);
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

CachedPrimitive make_reorder(const md& from, const md& to) {
  auto& eng = dnnl_engine();
  return CachedPrimitive(
      dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to)),
      {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

// The primitive's arguments in the order run() passes them.
std::vector<std::pair<int, md>> conv_args(ConvOp op, bool bias, const md& a,
                                          const md& b, const md& out,
                                          const md& bias_md) {
  if (op == ConvOp::forward) {
    std::vector<std::pair<int, md>> args{
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, out}};
    if (bias) args.emplace_back(DNNL_ARG_BIAS, bias_md);
    return args;
  }
  if (op == ConvOp::backward_data) {
    return {{DNNL_ARG_DIFF_DST, a},
            {DNNL_ARG_WEIGHTS, b},
            {DNNL_ARG_DIFF_SRC, out}};
  }
  std::vector<std::pair<int, md>> args{
      {DNNL_ARG_SRC, a}, {DNNL_ARG_DIFF_DST, b}, {DNNL_ARG_DIFF_WEIGHTS, out}};
  if (bias) args.emplace_back(DNNL_ARG_DIFF_BIAS, bias_md);
  return args;
}

Plan make_plan(const PlanKey& key, dnnl::algorithm algo) {
  const ConvGeometry& g = key.geom;
  const dt ct = dnnl_type(key.compute), ot = dnnl_type(key.out);
  const dims src = data_dims(g, g.in_channels, g.in_spatial);
  const dims dst = data_dims(g, g.out_channels, g.out_spatial);
  const dims wei = weight_dims(g);
  const dims strides(g.stride.begin(), g.stride.end());
  const dims pad(g.pad.begin(), g.pad.end());
  dims dilates;  // oneDNN counts the gaps: 0 is a dense kernel
  for (int64_t d : g.dilation) dilates.push_back(d - 1);
  using fwd = dnnl::convolution_forward;
  const auto prop = dnnl::prop_kind::forward_training;
  const md bias_md =
      plain({key.op == ConvOp::backward_data ? g.in_channels : g.out_channels},
            dt::f32);
  Plan plan;
  auto& eng = dnnl_engine();
  dnnl::primitive_attr attr;
  if (key.concurrent) attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // The primitive's arguments, with the scratchpad where the caller gives it.
  auto args = [&](std::vector<std::pair<int, md>> a, const md& scratchpad) {
    if (key.concurrent) {
      a.emplace_back(DNNL_ARG_SCRATCHPAD, scratchpad);
      plan.scratchpad_bytes = scratchpad.get_size();
    }
    return a;
  };
  // The backward primitives need a forward one as a hint.
  auto hint = [&] {
    return fwd::primitive_desc(
        fwd::desc(prop, algo, any(src, ct), any(wei, ct), any(dst, ct), strides,
                  dilates, pad, pad),
        eng);
  };
  try {
    if (key.op == ConvOp::forward) {
      const md s = any(src, ct), w = any(wei, ct), d = any(dst, ot);
      fwd::primitive_desc pd(
          key.bias ? fwd::desc(prop, algo, s, w, bias_md, d, strides, dilates,
                               pad, pad)
                   : fwd::desc(prop, algo, s, w, d, strides, dilates, pad, pad),
          attr, eng);
      plan.a = pd.src_desc(), plan.b = pd.weights_desc();
      plan.out = pd.dst_desc(), plan.impl = pd.impl_info_str();
      plan.a_plain = plain(src, ct), plan.b_plain = plain(wei, ct);
      plan.out_plain = plain(dst, ot);
      plan.prim = CachedPrimitive(
          fwd(pd),
          args(conv_args(key.op, key.bias, plan.a, plan.b, plan.out, bias_md),
               pd.scratchpad_desc()));
    } else if (key.op == ConvOp::backward_data) {
      using bwd = dnnl::convolution_backward_data;
      bwd::primitive_desc pd(
          bwd::desc(algo, any(src, ot), any(wei, ct), any(dst, ct), strides,
                    dilates, pad, pad),
          attr, eng, hint());
      plan.a = pd.diff_dst_desc(), plan.b = pd.weights_desc();
      plan.out = pd.diff_src_desc(), plan.impl = pd.impl_info_str();
      plan.a_plain = plain(dst, ct), plan.b_plain = plain(wei, ct);
      plan.out_plain = plain(src, ot);
      plan.prim = CachedPrimitive(
          bwd(pd),
          args(conv_args(key.op, false, plan.a, plan.b, plan.out, bias_md),
               pd.scratchpad_desc()));
    } else {
      using bwd = dnnl::convolution_backward_weights;
      const md s = any(src, ct), w = any(wei, ot), d = any(dst, ct);
      bwd::primitive_desc pd(
          key.bias
              ? bwd::desc(algo, s, w, bias_md, d, strides, dilates, pad, pad)
              : bwd::desc(algo, s, w, d, strides, dilates, pad, pad),
          attr, eng, hint());
      plan.a = pd.src_desc(), plan.b = pd.diff_dst_desc();
      plan.out = pd.diff_weights_desc(), plan.impl = pd.impl_info_str();
      plan.a_plain = plain(src, ct), plan.b_plain = plain(dst, ct);
      plan.out_plain = plain(wei, ot);
      plan.prim = CachedPrimitive(
          bwd(pd),
          args(conv_args(key.op, key.bias, plan.a, plan.b, plan.out, bias_md),
               pd.scratchpad_desc()));
    }
    plan.a_reorder = plan.a != plan.a_plain;
    plan.b_reorder = plan.b != plan.b_plain;
    plan.out_reorder = plan.out != plan.out_plain;
    if (plan.a_reorder) plan.a_in = make_reorder(plan.a_plain, plan.a);
    if (plan.b_reorder) plan.b_in = make_reorder(plan.b_plain, plan.b);
    if (plan.out_reorder)
      plan.out_back = make_reorder(plan.out, plan.out_plain);
    plan.ok = true;
  } catch (const dnnl::error& e) {
    if (key.compute == Dtype::f32 &&
        algo == dnnl::algorithm::convolution_direct) {
      throw std::runtime_error(msg("[convolution] oneDNN: ", e.what()));
    }
  }
  return plan;
}

// Winograd's kernel where the key asks for it and oneDNN has one for this
// CPU and geometry (AVX-512 only), else the direct one.
Plan make_plan(const PlanKey& key) {
  const OneThread one(key.one_thread);
  if (key.winograd) {
    Plan plan = make_plan(key, dnnl::algorithm::convolution_winograd);
    if (plan.ok) return plan;
  }
  return make_plan(key, dnnl::algorithm::convolution_direct);
}

const Plan& plan_for(const PlanKey& key) {
  static std::mutex mutex;
  static std::map<PlanKey, Plan> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_plan(key)).first;
  return it->second;
}

void run_reorder(const CachedPrimitive& r, const void* src, void* dst) {
  r.execute("convolution", {src, dst});
}

void run(const Plan& plan, const void* a, const void* b, const float* bias,
         void* out, float* diff_bias) {
  const FunctionProfile::ProductScope timed;  // the layouts' reorders are not
  if (bias) {
    plan.prim.execute("convolution", {a, b, out, bias});
  } else if (diff_bias) {
    plan.prim.execute("convolution", {a, b, out, diff_bias});
  } else {
    plan.prim.execute("convolution", {a, b, out});
  }
}

// out[n, c, s] += b[c] for out laid out (batch, channels, spatial).
void add_channel_bias(float* out, const float* b, int64_t batch,
                      int64_t channels, int64_t spatial) {
#pragma omp parallel for schedule(static) if (batch * channels * spatial >= \
                                              parallel_min())
  for (int64_t nc = 0; nc < batch * channels; ++nc) {
    const float v = b[nc % channels];
    float* row = out + nc * spatial;
    for (int64_t s = 0; s < spatial; ++s) row[s] += v;
  }
}

// dst[i] += src[i] for n floats.
void add_to(float* dst, const float* src, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= parallel_min())
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// The channels per block of m where it is a channel-blocked layout
// (nCw16c, nChw16c, nCdhw16c; nCw8c, nChw8c, nCdhw8c from oneDNN's AVX2
// kernels; channels last, nwc, nhwc, ndhwc, from its AMX kernels: one block
// of all the channels) in fp32 or bf16 that channel_blocks.hpp converts to
// and from in one vector pass here; else 0. On a 2-core Intel Xeon with
// AMX, oneDNN 2.6's own reorders of a bf16 (32, 64, 32, 32) activation to
// and from nhwc took 0.5 ms each inside a ResNet-18 step.
int64_t channel_block_of(const md& m) {
  using tag = dnnl::memory::format_tag;
  const dt type = m.data_type();
  if (type != dt::f32 && type != dt::bf16) return 0;
  const dims d = m.dims();
  const size_t rank = d.size();
  if (rank < 3 || rank > 5) return 0;
  const tag last = rank == 3 ? tag::acb : rank == 4 ? tag::acdb : tag::acdeb;
  if (m == md(d, type, last)) {
    return channel_blocks_vectorized(d[1]) ? d[1] : 0;
  }
  for (const int64_t block : {16, 8}) {
    const bool b16 = block == 16;
    const tag t = rank == 3   ? (b16 ? tag::aBc16b : tag::aBc8b)
                  : rank == 4 ? (b16 ? tag::aBcd16b : tag::aBcd8b)
                              : (b16 ? tag::aBcde16b : tag::aBcde8b);
    if (m == md(d, type, t)) {
      return channel_blocks_vectorized(block) ? block : 0;
    }
  }
  return 0;
}

Dtype dtype_of_md(const md& m) {
  return m.data_type() == dt::bf16 ? Dtype::bf16 : Dtype::f32;
}

// An activation chunk: batch images of channels x spatial, row-major.
struct Activation {
  int64_t batch, channels, spatial;
  int64_t size() const { return batch * channels * spatial; }
};

// Brings an operand of n elements into a plan's layout for one of its
// inputs: converted to the compute type (our vector conversion: oneDNN 2.6
// reorders fp16 with a slow reference loop) where its type differs, then
// reordered where the layout differs. Returns the pointer to hand to the
// primitive.
const void* convert_and_reorder(const void* src, Dtype src_type, int64_t n,
                                Dtype ct, bool reorder,
                                const CachedPrimitive& r, const md& to,
                                Scratch& converted, Scratch& blocked) {
  const void* p = src;
  if (src_type != ct) {
    void* c = converted.get(n * dtype_size(ct));
    convert(src, src_type, c, ct, static_cast<size_t>(n));
    p = c;
  }
  if (reorder) {
    void* b = blocked.get(to.get_size());
    run_reorder(r, p, b);
    p = b;
  }
  return p;
}

// The same for an activation, in one pass of ours where its layout changes
// to a channel-blocked one (its type too, if it differs).
const void* stage_in(const void* src, Dtype src_type, const Activation& act,
                     Dtype ct, bool reorder, const CachedPrimitive& r,
                     const md& to, Scratch& converted, Scratch& blocked) {
  const int64_t block = reorder ? channel_block_of(to) : 0;
  if (block != 0) {
    void* b = blocked.get(to.get_size());
    to_channel_blocks(src, src_type, b, dtype_of_md(to), block, act.batch,
                      act.channels, act.spatial);
    return b;
  }
  return convert_and_reorder(src, src_type, act.size(), ct, reorder, r, to,
                             converted, blocked);
}

}  // namespace

struct ConvStaging::Kept {
  struct Copy {
    const void* src = nullptr;  // the caller's array
    md to;                      // the layout and type it was brought into
    const void* ready = nullptr;
    Scratch converted, blocked;
  };
  std::vector<std::unique_ptr<Copy>> copies;
  int64_t reused = 0;
  std::vector<const void*> held;  // the caller's arrays held blocked
  bool write_blocked = false;
  bool holds(const void* p) const {
    return std::find(held.begin(), held.end(), p) != held.end();
  }
};

ConvStaging::ConvStaging() : kept_(std::make_unique<Kept>()) {}
ConvStaging::~ConvStaging() = default;
int64_t ConvStaging::reused() const { return kept_->reused; }
void ConvStaging::hold_blocked(const void* array) {
  kept_->held.push_back(array);
}
void ConvStaging::write_blocked() { kept_->write_blocked = true; }

namespace {

// The copy of src in `to` that an earlier pass kept in staging (counted
// as reused), else null.
const void* kept_copy(ConvStaging* staging, const void* src, const md& to) {
  if (!staging) return nullptr;
  for (const auto& c : staging->kept().copies) {
    if (c->src == src && c->to == to) {
      ++staging->kept().reused;
      return c->ready;
    }
  }
  return nullptr;
}

// stage_in() of a whole batch (`whole`) through `staging`, where given: the
// copy an earlier pass made of src in the layout `to`, else one made here
// and kept for a later pass. A chunk stages into the pass's own scratch.
const void* stage_kept(ConvStaging* staging, bool whole, const void* src,
                       Dtype src_type, const Activation& act, Dtype ct,
                       bool reorder, const CachedPrimitive& r, const md& to,
                       Scratch& converted, Scratch& blocked) {
  const bool held = staging && staging->kept().holds(src);
  if (held) {
    // The caller checked conv_activation_blocks(): a whole batch, in the
    // primitive's layout, in its type or in a 16-bit one it computes in
    // fp32 (converted below, element by element).
    if (!whole || !reorder || channel_block_of(to) == 0) {
      throw std::logic_error(
          "[convolution] an activation handed over channel-blocked where the "
          "pass does not read that layout");
    }
    if (dtype_of_md(to) == src_type) return src;
  }
  // Brings src into `to` (the layout, or for a held array only the type).
  auto stage = [&](Scratch& c, Scratch& b) -> const void* {
    if (!held) return stage_in(src, src_type, act, ct, reorder, r, to, c, b);
    const Dtype t = dtype_of_md(to);
    void* p = c.get(act.size() * dtype_size(t));
    convert(src, src_type, p, t, static_cast<size_t>(act.size()));
    return p;
  };
  if (!staging || !whole) return stage(converted, blocked);
  if (const void* ready = kept_copy(staging, src, to)) return ready;
  ConvStaging::Kept& kept = staging->kept();
  auto c = std::make_unique<ConvStaging::Kept::Copy>();
  c->src = src;
  c->to = to;
  c->ready = stage(c->converted, c->blocked);
  kept.copies.push_back(std::move(c));
  return kept.copies.back()->ready;
}

// What one call of `op` reads and writes, per image of the batch.
struct Sizes {
  int64_t a, b, out;  // elements per image (b, out: 0 when not per image)
  int64_t nb, nout;   // total elements of b and the output
  // The channels and spatial size of each per-image operand (the output's
  // also for a post bias; backward weights': out_channels and 1).
  int64_t a_channels, a_spatial, b_channels, b_spatial;
  int64_t out_channels, out_spatial;
  Activation a_chunk(int64_t n) const { return {n, a_channels, a_spatial}; }
  Activation b_chunk(int64_t n) const { return {n, b_channels, b_spatial}; }
};

Sizes sizes(ConvOp op, const ConvGeometry& g) {
  const int64_t n = std::max<int64_t>(g.batch, 1);
  const int64_t x = g.x_size() / n, y = g.y_size() / n;
  const int64_t xs = shape_size(g.in_spatial), ys = shape_size(g.out_spatial);
  Sizes s{};
  if (op == ConvOp::forward) {
    s.a = x, s.out = y, s.nb = g.w_size(), s.nout = g.y_size();
    s.a_channels = g.in_channels, s.a_spatial = xs;
    s.out_channels = g.out_channels, s.out_spatial = ys;
  } else if (op == ConvOp::backward_data) {
    s.a = y, s.out = x, s.nb = g.w_size(), s.nout = g.x_size();
    s.a_channels = g.out_channels, s.a_spatial = ys;
    s.out_channels = g.in_channels, s.out_spatial = xs;
  } else {
    s.a = x, s.b = y, s.nb = g.y_size(), s.nout = g.w_size();
    s.a_channels = g.in_channels, s.a_spatial = xs;
    s.b_channels = g.out_channels, s.b_spatial = ys;
    s.out_channels = g.out_channels, s.out_spatial = 1;
  }
  return s;
}

// Images per chunk: the chunk's fp32 activations about conv_chunk_bytes().
int64_t chunk_batch(const ConvGeometry& g, const Sizes& s) {
  return conv_chunk_images(g.batch, s.a + s.b + s.out);
}

// Whether a pass of g in bf16 computes in fp32 instead, though bf16
// kernels pay: a weight grad with fewer than 16 input channels a group,
// on AMX. oneDNN 2.6's AMX weight-grad kernel blocks the input channels by
// 16 (its weight grad's layout is ABcd16b16a), padding the rest: LeNet's
// first layer (1 in) took 1.63 ms a step there against 0.65 in fp32
// (avx512_core), ResNet-18's stem (3 in) 0.76 against 0.49, and bfloat16's
// LeNet step took 0.93x its time with them in fp32 (Intel Xeon with AMX, 2
// threads, six interleaved processes, 2026-12-07). The same in the forward pass
// (the AMX kernel 0.98 ms against fp32's 1.05) and with 32 channels in (LeNet's
// second layer, 2.68 against 3.07) did not pay. fp32 on bf16 values is exact
// where bf16 is: the products are, and both accumulate in fp32. It costs the
// fp32 copy of x and dy (bounded, as every conversion, by conv_chunk_bytes()):
// LeNet's bfloat16 step allocates 21.6 MiB against 18.6, and the main
// job's bfloat16 peak was 31.9 MiB against 22.7 on 2026-12-02 (its first
// layer's dy in fp32 is 9.4 MB). Taken in four pieces the step allocated
// 13.7 MiB but ran 1.06x the time, giving the gain back.
bool bf16_weights_in_f32(ConvOp op, const ConvGeometry& g) {
  return op == ConvOp::backward_weights && g.in_channels / g.group < 16 &&
         cpu_features().amx_bf16;
}

// The plan for `op` on T at batch n (falling back from a bf16 kernel to
// fp32 where oneDNN has only a reference one or none).
template <class T>
const Plan& plan_at(ConvOp op, const ConvGeometry& g, int64_t n, bool bias,
                    bool accum, bool post_bias) {
  ConvGeometry c = g;
  c.batch = n;
  Dtype ct = compute_type<T>();
  if (ct == Dtype::bf16 && bf16_weights_in_f32(op, g)) ct = Dtype::f32;
  for (;;) {
    // Written straight into T where the primitive can, else fp32 first.
    Dtype out = op == ConvOp::backward_weights ? Dtype::f32 : ct;
    if (dtype_of<T> != ct || accum || post_bias) out = Dtype::f32;
    const bool wino = ct == Dtype::f32 && conv_winograd() && winograd_pays(c);
    const Plan& plan =
        plan_for(PlanKey{c, op, ct, out, bias, wino, one_thread_pass(g)});
    if (ct == Dtype::f32 || (plan.ok && plan.impl.rfind("ref", 0) != 0)) {
      return plan;
    }
    ct = Dtype::f32;
  }
}

// Whether convolutions of 16-bit types that compute in fp32 may run by
// thread (MIXGRAPH_CONV_BY_THREAD=0 in the environment starts with it off),
// and how many passes did.
std::atomic<bool> by_thread_allowed{[] {
  const char* v = std::getenv("MIXGRAPH_CONV_BY_THREAD");
  return !(v && std::string(v) == "0");
}()};
std::atomic<int64_t> by_thread_count{0};

// A pass "by thread" (set_conv_by_thread() in conv_dnnl.hpp): each thread
// of the team takes its share of the images in one piece (the shares
// differ by one image at most), converts it to
// fp32, runs a one-thread primitive on it and converts or sums its result,
// all in one parallel region. Run the usual way, a pass converted the batch
// on the team, then ran a team's primitive, then converted back, each step
// waking the team again (OMP_WAIT_POLICY=passive: a futex wake and a
// reschedule each). The U-Net's half step went from 0.98x float's time to
// 1.02x, LeNet's from 0.92x to 0.93x (AMD EPYC Zen 4, 2 threads, medians
// of 10 and 6 interleaved processes).
struct ByThread {
  int64_t shares = 1;  // one a thread of the team
  // The first `more` shares hold `size + 1` images, the others `size`.
  int64_t size = 1, more = 0;
  const Plan* big = nullptr;    // the plan for the larger shares
  const Plan* small = nullptr;  // for the others, where they differ
  int64_t first(int64_t i) const { return i * size + std::min(i, more); }
  int64_t images(int64_t i) const { return size + (i < more ? 1 : 0); }
  const Plan& plan(int64_t n) const { return n == big_size() ? *big : *small; }
  int64_t big_size() const { return more > 0 ? size + 1 : size; }
  size_t scratchpad_bytes() const {
    return std::max(big->scratchpad_bytes,
                    small ? small->scratchpad_bytes : size_t{0});
  }
};

// The shares and plans of `op` by thread, or nullopt where a share's plan
// wants other layouts than `whole` (the batch's plan, which the caller's
// arrays are held in).
std::optional<ByThread> by_thread(ConvOp op, const ConvGeometry& g, bool bias,
                                  const Plan& whole) {
  ByThread b;
  b.shares = std::min<int64_t>(omp_get_max_threads(), g.batch);
  b.size = g.batch / b.shares;
  b.more = g.batch % b.shares;
  auto plan_of = [&](int64_t n) -> const Plan& {
    ConvGeometry cg = g;
    cg.batch = n;
    const bool wino =
        op != ConvOp::backward_weights && conv_winograd() && winograd_pays(cg);
    return plan_for(
        PlanKey{cg, op, Dtype::f32, Dtype::f32, bias, wino, true, true});
  };
  b.big = &plan_of(b.big_size());
  if (b.more > 0) b.small = &plan_of(b.size);
  // An activation's layout in a share's plan: row-major where the batch's
  // is, else channel-blocked in the same blocks.
  auto like = [](const md& m, bool reorder, const md& w, bool w_reorder) {
    if (!w_reorder) return !reorder;
    const int64_t block = channel_block_of(m);
    return block != 0 && block == channel_block_of(w);
  };
  auto fits = [&](const Plan* p) {
    if (!p) return true;
    if (!p->ok || !like(p->a, p->a_reorder, whole.a, whole.a_reorder)) {
      return false;
    }
    if (op == ConvOp::backward_weights) {  // b is dy; out the weight grad
      return like(p->b, p->b_reorder, whole.b, whole.b_reorder) &&
             p->out == b.big->out;
    }
    // b: the weights, one copy for every share.
    return p->b == b.big->b &&
           like(p->out, p->out_reorder, whole.out, whole.out_reorder);
  };
  if (!fits(b.big) || !fits(b.small)) return std::nullopt;
  return b;
}

// Runs body(share, first image, images) for every share on the team, a
// thread's own first (the team OpenMP gives may be smaller than asked
// for: the others' shares are taken in turn), and rethrows the first error
// after it.
template <class Fn>
void for_each_share(const ByThread& b, Fn&& body) {
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast <int>(b.shares))
  {
    const int64_t team = omp_get_num_threads();
    for (int64_t i = omp_get_thread_num(); i < b.shares; i += team) {
      try {
        body(i, b.first(i), b.images(i));
      } catch (...) {
#pragma omp critical(mg_conv_by_thread)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// Whether a pass of g may run by thread (conv_by_thread()), allowed.
bool by_thread_runs(const ConvGeometry& g) {
  return by_thread_allowed.load(std::memory_order_relaxed) && conv_by_thread(g);
}

// Runs a concurrent plan on the calling thread (a team's member): extra is
// the bias (forward) or the bias grad (backward weights), else null.
void run_here(const Plan& plan, const void* a, const void* b, void* out,
              const float* extra, void* scratchpad) {
  const FunctionProfile::ProductScope timed;
  if (extra) {
    plan.prim.execute_here("convolution", {a, b, out, extra, scratchpad});
  } else {
    plan.prim.execute_here("convolution", {a, b, out, scratchpad});
  }
}

// 64-byte aligned pieces of one scratch block.
class Slabs {
 public:
  explicit Slabs(std::initializer_list<size_t> sizes) {
    size_t total = 0;
    for (size_t bytes : sizes) {
      offsets_.push_back(total);
      total += (bytes + 63) / 64 * 64;
    }
    base_ = static_cast<char*>(mem_.get(total + 64));
    base_ += (64 - reinterpret_cast<uintptr_t>(base_) % 64) % 64;
  }
  template <class P = float>
  P* at(size_t i) const {
    return reinterpret_cast<P*>(base_ + offsets_[i]);
  }

 private:
  Scratch mem_;
  std::vector<size_t> offsets_;
  char* base_ = nullptr;
};

// Forward or backward data by thread (ByThread above), each image of a and
// out in one piece. a's fp32 copy stays in staging for a weight grad's
// pass (Convolution's backward: dy; Deconvolution's: its dy, the forward
// pass's a). Returns false (nothing done) where the shares' plans want
// other layouts.
template <class T>
bool execute_data_by_thread(ConvOp op, const ConvGeometry& g, const T* a,
                            Operand w, const float* bias, T* out, bool accum,
                            const Plan& whole, ConvStaging* staging) {
  const Sizes s = sizes(op, g);
  const auto b = by_thread(op, g, bias != nullptr, whole);
  if (!b) return false;
  Scratch w_conv, w_blk;
  const Plan& full = *b->big;
  const void* w_ready =
      convert_and_reorder(w.data, w.dtype, s.nb, Dtype::f32, full.b_reorder,
                          full.b_in, full.b, w_conv, w_blk);
  const size_t pad = (b->scratchpad_bytes() + 63) / 64 * 64;
  const Slabs slabs({s.nout * sizeof(float), pad * b->shares});
  // a's fp32 copy, kept (once whole) for a weight grad's pass that reads a
  // too.
  auto c = std::make_unique<ConvStaging::Kept::Copy>();
  c->src = a;
  c->to = whole.a;
  float* af = static_cast<float*>(
      c->converted.get(static_cast<size_t>(g.batch * s.a) * sizeof(float)));
  c->ready = af;
  float* of = slabs.at(0);
  for_each_share(*b, [&](int64_t i, int64_t n0, int64_t n) {
    convert(a + n0 * s.a, dtype_of<T>, af + n0 * s.a, Dtype::f32,
            static_cast<size_t>(n * s.a));
    run_here(b->plan(n), af + n0 * s.a, w_ready, of + n0 * s.out, bias,
             slabs.at<char>(1) + pad * i);
    store(of + n0 * s.out, out + n0 * s.out, n * s.out, accum);
  });
  staging->kept().copies.push_back(std::move(c));
  by_thread_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Backward weights by thread (ByThread above), each image of x and dy in
// one piece (their fp32 copies taken from staging where a data pass kept
// them): each share's grads are summed in fp32 in the plan's layout, and
// the shares' sums added in share order. Returns false (nothing
// done) where the shares' plans want other layouts, or where the threads'
// weight grads would be more to add than an eighth of the activations.
template <class T, class W>
bool execute_weights_by_thread(const ConvGeometry& g, const T* x, const T* dy,
                               W* dw, bool accum, float* db, const Plan& whole,
                               ConvStaging* staging) {
  const ConvOp op = ConvOp::backward_weights;
  const Sizes s = sizes(op, g);
  const auto b = by_thread(op, g, db != nullptr, whole);
  if (!b) return false;
  const Plan& full = *b->big;
  const size_t w_bytes = (full.out.get_size() + 63) / 64 * 64;
  if (w_bytes * 8 > static_cast<size_t>(b->size * (s.a + s.b) * 4)) {
    return false;
  }
  // fp32 where kept: the shares' plans compute in fp32.
  const auto* kept_x =
      static_cast<const float*>(kept_copy(staging, x, whole.a));
  const auto* kept_dy =
      static_cast<const float*>(kept_copy(staging, dy, whole.b));
  const int64_t oc = db ? g.out_channels : 0;
  const size_t db_bytes = (oc * sizeof(float) + 63) / 64 * 64;
  const size_t pad = (b->scratchpad_bytes() + 63) / 64 * 64;
  const size_t mine_bytes = w_bytes + db_bytes + pad;
  const size_t nx = kept_x ? 0 : static_cast<size_t>(g.batch * s.a);
  const size_t ny = kept_dy ? 0 : static_cast<size_t>(g.batch * s.b);
  const Slabs slabs(
      {nx * sizeof(float), ny * sizeof(float), mine_bytes * b->shares});
  const float* xf = kept_x ? kept_x : slabs.at(0);
  const float* yf = kept_dy ? kept_dy : slabs.at(1);
  // Share i's weight grad, bias grad and scratchpad.
  auto sums = [&](int64_t i) { return slabs.at<char>(2) + mine_bytes * i; };
  for_each_share(*b, [&](int64_t i, int64_t n0, int64_t n) {
    if (!kept_x) {
      convert(x + n0 * s.a, dtype_of<T>, slabs.at(0) + n0 * s.a, Dtype::f32,
              static_cast<size_t>(n * s.a));
    }
    if (!kept_dy) {
      convert(dy + n0 * s.b, dtype_of<T>, slabs.at(1) + n0 * s.b, Dtype::f32,
              static_cast<size_t>(n * s.b));
    }
    char* mine = sums(i);
    run_here(b->plan(n), xf + n0 * s.a, yf + n0 * s.b, mine,
             db ? reinterpret_cast<float*>(mine + w_bytes) : nullptr,
             mine + w_bytes + db_bytes);
  });
  // The shares' sums added to the first's, in share order.
  float* total = reinterpret_cast<float*>(sums(0));
  float* db_total = reinterpret_cast<float*>(sums(0) + w_bytes);
  const int64_t padded = static_cast<int64_t>(full.out.get_size() / 4);
  for (int64_t i = 1; i < b->shares; ++i) {
    add_to(total, reinterpret_cast<float*>(sums(i)), padded);
    const float* d = reinterpret_cast<float*>(sums(i) + w_bytes);
    for (int64_t k = 0; k < oc; ++k) db_total[k] += d[k];
  }
  if (db) std::copy_n(db_total, oc, db);
  const float* f = total;
  Scratch row_major;
  if (full.out_reorder) {
    void* r = row_major.get(s.nout * sizeof(float));
    run_reorder(full.out_back, total, r);
    f = static_cast<const float*>(r);
  }
  store(f, dw, s.nout, accum);
  by_thread_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Runs forward or backward data on T: a is batch-chunked, w the weights,
// out batch-chunked.
template <class T>
void execute_data(ConvOp op, const ConvGeometry& g, const T* a, Operand w,
                  const float* bias, T* out, bool accum, const float* post_bias,
                  ConvStaging* staging) {
  const Sizes s = sizes(op, g);
  const int64_t nb = chunk_batch(g, s);
  if constexpr (!std::is_same_v<T, float>) {
    if (staging && !post_bias && nb == g.batch && by_thread_runs(g)) {
      // Each image of a and out in one piece: held channel-blocked, or
      // row-major where the primitive reads and writes it so.
      const Plan& whole =
          plan_at<T>(op, g, g.batch, bias != nullptr, accum, post_bias);
      const bool a_ok = staging->kept().holds(a) || !whole.a_reorder;
      const bool out_ok = staging->kept().write_blocked || !whole.out_reorder;
      if (a_ok && out_ok && dtype_of_md(whole.a_plain) == Dtype::f32 &&
          execute_data_by_thread(op, g, a, w, bias, out, accum, whole,
                                 staging)) {
        return;
      }
    }
  }
  const OneThread one(one_thread_pass(g));  // as plan_at made the plans
  Scratch a_conv, a_blk, out_blk, out_plain, w_conv, w_blk;
  // Weights are prepared once per call and shared by the chunks (the
  // remainder chunk's plan is checked to want the same layout).
  const Plan* wplan = nullptr;
  const void* w_ready = nullptr;
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
    const int64_t n = std::min(nb, g.batch - n0);
    const Plan& plan = plan_at<T>(op, g, n, bias != nullptr, accum, post_bias);
    const Dtype ct = dtype_of_md(plan.a_plain);
    if (!wplan || wplan->b != plan.b) {
      wplan = &plan;
      w_ready = convert_and_reorder(w.data, w.dtype, s.nb, ct, plan.b_reorder,
                                    plan.b_in, plan.b, w_conv, w_blk);
    }
    const void* a_ready = stage_kept(
        staging, n == g.batch, a + n0 * s.a, dtype_of<T>, s.a_chunk(n), ct,
        plan.a_reorder, plan.a_in, plan.a, a_conv, a_blk);
    T* user = out + n0 * s.out;
    // The primitive writes the caller's array itself where it writes T in
    // its layout and nothing is added; where its layout is channel-blocked,
    // one pass of ours brings the result back (type, layout, sum and bias
    // at once); else an fp32 chunk is reordered and then stored.
    const bool direct = plan.out_plain.data_type() == dnnl_type(dtype_of<T>) &&
                        !accum && !post_bias;
    const int64_t block = plan.out_reorder ? channel_block_of(plan.out) : 0;
    if (staging && staging->kept().write_blocked) {
      // The caller's array is in the primitive's layout: written as it is,
      // or, to add to it, the fp32 result added in that layout.
      // A 16-bit output the primitive writes in fp32 (or one to add to)
      // is stored from an fp32 scratch, element by element.
      const Dtype out_type = dtype_of_md(plan.out);
      if (n != g.batch || block == 0 || post_bias ||
          (out_type != dtype_of<T> && out_type != Dtype::f32)) {
        throw std::logic_error(
            "[convolution] an output asked for channel-blocked where the "
            "pass does not write that layout");
      }
      if (!accum && out_type == dtype_of<T>) {
        run(plan, a_ready, w_ready, bias, user, nullptr);
        continue;
      }
      float* dst = static_cast<float*>(out_blk.get(plan.out.get_size()));
      run(plan, a_ready, w_ready, bias, dst, nullptr);
      store(dst, user, n * s.out, accum);
      continue;
    }
    if (block != 0) {
      void* dst = out_blk.get(plan.out.get_size());
      run(plan, a_ready, w_ready, bias, dst, nullptr);
      from_channel_blocks(dst, dtype_of_md(plan.out), user, dtype_of<T>, block,
                          n, s.out_channels, s.out_spatial, accum, post_bias);
      continue;
    }
    void* row_major = direct ? static_cast<void*>(user)
                             : out_plain.get(n * s.out * sizeof(float));
    void* dst = plan.out_reorder ? out_blk.get(plan.out.get_size()) : row_major;
    run(plan, a_ready, w_ready, bias, dst, nullptr);
    if (plan.out_reorder) run_reorder(plan.out_back, dst, row_major);
    if (!direct) {
      float* f = static_cast<float*>(row_major);
      if (post_bias) {
        add_channel_bias(f, post_bias, n, s.out_channels, s.out_spatial);
      }
      store(f, user, n * s.out, accum);
    }
  }
}

// Runs backward weights on T: x and dy batch-chunked, the weight grad (and
// bias grad) summed over the chunks in fp32.
template <class T, class W>
void execute_weights(const ConvGeometry& g, const T* x, const T* dy, W* dw,
                     bool accum, float* db, ConvStaging* staging) {
  const ConvOp op = ConvOp::backward_weights;
  const Sizes s = sizes(op, g);
  if constexpr (!std::is_same_v<T, float>) {
    if (staging && chunk_batch(g, s) == g.batch && by_thread_runs(g)) {
      const Plan& whole =
          plan_at<T>(op, g, g.batch, db != nullptr, false, false);
      const ConvStaging::Kept& kept = staging->kept();
      const bool x_ok = kept.holds(x) || !whole.a_reorder;
      const bool dy_ok = kept.holds(dy) || !whole.b_reorder;
      if (x_ok && dy_ok && dtype_of_md(whole.a_plain) == Dtype::f32 &&
          execute_weights_by_thread(g, x, dy, dw, accum, db, whole, staging)) {
        return;
      }
    }
  }
  const OneThread one(one_thread_pass(g));  // as plan_at made the plans
  int64_t nb = chunk_batch(g, s);
  const Plan* first = &plan_at<T>(op, g, nb, db != nullptr, false, false);
  if (g.batch % nb != 0) {
    // The sums over chunks add in the first chunk's layout: a remainder
    // whose plan wants another one runs the batch in one piece instead.
    const Plan& rest =
        plan_at<T>(op, g, g.batch % nb, db != nullptr, false, false);
    if (rest.out != first->out) {
      nb = g.batch;
      first = &plan_at<T>(op, g, nb, db != nullptr, false, false);
    }
  }
  const bool direct = std::is_same_v<W, float> && !accum && !first->out_reorder;
  Scratch a_conv, a_blk, b_conv, b_blk, sum, part, db_part, row_major;
  void* total =
      direct ? static_cast<void*>(dw) : sum.get(first->out.get_size());
  const int64_t padded = static_cast<int64_t>(first->out.get_size() / 4);
  std::vector<float> db_chunk(db ? g.out_channels : 0);
  for (int64_t n0 = 0; n0 < g.batch; n0 += nb) {
    const int64_t n = std::min(nb, g.batch - n0);
    const Plan& plan =
        n == nb ? *first : plan_at<T>(op, g, n, db != nullptr, false, false);
    const Dtype ct = dtype_of_md(plan.a_plain);
    const bool whole = n == g.batch;
    const void* a_ready =
        stage_kept(staging, whole, x + n0 * s.a, dtype_of<T>, s.a_chunk(n), ct,
                   plan.a_reorder, plan.a_in, plan.a, a_conv, a_blk);
    const void* b_ready =
        stage_kept(staging, whole, dy + n0 * s.b, dtype_of<T>, s.b_chunk(n), ct,
                   plan.b_reorder, plan.b_in, plan.b, b_conv, b_blk);
    void* dst = n0 == 0 ? total : part.get(plan.out.get_size());
    float* dbp = !db ? nullptr : n0 == 0 ? db : db_chunk.data();
    run(plan, a_ready, b_ready, nullptr, dst, dbp);
    if (n0 != 0) {
      add_to(static_cast<float*>(total), static_cast<float*>(dst), padded);
      if (db) add_to(db, db_chunk.data(), g.out_channels);
    }
  }
  if (direct) return;
  const float* f = static_cast<const float*>(total);
  if (first->out_reorder) {
    if constexpr (std::is_same_v<W, float>) {
      if (!accum) {  // an fp32 grad written in place: no copy after
        return run_reorder(first->out_back, total, dw);
      }
    }
    void* r = row_major.get(s.nout * sizeof(float));
    run_reorder(first->out_back, total, r);
    f = static_cast<const float*>(r);
  }
  store(f, dw, s.nout, accum);
}

// An empty sum (only padding, or batch 0): the output is the bias alone.
template <class T>
void execute_empty(ConvOp op, const ConvGeometry& g, const float* bias, T* out,
                   bool accum, const float* post_bias, float* db) {
  const Sizes s = sizes(op, g);
  std::vector<float> f(s.nout, 0.0f);
  const float* b = bias ? bias : post_bias;
  if (b) add_channel_bias(f.data(), b, g.batch, s.out_channels, s.out_spatial);
  store(f.data(), out, s.nout, accum);
  if (db) std::fill(db, db + g.out_channels, 0.0f);
}

// Whether the weight grad is our Winograd's: where it takes the data
// passes, with at least 48 channels in and out, and output maps of more
// than 4 positions. Held to AVX2 (an Intel Xeon, batch 32, 2 threads):
// against oneDNN's kernel 0.82-0.92x with 32 channels, 1.37-1.41x with 48
// (32x32 and 16x16 maps); against the im2col product that maps of at most
// 16 positions take, 1.13-1.27x on 4x4 maps, 1.21-1.54x on 6x6 (32 to 512
// channels), 0.81-0.89x on 2x2.
template <class T>
bool weights_by_winograd(const ConvGeometry& g) {
  return winograd_f2_runs<T>(g) && g.in_channels >= 48 &&
         g.out_channels >= 48 && shape_size(g.out_spatial) > 4;
}

}  // namespace

int64_t conv_chunk_bytes() {
  const int64_t forced = chunk_bytes_override.load(std::memory_order_relaxed);
  if (forced > 0) return forced;
  return std::clamp<int64_t>(l3_bytes(), int64_t{16} << 20, int64_t{64} << 20);
}

int64_t conv_chunk_images(int64_t batch, int64_t floats_per_image) {
  const int64_t fit = std::max<int64_t>(
      1, conv_chunk_bytes() / (std::max<int64_t>(floats_per_image, 1) * 4));
  return ceil_div(batch, ceil_div(batch, fit));
}

bool winograd_pays(const ConvGeometry& g) {
  if (g.kernel.size() != 2 || g.group != 1) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (g.kernel[i] != 3 || g.stride[i] != 1 || g.dilation[i] != 1) {
      return false;
    }
  }
  if (g.in_channels < 64 || g.out_channels < 64) return false;
  // Tiles of 4x4 outputs: at least 64 of them, at least 3/4 of them used.
  const int64_t oh = g.out_spatial[0], ow = g.out_spatial[1];
  const int64_t tiles = ((oh + 3) / 4) * ((ow + 3) / 4);
  return g.batch * tiles >= 64 && 4 * oh * ow >= 3 * 16 * tiles;
}

void set_blocked_activations(bool allowed) {
  blocked_activations.store(allowed, std::memory_order_relaxed);
}

bool conv_blocked_activations() {
  return blocked_activations.load(std::memory_order_relaxed);
}

void set_conv_by_thread(bool allowed) {
  by_thread_allowed.store(allowed, std::memory_order_relaxed);
}

// Small enough that the team's wakes weigh: under 1024 x parallel_min()
// flops (1.07 GFLOP under the passive policy). Larger passes ran slower by
// thread: ResNet-18's half step (3x3 convolutions of 2.4 GFLOP) 0.90x on an
// AMD EPYC Zen 4, 2 threads, as oneDNN's kernel on each thread's 16 images
// runs below its rate on the team's 32.
bool conv_by_thread(const ConvGeometry& g) {
  const int threads = omp_get_max_threads();
  return threads > 1 && g.batch >= threads && !omp_in_parallel() &&
         !one_thread_pass(g) &&
         pass_flops(g) < 1024.0 * static_cast<double>(parallel_min());
}

int64_t conv_by_thread_passes() {
  return by_thread_count.load(std::memory_order_relaxed);
}

void set_conv_winograd(bool allowed) {
  winograd_allowed.store(allowed, std::memory_order_relaxed);
}

bool conv_winograd() {
  return winograd_allowed.load(std::memory_order_relaxed);
}

void set_conv_chunk_bytes(int64_t bytes) {
  chunk_bytes_override.store(std::max<int64_t>(0, bytes),
                             std::memory_order_relaxed);
}

template <class T>
void conv_forward(const ConvGeometry& g, const T* x, Operand w, const float* b,
                  T* y, bool accum, ConvStaging* staging) {
  if (g.y_size() == 0) return;
  if (g.x_size() == 0 || g.w_size() == 0) {
    return execute_empty(ConvOp::forward, g, b, y, accum, nullptr, nullptr);
  }
  if (conv_direct_forward_runs<T>(g)) {
    const bool blocked = staging && staging->kept().write_blocked;
    return conv_direct_forward<T>(g, x, w, b, y, accum, blocked);
  }
  if (winograd_f2_runs<T>(g)) return winograd_forward<T>(g, x, w, b, y, accum);
  execute_data(ConvOp::forward, g, x, w, b, y, accum, nullptr, staging);
}

template <class T>
void conv_backward_data(const ConvGeometry& g, const T* dy, Operand w, T* dx,
                        bool accum, const float* b, ConvStaging* staging) {
  if (g.x_size() == 0) return;
  if (g.y_size() == 0 || g.w_size() == 0) {
    return execute_empty(ConvOp::backward_data, g, nullptr, dx, accum, b,
                         nullptr);
  }
  if (winograd_f2_runs<T>(g)) {
    return winograd_backward_data<T>(g, dy, w, dx, accum, b);
  }
  execute_data(ConvOp::backward_data, g, dy, w, nullptr, dx, accum, b, staging);
}

template <class T, class W>
void conv_backward_weights_dnnl(const ConvGeometry& g, const T* x, const T* dy,
                                W* dw, bool accum, float* db,
                                ConvStaging* staging) {
  if (g.w_size() == 0) return;
  if (g.x_size() == 0 || g.y_size() == 0) {
    execute_empty(ConvOp::backward_weights, g, nullptr, dw, accum, nullptr, db);
    if (db) {
      channel_sums(dy, g.batch, g.out_channels, shape_size(g.out_spatial), db);
    }
    return;
  }
  execute_weights(g, x, dy, dw, accum, db, staging);
}

template <class T, class W>
void conv_backward_weights(const ConvGeometry& g, const T* x, const T* dy,
                           W* dw, bool accum, float* db, ConvStaging* staging) {
  if (g.w_size() != 0 && g.x_size() != 0 && g.y_size() != 0) {
    if (conv_direct_weights_runs<T>(g)) {
      const bool blocked = staging && staging->kept().holds(dy);
      return conv_direct_backward_weights(g, x, dy, blocked, dw, accum, db);
    }
    if (weights_by_winograd<T>(g)) {
      return winograd_backward_weights(g, x, dy, dw, accum, db);
    }
    if (weights_by_product(g)) {
      return conv_backward_weights_product(g, x, dy, dw, accum, db);
    }
  }
  conv_backward_weights_dnnl(g, x, dy, dw, accum, db, staging);
}

template <class T>
void channel_sums(const T* a, int64_t batch, int64_t channels, int64_t spatial,
                  float* sums) {
#pragma omp parallel for schedule(static) if (batch * channels * spatial >= \
                                              parallel_min())
  for (int64_t c = 0; c < channels; ++c) {
    float buf[kBlock];
    float s = 0.0f;
    for (int64_t n = 0; n < batch; ++n) {
      const T* row = a + (n * channels + c) * spatial;
      for (int64_t i = 0; i < spatial; i += kBlock) {
        const int64_t len = std::min(kBlock, spatial - i);
        const float* f = load(row + i, buf, len);
        s += lanes_sum(len, [f](int64_t j) { return f[j]; });
      }
    }
    sums[c] = s;
  }
}

template <class T>
std::string conv_implementation(const ConvGeometry& g, const std::string& op) {
  const ConvOp o = conv_op(op);
  if ((o == ConvOp::forward && conv_direct_forward_runs<T>(g)) ||
      (o == ConvOp::backward_weights && conv_direct_weights_runs<T>(g))) {
    return "mixgraph:direct";
  }
  if (o == ConvOp::backward_weights) {
    if (weights_by_winograd<T>(g)) return "mixgraph:winograd_f2x2";
    if (weights_by_taps(g)) return "mixgraph:tap_gemm";
    if (weights_by_product(g)) return "mixgraph:im2col_gemm";
  } else if (winograd_f2_runs<T>(g)) {
    return "mixgraph:winograd_f2x2";
  }
  const int64_t nb = chunk_batch(g, sizes(o, g));
  return plan_at<T>(o, g, nb, false, false, false).impl;
}

template <class T>
ConvBlocks conv_activation_blocks(const ConvGeometry& g, const std::string& op,
                                  bool bias) {
  const ConvOp o = conv_op(op);
  if (!conv_blocked_activations() || g.x_size() == 0 || g.y_size() == 0 ||
      g.w_size() == 0) {
    return {};
  }
  // x row-major (a few channels), y and dy in the direct kernel's blocks.
  if (o == ConvOp::forward && conv_direct_forward_runs<T>(g)) {
    return {0, 0, conv_direct_block()};
  }
  if (o == ConvOp::backward_weights && conv_direct_weights_runs<T>(g)) {
    return {0, conv_direct_block(), 0};
  }
  if (o == ConvOp::backward_weights) {
    if (weights_by_winograd<T>(g) || weights_by_product(g)) return {};
  } else if (winograd_f2_runs<T>(g)) {
    return {};
  }
  const Sizes s = sizes(o, g);
  if (chunk_batch(g, s) != g.batch) return {};
  const Plan& plan = plan_at<T>(o, g, g.batch, bias, false, false);
  // The activations stay in T, in the primitive's layout: where it
  // computes in another type (half and, on some CPUs, bfloat16 in fp32)
  // a pass converts them element by element, which costs less than the
  // pass that also turns them into blocks.
  const Dtype ct = dtype_of_md(plan.a_plain);
  // The block of m where it is one of the compute type, a multiple of 16
  // that divides the channels (a padded block holds more than the
  // array), else 0.
  auto block = [ct](bool reorder, const md& m, int64_t channels) -> int64_t {
    const int64_t b = reorder ? channel_block_of(m) : 0;
    const bool fits = b > 0 && b % 16 == 0 && channels % b == 0;
    return fits && dtype_of_md(m) == ct ? b : 0;
  };
  if (!plan.ok || (ct != dtype_of<T> && ct != Dtype::f32)) return {};
  // A network's first convolution (3 channels in) still writes y so.
  ConvBlocks r;
  r.in = block(plan.a_reorder, plan.a,
               o == ConvOp::backward_data ? g.out_channels : g.in_channels);
  if (o == ConvOp::backward_weights) {
    r.in2 = block(plan.b_reorder, plan.b, g.out_channels);
  } else {
    r.out = block(plan.out_reorder, plan.out,
                  o == ConvOp::forward ? g.out_channels : g.in_channels);
  }
  return r;
}

#define MG_INSTANTIATE_CONV(T)                                                \
  template ConvBlocks conv_activation_blocks<T>(const ConvGeometry&,          \
                                                const std::string&, bool);    \
  template void conv_forward<T>(const ConvGeometry&, const T*, Operand,       \
                                const float*, T*, bool, ConvStaging*);        \
  template void conv_backward_data<T>(const ConvGeometry&, const T*, Operand, \
                                      T*, bool, const float*, ConvStaging*);  \
  template void channel_sums<T>(const T*, int64_t, int64_t, int64_t, float*); \
  template std::string conv_implementation<T>(const ConvGeometry&,            \
                                              const std::string&);
MG_INSTANTIATE_CONV(float)
MG_INSTANTIATE_CONV(Half)
MG_INSTANTIATE_CONV(BFloat16)
#undef MG_INSTANTIATE_CONV

// The weight grads: in T, and in fp32 for the 16-bit types.
#define MG_INSTANTIATE_WEIGHTS(T, W)                                           \
  template void conv_backward_weights<T, W>(const ConvGeometry&, const T*,     \
                                            const T*, W*, bool, float*,        \
                                            ConvStaging*);                     \
  template void conv_backward_weights_dnnl<T, W>(const ConvGeometry&,          \
                                                 const T*, const T*, W*, bool, \
                                                 float*, ConvStaging*);
MG_INSTANTIATE_WEIGHTS(float, float)
MG_INSTANTIATE_WEIGHTS(Half, Half)
MG_INSTANTIATE_WEIGHTS(BFloat16, BFloat16)
MG_INSTANTIATE_WEIGHTS(Half, float)
MG_INSTANTIATE_WEIGHTS(BFloat16, float)
#undef MG_INSTANTIATE_WEIGHTS

}  // namespace mg::cpu
