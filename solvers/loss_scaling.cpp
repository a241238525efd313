#include <mixgraph/solvers/loss_scaling.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace mg {

namespace {

const char* kTag = "[DynamicLossScalingUpdater] ";

void check_scale(float scale, const DynamicLossScalingOptions& o) {
  if (!(scale >= o.min_scale && scale <= o.max_scale) || !std::isfinite(scale)) {
    throw std::invalid_argument(std::string(kTag) + "scale " +
                                std::to_string(scale) + " must be in [min_scale " +
                                std::to_string(o.min_scale) + ", max_scale " +
                                std::to_string(o.max_scale) + "]");
  }
}

void check_options(const DynamicLossScalingOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument(std::string(kTag) + what);
  };
  if (!(o.scaling_factor > 1.0f) || !std::isfinite(o.scaling_factor)) {
    fail("scaling_factor must be > 1, got " + std::to_string(o.scaling_factor));
  }
  if (o.interval < 1) fail("interval must be >= 1, got " + std::to_string(o.interval));
  if (o.accum_grad < 1) {
    fail("accum_grad must be >= 1, got " + std::to_string(o.accum_grad));
  }
  if (!(o.min_scale > 0.0f)) {
    fail("min_scale must be > 0, got " + std::to_string(o.min_scale));
  }
  if (!std::isfinite(o.max_scale)) fail("max_scale must be finite");
  if (o.min_scale > o.max_scale) {
    fail("min_scale " + std::to_string(o.min_scale) + " is above max_scale " +
         std::to_string(o.max_scale));
  }
  if (o.weight_decay && !(*o.weight_decay >= 0.0f)) {
    fail("weight_decay must be >= 0, got " + std::to_string(*o.weight_decay));
  }
  if (o.clip_grad_by_global_norm && !(*o.clip_grad_by_global_norm > 0.0f)) {
    fail("clip_grad_by_global_norm must be > 0, got " +
         std::to_string(*o.clip_grad_by_global_norm));
  }
  check_scale(o.scale, o);
}

}  // namespace

DynamicLossScalingUpdater::DynamicLossScalingUpdater(
    SolverPtr solver, VariablePtr loss, Feeder feeder,
    const DynamicLossScalingOptions& options)
    : solver_(std::move(solver)),
      loss_(std::move(loss)),
      feeder_(std::move(feeder)),
      options_(options) {
  if (!solver_) throw std::invalid_argument(std::string(kTag) + "solver is null");
  if (!loss_) throw std::invalid_argument(std::string(kTag) + "loss is null");
  if (!feeder_) throw std::invalid_argument(std::string(kTag) + "feeder is empty");
  check_options(options_);
  state_.scale = options_.scale;
}

void DynamicLossScalingUpdater::set_state(const LossScalerState& state) {
  check_scale(state.scale, options_);
  if (state.counter < 0 || state.applied_steps < 0 || state.skipped_steps < 0) {
    throw std::invalid_argument(std::string(kTag) +
                                "state counters must not be negative");
  }
  state_ = state;
}

bool DynamicLossScalingUpdater::update() {
  const float scale = state_.scale;
  history_.push_back(scale);
  solver_->zero_grad();
  // The scale stays fixed across accumulated batches: they add up in one
  // set of grads that is unscaled once.
  for (int i = 0; i < options_.accum_grad; ++i) {
    feeder_();
    loss_->forward(/*clear_buffer=*/false,
                   /*clear_no_need_grad=*/options_.clear_buffer);
    loss_->backward(scale, options_.clear_buffer);
  }
  // One pass checks every grad (and takes the global norm when clipping).
  // It only reads them, and update() unscales (and clips) inside its own
  // pass, unless weight decay must add to unscaled grads in memory, or a
  // scale below 1 could overflow them in the unscale: then this pass writes
  // the unscaled grads. (For scale >= 1 a grad is finite exactly when the
  // unscaled one is.)
  const bool unscale_first = options_.weight_decay || scale < 1.0f;
  const bool clip = options_.clip_grad_by_global_norm.has_value();
  double norm2 = 0.0;
  double* norm = clip ? &norm2 : nullptr;
  const bool overflow =
      unscale_first ? solver_->scale_grad_and_check_inf_or_nan(1.0f / scale, norm)
                    : solver_->check_inf_or_nan_grad(norm);
  if (overflow) {
    ++state_.skipped_steps;
    state_.counter = 0;
    if (scale <= options_.min_scale) {
      const std::string msg =
          std::string(kTag) + "gradients overflowed at the minimum loss scale " +
          std::to_string(options_.min_scale) + " (step " +
          std::to_string(state_.applied_steps + state_.skipped_steps) +
          "): the loss or the gradients are inf or nan without scaling; "
          "check the data, the learning rate, or lower min_scale";
      if (options_.at_min_scale == MinScalePolicy::error) {
        throw std::runtime_error(msg);
      }
      std::fprintf(stderr, "warning: %s\n", msg.c_str());
    }
    state_.scale = std::max(scale / options_.scaling_factor, options_.min_scale);
    return false;
  }
  // What update() multiplies the grads in memory by.
  float grad_scale = unscale_first ? 1.0f : 1.0f / scale;
  if (clip) {  // as Solver::clip_grad_by_global_norm, from the pass's norm
    const double total = std::sqrt(norm2) * grad_scale;  // unscaled
    const float max_norm = *options_.clip_grad_by_global_norm;
    if (total > max_norm) {
      const float factor = static_cast<float>(max_norm / total);
      if (options_.weight_decay) {
        solver_->scale_grad(factor);  // decay adds to the clipped grads
      } else {
        grad_scale *= factor;
      }
    }
  }
  if (options_.weight_decay) solver_->weight_decay(*options_.weight_decay);
  solver_->update(grad_scale);
  ++state_.applied_steps;
  if (++state_.counter >= options_.interval) {
    state_.scale = std::min(scale * options_.scaling_factor, options_.max_scale);
    state_.counter = 0;
  }
  return true;
}

}  // namespace mg
