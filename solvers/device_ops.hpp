// Solvers on a device: what a device backend gives the Solver base (update
// rules applied by kernels, the fused unscale and inf/nan check), registered
// by backend name from solvers/cuda/. No CUDA header here.
#pragma once

#include <cstdint>
#include <string>
#include <typeindex>
#include <vector>

#include <mixgraph/contexts/dtype.hpp>

namespace mg {

/// One grad of a fused pass: n elements of `dtype` read at `in`; the scaled
/// values are written as fp32 to `out` (which may be `in` for float, or
/// null to only read).
struct FusedGrad {
  const void* in;
  Dtype dtype;
  float* out;
  int64_t n;
};

/// The solver operations of one device backend.
class SolverDeviceOps {
 public:
  virtual ~SolverDeviceOps() = default;
  /// Whether update() of the solver named `solver` ("Adam") runs on the
  /// device: its update_impl reaches the weights, grads and states only
  /// through apply_rule and state_data (Lars and Lamb also take norms on
  /// the host, so they do not).
  virtual bool runs(const std::string& solver) const = 0;
  /// rule(w[i], g[i] * grad_scale, states[0][i], ...) for i < n on device
  /// `index`, where `rule` points to a trivially copyable rule of type
  /// `rule_type`. Throws std::runtime_error when the backend has no kernel
  /// for the rule.
  virtual void apply_rule(int index, std::type_index rule_type,
                          const void* rule, int64_t n, float* w, const float* g,
                          float grad_scale, float* const* states,
                          int num_states) = 0;
  /// For every grad: out = in * scale when out is given. Returns whether
  /// any scaled value is inf or nan, and with norm2 also their sum of
  /// squares (accumulated in double). One launch per dtype, one host read.
  virtual bool scale_check(int index, const std::vector<FusedGrad>& grads,
                           float scale, double* norm2) = 0;
};

/// Registers `ops` (not owned; it lives as long as the program) for the
/// devices of backend `name` ("cuda").
void register_solver_device_ops(const std::string& name, SolverDeviceOps* ops);
/// The ops registered for backend `name`, or null.
SolverDeviceOps* find_solver_device_ops(const std::string& name);

namespace detail {

/// Where apply_rule and state_data run in this thread: set by Solver::update
/// around one parameter's update_impl; null (the default) is the host.
struct RuleDevice {
  SolverDeviceOps* ops;
  int index;
  std::string device;  // "cuda:0"
};
const RuleDevice* current_rule_device();

/// Makes `device` the rule device of this thread while it lives.
class RuleDeviceGuard {
 public:
  explicit RuleDeviceGuard(const RuleDevice* device);
  ~RuleDeviceGuard();
  RuleDeviceGuard(const RuleDeviceGuard&) = delete;
  RuleDeviceGuard& operator=(const RuleDeviceGuard&) = delete;

 private:
  const RuleDevice* previous_;
};

}  // namespace detail

}  // namespace mg
