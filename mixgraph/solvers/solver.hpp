// The Solver base: parameters by name, fp32 master weights, grad operations.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

/// One parameter's solver state: named fp32 arrays of its shape ("mean",
/// "var", ...) and its step count t.
struct SolverState {
  std::map<std::string, NdArrayPtr> pstate;
  uint32_t t = 0;
};

class SolverDeviceOps;

/// What one parameter's update runs with, given to update_impl by update()
/// (and passed on to apply_rule and state_data): the factor every grad is
/// multiplied by inside the update, and the device the rules run on.
struct UpdateContext {
  /// The grads in memory times grad_scale are the grads of this step: the
  /// loss scaler's 1 / scale (and clipping factor), 1 for a plain update().
  float grad_scale = 1.0f;
  /// The device backend that runs the rules, or null for the host.
  SolverDeviceOps* ops = nullptr;
  int index = 0;               // the device's index in its backend
  std::string device = "cpu";  // where w, g and the states live ("cuda:0")
  /// On the host, a 16-bit copy of the weights that the previous pass read
  /// (a bfloat16 or half context's products), or null: the rules round
  /// each new weight into it as they write it, as get() would, so that the
  /// next pass finds it current (SyncedArray::cast_with_copy).
  void* copy = nullptr;
  Dtype copy_dtype = Dtype::f32;
};

/// The base of every solver. It keeps parameters by name in insertion
/// order. Grads are always read as fp32 and the fp32 data is updated
/// (SyncedArray get / cast), whatever the type_config, so the weights a half
/// pass reads are cast from fp32 masters once per pass (on the host by the
/// update itself, UpdateContext::copy, where the last pass read such a
/// copy). Where the grads live on a device whose backend registered
/// SolverDeviceOps, update() and the grad scaling, checks and global norm
/// run there (device_ops.hpp).
class Solver {
 public:
  virtual ~Solver() = default;
  /// "Adam".
  virtual std::string name() const = 0;

  /// Sets the parameters to optimise. reset drops the ones held before;
  /// retain_state keeps the state of a name seen before (else fresh).
  void set_parameters(const ParameterList& params, bool reset = true,
                      bool retain_state = false);
  void remove_parameters(const std::vector<std::string>& names);
  void clear_parameters();
  const ParameterList& parameters() const { return params_; }

  /// Deferred zero of every grad: a grad no backward writes stays "zeroing"
  /// and update() skips its parameter.
  void zero_grad();
  /// One step for every parameter whose grad was written; the step count t
  /// of those parameters moves by one.
  void update() { update(1.0f); }
  /// The step update() takes for grads multiplied by grad_scale, with the
  /// multiplication done inside the update's own pass over the grads (in
  /// fp32); the grads themselves are left as they are. The loss scaler
  /// unscales this way: one read of the grads fewer and no write.
  void update(float grad_scale);
  /// The update inside backward (optimizer-in-backward): runs
  /// loss.backward(loss_scale, clear_buffer) and updates each parameter as
  /// soon as backward is done with it (its grad final, no later function
  /// reading its weight), while its grad is still in cache, then zeroes
  /// that grad, whose memory goes back to the allocator: a pass holds the
  /// grads of the parameters it has not reached yet, not all of them. The
  /// step is the one update(1 / loss_scale) takes after backward (a static
  /// loss scale unscales inside the update), parameters with a grad that
  /// backward did not reach included; afterwards every grad is zero, so
  /// the next call needs no zero_grad. Grads must be zero before the first
  /// call (zero_grad) unless earlier grads are meant to be added.
  /// `weight_decay` is what weight_decay(rate) would do between backward
  /// and update() on unscaled grads (there it is too late: the grads are
  /// gone; before the call there is no grad to add to), done per parameter:
  /// with a loss scale other than 1, its grad is unscaled in place first,
  /// as the loss scaler does. Solvers that fuse the decay (Lars, Lamb,
  /// Lion) take it as this step's rate; decoupled ones (AdamW, SgdW) decay
  /// at their own rate, which a nonzero `weight_decay` must equal (else an
  /// error, before anything changes). Not for what needs every grad before any
  /// update: a dynamic loss scale's overflow skip, clipping by norm,
  /// accumulation over several batches, data-parallel reduction. If
  /// backward throws, the parameters updated before it stay updated and
  /// the others keep their grads.
  void backward_and_update(Variable& loss, float loss_scale = 1.0f,
                           float weight_decay = 0.0f, bool clear_buffer = true);
  /// L2 weight decay: grad += rate * w. Solvers with decoupled decay (SgdW,
  /// AdamW, ...) decay inside update() at the rate given at construction,
  /// as NNabla's do: for them `rate` must equal that rate (a no-op check).
  /// Solvers that fuse weight decay into their update direction (Lars, Lamb,
  /// Lion) keep `rate` for the next update() only and leave the grads alone.
  void weight_decay(float rate);
  /// Scales each parameter's grad so that its L2 norm is at most `norm`.
  void clip_grad_by_norm(float norm);
  /// Scales all grads by one factor so that their joint L2 norm is at most
  /// `norm`. Returns the norm before clipping.
  float clip_grad_by_global_norm(float norm);
  /// grad *= s for every parameter.
  void scale_grad(float s);
  /// True if any grad holds an inf or nan: one read-only pass, one answer;
  /// with norm2, also the sum of squares of the grads from the same pass.
  bool check_inf_or_nan_grad(double* norm2 = nullptr) const;
  /// Unscales every grad by `s` and reports whether any is inf or nan, in one
  /// pass over the grads; with norm2, also the sum of squares of the
  /// unscaled grads from the same pass (on a device, the same launches).
  bool scale_grad_and_check_inf_or_nan(float s, double* norm2 = nullptr);
  /// The two above for some of this solver's parameters, in one pass
  /// (`write`: scale their grads in place by s; else only read them, scaled
  /// by s): the loss scaler checks each grad as backward finishes it, while
  /// it is still in cache, instead of in a pass over every grad afterwards.
  /// Variables that are not its parameters, or have no grad, are skipped.
  bool scale_grad_and_check_inf_or_nan(
      const std::vector<const Variable*>& which, float s, bool write,
      double* norm2 = nullptr);
  /// The sum of squares of every grad (fp32 accumulation).
  double grad_norm_squared() const;

  float learning_rate() const { return learning_rate_; }
  void set_learning_rate(float lr);

  /// The state of every parameter, by name (arrays are shared, not copied).
  std::map<std::string, SolverState> states() const;
  /// Replaces states by name; every name must be a parameter of this solver
  /// and every array must have the parameter's shape and the solver's state
  /// names.
  void set_states(const std::map<std::string, SolverState>& states);
  /// The names of each parameter's state arrays.
  virtual std::vector<std::string> state_names() const = 0;

  /// The largest step count t over the parameters.
  uint32_t t() const;

 protected:
  explicit Solver(float learning_rate);
  /// True when update_impl reaches the weights, grads and states only
  /// through apply_rule and state_data (update_rule.hpp): then update() runs
  /// it on the device the grads live on, whose backend has a kernel for
  /// every rule. False (the default) keeps the update on the host, as for
  /// Lars and Lamb, which take whole-parameter norms there.
  virtual bool elementwise_update() const { return false; }
  /// The decoupled weight decay rate applied inside update_impl; negative
  /// for solvers whose weight decay goes into the grad.
  virtual float decoupled_decay_rate() const { return -1.0f; }
  /// True for solvers whose update takes the weight decay rate itself
  /// (NNabla's fused weight decay: Lars, Lamb, Lion), where adding rate * w
  /// to the grad would not be the same step.
  virtual bool fuses_weight_decay() const { return false; }
  /// The rate given to weight_decay() since the last update() (0 if none),
  /// for solvers that fuse weight decay.
  float fused_decay_rate() const { return fused_decay_rate_; }
  /// Updates n fp32 weights w from fp32 grads g with this parameter's state;
  /// state.t is already the step count of this step (1 on the first).
  /// g holds grads still to be multiplied by ctx.grad_scale: apply_rule
  /// does it, and an update that reads g itself (Lars's norm) must too.
  /// w, g and the states live where ctx says (on the host unless
  /// elementwise_update()).
  virtual void update_impl(const UpdateContext& ctx, float* w, const float* g,
                           SolverState& state, int64_t n) = 0;
  /// Fresh state for a parameter of `shape` (zeros by default).
  virtual SolverState make_state(const Shape& shape) const;

  float learning_rate_;

 private:
  struct Entry {
    VariablePtr var;
    SolverState state;
  };
  // Rebuilds positions_ after params_ changed.
  void index_parameters();
  // The 16-bit copy of var's weights on the host that its update writes
  // beside the fp32 ones (UpdateContext::copy), or f32 for none.
  Dtype kept_copy(const VariablePtr& var, const UpdateContext& ctx) const;
  // One parameter's step of update(grad_scale), when its grad was written.
  void update_parameter(const std::string& key, const VariablePtr& var,
                        float grad_scale);
  // What weight_decay(rate) does besides the grads: for solvers that fuse
  // it, keeps the rate (returns false); for decoupled decay, checks the
  // rate (false); else true: the grads take rate * w. `asked` words the
  // caller's call with the rate, for the mismatch's message only (built
  // then, not every step).
  bool decay_into_grads(float rate, const char* caller,
                        std::string (*asked)(float));
  // grad += rate * w for one parameter with a grad (on its update device).
  void decay_grad(const VariablePtr& var, float rate);

  ParameterList params_;
  std::map<std::string, Entry> entries_;
  // Where each variable sits in params_ (a variable held under two names
  // sits twice): the loss scaler's per-grad check finds its parameter in
  // O(1), not by a search of the list for every grad the backward finishes.
  std::unordered_map<const Variable*, std::vector<size_t>> positions_;
  float fused_decay_rate_ = 0.0f;
};

using SolverPtr = std::shared_ptr<Solver>;

/// Checks a hyper-parameter: throws std::invalid_argument "[<solver>] <name>
/// must be ... , got v" unless lo <= v (and v < hi when hi is given).
void check_hyper(const std::string& solver, const std::string& name, float v,
                 float lo, bool lo_inclusive = true);

}  // namespace mg
