// Solvers on a device: what a device backend gives the Solver base (update
// rules applied by kernels, the fused unscale and inf/nan check), registered
// by backend name from solvers/cuda/. No CUDA header here.
#pragma once

#include <cstdint>
#include <string>
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

/// The solver operations of one device backend. Which solvers run on the
/// device is the solver's own word (Solver::elementwise_update); the
/// backend has a kernel for every rule of MG_UPDATE_RULES.
class SolverDeviceOps {
 public:
  virtual ~SolverDeviceOps() = default;
  /// rule(w[i], g[i] * grad_scale, states[0][i], ...) for i < n on device
  /// `index`, where `rule` points to a trivially copyable rule: the one at
  /// position `rule_slot` of MG_UPDATE_RULES (solvers/rule_list.hpp), which
  /// also says how many state arrays `states` holds.
  virtual void apply_rule(int index, int rule_slot, const void* rule, int64_t n,
                          float* w, const float* g, float grad_scale,
                          float* const* states) = 0;
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

}  // namespace mg
