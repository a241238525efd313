// Dynamic loss scaling: DynamicLossScalingUpdater wraps a solver.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <mixgraph/solvers/data_parallel.hpp>
#include <mixgraph/solvers/solver.hpp>

namespace mg {

/// What happens when a step overflows while the scale is already min_scale.
enum class MinScalePolicy { warn, error };

/// The updater's options; the defaults are NNabla's, except the initial
/// scale: 2^16 as PyTorch's GradScaler (NNabla starts at 8). Losses are fp32
/// under half, so a seed of 2^16 does not overflow; a too large start only
/// costs a skipped step per halving, a too small one underflows small grads
/// until `interval` clean steps have grown it.
struct DynamicLossScalingOptions {
  /// false: a plain updater for float and bfloat16 training, which need no
  /// loss scale: backward is seeded with 1 and the scale stays 1 (scale,
  /// scaling_factor, interval, min_scale and max_scale are not used and
  /// options() reads 1 for the three scales). Accumulation, weight decay and
  /// clipping work as with scaling. The inf/nan check still runs (one
  /// read-only pass over the grads, the same pass that takes the norm when
  /// clipping): a non-finite step is skipped and counted, with the warning
  /// or error of at_min_scale.
  bool loss_scaling = true;
  float scale = 65536.0f;       // initial loss scale (2^16)
  float scaling_factor = 2.0f;  // back off by it on overflow, grow by it
  int interval = 2000;          // grow after this many applied steps in a row
  bool clear_buffer = true;     // free intermediates during forward/backward
  int accum_grad = 1;           // batches whose grads add up to one step
  std::optional<float> weight_decay;  // solver->weight_decay(rate) per step
  float min_scale = 1.0f;             // never backs off below
  float max_scale = 16777216.0f;      // never grows above (2^24)
  MinScalePolicy at_min_scale = MinScalePolicy::warn;
  /// Clips the unscaled grads to this global L2 norm before the step.
  std::optional<float> clip_grad_by_global_norm;
  /// How many of the latest scales scale_history() keeps: a ring, so a long
  /// run's memory stays bounded. At least 1.
  int scale_history_length = 1024;
  /// Data-parallel training across the communicator's ranks (null: this
  /// process alone). The updater broadcasts the solver's parameters from
  /// rank 0 when it is made (every rank starts from the same weights),
  /// all-reduces the grads in buckets launched from backward's grad-ready
  /// callbacks (data_parallel says how), and agrees on inf/nan with one
  /// all-reduce of one value, so every rank skips or applies the same steps
  /// and the scales never diverge.
  CommunicatorPtr communicator;
  DataParallelOptions data_parallel;
};

/// The updater's counters, saved in checkpoints.
struct LossScalerState {
  float scale = 65536.0f;
  int counter = 0;  // applied steps since the scale last changed
  int64_t applied_steps = 0;
  int64_t skipped_steps = 0;
};

/// One training step with a dynamic loss scale:
///   zero grads; accum_grad times: feeder(), forward, backward(scale);
///   check every grad for inf/nan in one read-only pass (which also takes
///   the global norm when clipping);
///   on overflow: scale /= factor (not below min_scale), skip the step;
///   else: update(1 / scale), which unscales (and clips) inside the update's
///   own pass, and after `interval` applied steps in a row scale *= factor
///   (not above max_scale).
/// With weight decay (which adds to the unscaled, clipped grads) at a scale
/// other than 1, or a scale below 1 (where unscaling can overflow), the
/// check's pass also writes the unscaled grads. So after update() the grads
/// hold the values backward wrote (scaled) when neither applies, and
/// unscaled ones when one does.
/// A skipped step changes nothing in the solver: no weight decay, no
/// momentum, its step count t stays.
/// With options.loss_scaling = false it is the plain updater of float and
/// bfloat16 training: the same step at a scale fixed at 1.
/// With options.communicator every rank runs the same step on its own batch
/// and the grads are the mean over the ranks before the check.
class DynamicLossScalingUpdater {
 public:
  using Feeder = std::function<void()>;
  DynamicLossScalingUpdater(SolverPtr solver, VariablePtr loss, Feeder feeder,
                            const DynamicLossScalingOptions& options = {});

  /// One step; returns false when it was skipped for an overflow.
  bool update();

  float scale() const { return state_.scale; }
  int64_t applied_steps() const { return state_.applied_steps; }
  int64_t skipped_steps() const { return state_.skipped_steps; }
  /// The scales the latest update() calls ran with, oldest first: the last
  /// options().scale_history_length of them (a ring; applied_steps() +
  /// skipped_steps() counts them all). back() is the latest step's.
  std::vector<float> scale_history() const;
  const DynamicLossScalingOptions& options() const { return options_; }
  const SolverPtr& solver() const { return solver_; }
  /// The grad reducer of a data-parallel run (its stats), or null.
  const GradReducer* grad_reducer() const { return reducer_.get(); }

  LossScalerState state() const { return state_; }
  /// Restores counters and scale (from a checkpoint); checks the scale is in
  /// [min_scale, max_scale].
  void set_state(const LossScalerState& state);

 private:
  SolverPtr solver_;
  VariablePtr loss_;
  Feeder feeder_;
  DynamicLossScalingOptions options_;
  LossScalerState state_;
  std::vector<float> history_;  // a ring of scale_history_length scales
  size_t history_next_ = 0;     // where the next scale goes once it is full
  std::unique_ptr<GradReducer> reducer_;  // with a communicator
};

}  // namespace mg
