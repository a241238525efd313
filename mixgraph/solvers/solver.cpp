#include <mixgraph/solvers/solver.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/graph/profile.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/update_rule.hpp>
#include <mixgraph/solvers/weight_decay_rule.hpp>

namespace mg {

namespace {

// Where a pass that also sums the squares of the grads takes the team
// (below, MG_GRAD_PASS).
constexpr int64_t kNormTeamMin = 1 << 15;

float* grad_f32(const VariablePtr& v) { return v->grad()->cast<float>(); }
const float* grad_f32_read(const VariablePtr& v) {
  return v->grad()->get<const float>();
}

// A grad that nothing wrote since zero_grad (or ever) has no step.
bool has_grad(const VariablePtr& v) { return !v->grad()->array().zeroing(); }

// Where a parameter's update runs: on the device its grad lives on when the
// solver's update is elementwise (Solver::elementwise_update) and that
// device's backend registered solver ops; on the host otherwise (the
// weights then come to the host too).
UpdateContext update_context(const VariablePtr& v, const std::string& solver,
                             bool elementwise, float grad_scale) {
  UpdateContext ctx;
  ctx.grad_scale = grad_scale;
  const std::string dev = v->grad()->array().head_device();
  if (dev == "cpu" || !elementwise) return ctx;
  const DeviceRef ref = resolve_device(dev, "[" + solver + "::update] ");
  SolverDeviceOps* ops = find_solver_device_ops(ref.name);
  if (!ops) return ctx;
  ctx.ops = ops;
  ctx.index = ref.index;
  ctx.device = dev;
  return ctx;
}

// The fused pass over every grad with a step, on the device when all of
// them live on one device whose backend has it: scales in place (write) or
// only reads, and says whether any value is inf or nan. nullopt when the
// host path must run.
std::optional<bool> device_pass(const ParameterList& params, float s,
                                bool write, double* norm2) {
  SolverDeviceOps* ops = nullptr;
  std::string device;
  int index = 0;
  for (const auto& kv : params) {
    if (!has_grad(kv.second)) continue;
    const std::string dev = kv.second->grad()->array().head_device();
    if (dev == "cpu" || (!device.empty() && dev != device)) return std::nullopt;
    if (device.empty()) {
      const DeviceRef ref = resolve_device(dev, "[Solver] ");
      ops = find_solver_device_ops(ref.name);
      if (!ops) return std::nullopt;
      device = dev;
      index = ref.index;
    }
  }
  if (!ops) return std::nullopt;  // no grads on a device
  std::vector<FusedGrad> grads;
  std::vector<Array> sources(params.size());  // old heads, alive until done
  size_t used = 0;
  for (const auto& kv : params) {
    if (!has_grad(kv.second)) continue;
    SyncedArray& a = kv.second->grad()->array();
    const int64_t n = kv.second->size();
    if (!write) {
      grads.push_back({a.get(a.dtype(), device), a.dtype(), nullptr, n});
      continue;
    }
    // Unscaled grads are written in fp32, whatever the dtype they came in:
    // a small grad unscaled in half would flush to zero.
    Array& old = sources[used++];
    float* out =
        static_cast<float*>(a.cast_taking_head(Dtype::f32, device, &old));
    grads.push_back({old.memory ? old.data() : out,
                     old.memory ? old.dtype : Dtype::f32, out, n});
  }
  return ops->scale_check(index, grads, s, norm2);
}

// One pass over n fp32 grads: v = in[i] * s, written to out[i] when kWrite
// (out may be in); returns whether any v is inf or nan, and with kNorm sets
// *norm2 to the sum of v^2 (in double). Compiled for the baseline ISA, AVX2
// and AVX-512, chosen at run time: memory bound, the 16-wide check reads
// 7.4 MB of grads in 90 us against 140 us for the baseline's 4-wide one.
// On the team from cpu::parallel_min() values, as the library's other
// loops: the scaler checks each grad as backward finishes it, in cache, one
// call a parameter, and from a fixed 32K under OMP_WAIT_POLICY=passive each
// of the GPT's 1 MB grads paid a futex wake for 20-30 us of reading: 1.1-1.6
// ms of its half step outside every function (AMD EPYC Zen 4, 2026-12-06).
// With the norm, from kNormTeamMin: the double sum is one chain of dependent
// adds on each thread (no reordering is allowed, so no vectors), which the
// team halves even where it must be woken (40 grads of 256K values, passive:
// 6.1 ms from 32K, 8.7 from a million; the check alone 2.5 against 1.3).
// _Pragma takes one string literal, which the formatter would split.
// clang-format off
#define MG_GRAD_PASS(NS, TARGET)                                       \
  namespace NS {                                                       \
  template <bool kWrite, bool kNorm>                                   \
  TARGET bool pass(const float* in, float* out, int64_t n, float s,    \
                   double* norm2) {                                    \
    int bad = 0;                                                       \
    double sum = 0;                                                    \
    _Pragma("omp parallel for reduction(|:bad) reduction(+:sum) if (n >= (kNorm ? kNormTeamMin : cpu::parallel_min()))") \
    for (int64_t i = 0; i < n; ++i) {                                  \
      const float v = in[i] * s;                                       \
      if constexpr (kWrite) out[i] = v;                                \
      bad |= !std::isfinite(v);                                        \
      if constexpr (kNorm) sum += static_cast<double>(v) * v;          \
    }                                                                  \
    if constexpr (kNorm) *norm2 = sum;                                 \
    return bad != 0;                                                   \
  }                                                                    \
  }
MG_FOR_EACH_VECTOR_ISA(MG_GRAD_PASS)
#undef MG_GRAD_PASS
// clang-format on

template <bool kWrite, bool kNorm>
bool grad_pass_on_this_cpu(const float* in, float* out, int64_t n, float s,
                           double* norm2) {
  MG_CALL_VECTOR_ISA(pass<kWrite, kNorm>(in, out, n, s, norm2));
}

// The pass above with out and norm2 optional (null: not written).
bool grad_pass(const float* in, float* out, int64_t n, float s, double* norm2) {
  if (out) {
    return norm2 ? grad_pass_on_this_cpu<true, true>(in, out, n, s, norm2)
                 : grad_pass_on_this_cpu<true, false>(in, out, n, s, norm2);
  }
  return norm2 ? grad_pass_on_this_cpu<false, true>(in, out, n, s, norm2)
               : grad_pass_on_this_cpu<false, false>(in, out, n, s, norm2);
}

// device_pass on the host: every grad with a step, scaled in place (in fp32)
// when `write`, else only read.
bool host_pass(const ParameterList& params, float s, bool write,
               double* norm2) {
  bool bad = false;
  double total = 0;
  // A check alone (nothing scaled, written or summed) skips grads whose
  // writer saw every value finite (SyncedArray::mark_finite).
  const bool check_only = !write && !norm2 && s == 1.0f;
  for (const auto& kv : params) {
    if (!has_grad(kv.second)) continue;
    if (check_only && kv.second->grad()->array().known_finite()) continue;
    double n2 = 0;
    if (write) {
      float* g = grad_f32(kv.second);
      bad |= grad_pass(g, g, kv.second->size(), s, norm2 ? &n2 : nullptr);
    } else {
      bad |= grad_pass(grad_f32_read(kv.second), nullptr, kv.second->size(), s,
                       norm2 ? &n2 : nullptr);
    }
    total += n2;
  }
  if (norm2) *norm2 = total;
  return bad;
}

// The fused pass where the grads live.
bool grad_pass(const ParameterList& params, float s, bool write,
               double* norm2) {
  if (auto bad = device_pass(params, s, write, norm2)) return *bad;
  return host_pass(params, s, write, norm2);
}

}  // namespace

void check_hyper(const std::string& solver, const std::string& name, float v,
                 float lo, bool lo_inclusive) {
  const bool ok = lo_inclusive ? v >= lo : v > lo;
  if (!ok || std::isnan(v)) {
    throw std::invalid_argument(msg("[", solver, "] ", name, " must be ",
                                    lo_inclusive ? ">= " : "> ", lo, ", got ",
                                    v));
  }
}

Solver::Solver(float learning_rate) : learning_rate_(learning_rate) {}

void Solver::set_learning_rate(float lr) {
  check_hyper(name(), "learning rate", lr, 0.0f);
  learning_rate_ = lr;
}

SolverState Solver::make_state(const Shape& shape) const {
  SolverState s;
  for (const auto& n : state_names()) {
    auto a = make_ndarray(shape);
    a->zero();
    s.pstate[n] = a;
  }
  return s;
}

void Solver::set_parameters(const ParameterList& params, bool reset,
                            bool retain_state) {
  std::map<std::string, Entry> old;
  if (reset) {
    old.swap(entries_);
    params_.clear();
  }
  for (const auto& [key, var] : params) {
    if (!var) {
      throw std::invalid_argument(msg("[", name(),
                                      "::set_parameters] parameter '", key,
                                      "' is a null variable"));
    }
    auto it = entries_.find(key);
    if (it != entries_.end()) {  // already held: replace the variable
      it->second.var = var;
      for (auto& p : params_) {
        if (p.first == key) p.second = var;
      }
      continue;
    }
    Entry e{var, {}};
    auto prev = old.find(key);
    if (retain_state && prev != old.end() &&
        prev->second.var->shape() == var->shape()) {
      e.state = prev->second.state;
    } else {
      e.state = make_state(var->shape());
    }
    entries_.emplace(key, std::move(e));
    params_.emplace_back(key, var);
  }
  index_parameters();
}

void Solver::index_parameters() {
  positions_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    positions_[params_[i].second.get()].push_back(i);
  }
}

void Solver::remove_parameters(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (!entries_.erase(n)) {
      throw std::invalid_argument(msg(
          "[", name(), "::remove_parameters] no parameter named '", n, "'"));
    }
  }
  ParameterList kept;
  for (auto& p : params_) {
    if (entries_.count(p.first)) kept.push_back(p);
  }
  params_ = std::move(kept);
  index_parameters();
}

void Solver::clear_parameters() {
  entries_.clear();
  params_.clear();
  positions_.clear();
}

void Solver::zero_grad() {
  for (auto& p : params_) p.second->grad()->zero();
}

Dtype Solver::kept_copy(const VariablePtr& var,
                        const UpdateContext& ctx) const {
  const SyncedArray& a = var->data()->array();
  // Only where every write of the weights is a rule this update applies
  // to all of them (elementwise_update), once (a variable held under two
  // names is cast again by its second update, which would drop the copy
  // the first one's gathered rules are to write).
  if (!elementwise_update() || ctx.ops || !a.has_head() ||
      a.dtype() != Dtype::f32 || a.head_device() != "cpu" ||
      !a.layout().plain() || positions_.at(var.get()).size() != 1) {
    return Dtype::f32;
  }
  for (Dtype d : {Dtype::bf16, Dtype::f16}) {
    if (a.has_copy(d)) return d;
  }
  return Dtype::f32;
}

void Solver::update_parameter(const std::string& key, const VariablePtr& var,
                              float grad_scale) {
  if (!has_grad(var)) return;
  const FunctionProfile::Scope timed(name(), "update");
  Entry& e = entries_.at(key);
  // On the grad's device when this solver's update runs there; the rules
  // and states follow (update_rule.hpp).
  UpdateContext ctx =
      update_context(var, name(), elementwise_update(), grad_scale);
  // fp32 grads and fp32 master weights: cast(float) makes the fp32 data
  // the head and drops the stale 16-bit copy, which the next pass remakes;
  // where the rules write the weights on the host, they write that copy
  // too (ctx.copy) while the weights are in cache. In bfloat16 the copy's
  // own pass was 2% of the GPT's step (perf).
  const float* g = var->grad()->get<const float>(ctx.device);
  float* w = nullptr;
  const Dtype copy = kept_copy(var, ctx);
  if (copy != Dtype::f32) {
    const auto [head, beside] =
        var->data()->array().cast_with_copy(Dtype::f32, copy);
    w = static_cast<float*>(head);
    ctx.copy = beside;
    ctx.copy_dtype = copy;
  } else {
    w = var->data()->cast<float>(false, ctx.device);
  }
  ++e.state.t;
  update_impl(ctx, w, g, e.state, var->size());
}

void Solver::update(float grad_scale) {
  // One profile entry for all of it (the parameters' own are inside).
  const FunctionProfile::Scope timed(name(), "update");
  // The host's rules of every parameter on one team (HostRuleBatch): only
  // where update_impl reaches the weights through apply_rule alone; Lars'
  // and Lamb's read them back between their rules.
  detail::HostRuleBatch batch(elementwise_update());
  for (auto& [key, var] : params_) update_parameter(key, var, grad_scale);
  batch.run();
  fused_decay_rate_ = 0.0f;  // a fused rate holds for one step, as NNabla's
}

namespace detail {

namespace {
thread_local HostRuleBatch* t_batch = nullptr;
}  // namespace

void round_into_copy(const float* w, void* copy, Dtype dtype, int64_t n) {
  convert(w, Dtype::f32, copy, dtype, static_cast<size_t>(n));
}

HostRuleBatch::HostRuleBatch(bool gather) : gathering_(gather) {
  if (!gathering_) return;
  previous_ = t_batch;
  t_batch = this;
}

HostRuleBatch::~HostRuleBatch() {
  if (!gathering_) return;
  t_batch = previous_;
  run();  // after an exception: what was applied before it, as one by one
}

HostRuleBatch* HostRuleBatch::current() { return t_batch; }

void HostRuleBatch::add(int64_t n, const float* w,
                        std::function<void(int64_t, int64_t)> run_range) {
  if (n <= 0) return;
  for (const Job& j : jobs_) {
    if (j.w == w) {  // the earlier application first
      run();
      break;
    }
  }
  jobs_.push_back(Job{n, w, std::move(run_range)});
}

void HostRuleBatch::run() {
  int64_t total = 0;
  for (const Job& j : jobs_) total += j.n;
  // A rule's element costs about an exp's (Adam's square root and
  // division): the softmax tiles' bound. At 1 << 15, as the per-parameter
  // loops, the U-Net's 42,891 weights took 0.14-0.16 ms a step on two
  // threads under the passive policy against 0.08-0.11 one by one.
  const bool team = total >= cpu::parallel_min_exp();
#pragma omp parallel if (team)
  {
    const auto [begin, end] =
        cpu::team_share(total, omp_get_thread_num(), omp_get_num_threads());
    int64_t offset = 0;  // of the job in the elements of all
    for (const Job& j : jobs_) {
      const int64_t b = std::max(begin, offset),
                    e = std::min(end, offset + j.n);
      if (b < e) j.run(b - offset, e - offset);
      offset += j.n;
      if (offset >= end) break;
    }
  }
  jobs_.clear();
}

}  // namespace detail

void Solver::backward_and_update(Variable& loss, float loss_scale,
                                 float weight_decay, bool clear_buffer) {
  const std::string caller = name() + "::backward_and_update";
  check_hyper(caller, "loss_scale", loss_scale, 0.0f, false);
  if (std::isinf(loss_scale) || std::isinf(1.0f / loss_scale)) {
    throw std::invalid_argument(msg("[", caller,
                                    "] loss_scale must be finite with a "
                                    "finite inverse, got ",
                                    loss_scale));
  }
  check_hyper(caller, "weight_decay", weight_decay, 0.0f);
  // 0: no decay asked for (a decoupled solver's own rate still applies).
  const bool l2 =
      weight_decay != 0.0f &&
      decay_into_grads(weight_decay, "backward_and_update",
                       [](float r) { return msg("weight_decay = ", r); });
  // A fused rate holds for this step only, also when backward throws.
  struct ResetFusedRate {
    float& rate;
    ~ResetFusedRate() { rate = 0.0f; }
  } reset{fused_decay_rate_};
  // L2 decay goes into unscaled grads (as weight_decay() after the loss
  // scaler's unscale): with a loss scale, the grad is unscaled in place
  // first and the update then reads it as it is.
  const bool unscale_first = l2 && loss_scale != 1.0f;
  const float grad_scale = unscale_first ? 1.0f : 1.0f / loss_scale;
  // A variable held under two names is two parameters, each updated with
  // its own state (as update() does), then its grad is zeroed once.
  auto update_and_zero = [&](const Variable* leaf) {
    auto it = positions_.find(leaf);
    if (it == positions_.end()) return;  // a leaf of the graph, not ours
    const VariablePtr& var = params_[it->second.front()].second;
    if (!has_grad(var)) return;
    if (unscale_first) {
      scale_grad_and_check_inf_or_nan({leaf}, 1.0f / loss_scale, true);
    }
    if (l2) decay_grad(var, weight_decay);
    for (size_t i : it->second) {
      update_parameter(params_[i].first, params_[i].second, grad_scale);
    }
    var->grad()->zero();
  };
  loss.backward(loss_scale, clear_buffer,
                [&](Variable& leaf) { update_and_zero(&leaf); });
  // Grads written before the call on parameters this backward did not
  // reach: update() would take their step too.
  for (size_t i = 0; i < params_.size(); ++i) {
    update_and_zero(params_[i].second.get());
  }
}

bool Solver::decay_into_grads(float rate, const char* caller,
                              std::string (*asked)(float)) {
  if (fuses_weight_decay()) {
    fused_decay_rate_ = rate;
    return false;
  }
  if (decoupled_decay_rate() >= 0.0f) {
    if (rate != decoupled_decay_rate()) {
      throw std::invalid_argument(
          msg("[", name(), "::", caller, "] ", name(),
              " decays the weights inside update() at wd = ",
              decoupled_decay_rate(), " given at construction; ", asked(rate),
              " asks for another rate"));
    }
    return false;
  }
  return true;
}

void Solver::decay_grad(const VariablePtr& var, float rate) {
  // On the device where update() will run, or on the host.
  const UpdateContext ctx =
      update_context(var, name(), elementwise_update(), 1.0f);
  const float* w = var->data()->get<const float>(ctx.device);
  apply_rule(ctx, WeightDecayRule{rate}, var->size(),
             var->grad()->cast<float>(false, ctx.device), w);
}

void Solver::weight_decay(float rate) {
  if (!decay_into_grads(rate, "weight_decay",
                        [](float r) { return msg("weight_decay(", r, ")"); }) ||
      rate == 0.0f) {
    return;
  }
  for (auto& [key, var] : params_) {
    if (has_grad(var)) decay_grad(var, rate);
  }
}

void Solver::clip_grad_by_norm(float norm) {
  check_hyper(name() + "::clip_grad_by_norm", "norm", norm, 0.0f, false);
  for (const auto& kv : params_) {
    if (!has_grad(kv.second)) continue;
    const ParameterList one{kv};
    double n2 = 0;
    grad_pass(one, 1.0f, false, &n2);
    if (n2 <= static_cast<double>(norm) * norm) continue;
    grad_pass(one, static_cast<float>(norm / std::sqrt(n2)), true, nullptr);
  }
}

double Solver::grad_norm_squared() const {
  double total = 0;
  grad_pass(params_, 1.0f, false, &total);
  return total;
}

float Solver::clip_grad_by_global_norm(float norm) {
  check_hyper(name() + "::clip_grad_by_global_norm", "norm", norm, 0.0f, false);
  const double total = std::sqrt(grad_norm_squared());
  if (total > norm) scale_grad(static_cast<float>(norm / total));
  return static_cast<float>(total);
}

void Solver::scale_grad(float s) { grad_pass(params_, s, true, nullptr); }

bool Solver::check_inf_or_nan_grad(double* norm2) const {
  return grad_pass(params_, 1.0f, false, norm2);
}

bool Solver::scale_grad_and_check_inf_or_nan(float s, double* norm2) {
  return grad_pass(params_, s, true, norm2);
}

bool Solver::scale_grad_and_check_inf_or_nan(
    const std::vector<const Variable*>& which, float s, bool write,
    double* norm2) {
  std::vector<size_t> at;
  for (const Variable* v : which) {
    auto it = positions_.find(v);
    if (it != positions_.end())
      at.insert(at.end(), it->second.begin(), it->second.end());
  }
  // In the parameters' order, each once (which may name one twice).
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  ParameterList some;
  for (size_t i : at) some.push_back(params_[i]);
  if (some.empty()) {
    if (norm2) *norm2 = 0.0;
    return false;
  }
  return grad_pass(some, s, write, norm2);
}

std::map<std::string, SolverState> Solver::states() const {
  std::map<std::string, SolverState> out;
  for (const auto& [key, e] : entries_) out[key] = e.state;
  return out;
}

void Solver::set_states(const std::map<std::string, SolverState>& states) {
  const auto names = state_names();
  const std::set<std::string> expected(names.begin(), names.end());
  // Validate everything first so a bad entry changes nothing.
  for (const auto& [key, s] : states) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      throw std::invalid_argument(
          msg("[", name(), "::set_states] no parameter named '", key, "'"));
    }
    std::set<std::string> got;
    for (const auto& [sname, arr] : s.pstate) {
      got.insert(sname);
      if (!expected.count(sname)) {
        throw std::invalid_argument(msg("[", name(),
                                        "::set_states] parameter '", key,
                                        "' has unknown state '", sname, "'"));
      }
      if (!arr || arr->shape() != it->second.var->shape()) {
        throw std::invalid_argument(
            msg("[", name(), "::set_states] state '", sname, "' of '", key,
                "' has shape ", (arr ? shape_str(arr->shape()) : "null"),
                ", but the parameter has shape ",
                shape_str(it->second.var->shape())));
      }
    }
    if (got != expected) {
      std::string missing;
      for (const auto& n : expected) {
        if (!got.count(n)) missing += (missing.empty() ? "" : ", ") + n;
      }
      throw std::invalid_argument(msg("[", name(), "::set_states] parameter '",
                                      key, "' lacks state ", missing));
    }
  }
  for (const auto& [key, s] : states) entries_.at(key).state = s;
}

uint32_t Solver::t() const {
  uint32_t t = 0;
  for (const auto& [key, e] : entries_) t = std::max(t, e.state.t);
  return t;
}

}  // namespace mg
