#include <mixgraph/solvers/loss_scaling.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

const char* kTag = "[DynamicLossScalingUpdater] ";

void check_scale(float scale, const DynamicLossScalingOptions& o) {
  if (!(scale >= o.min_scale && scale <= o.max_scale) ||
      !std::isfinite(scale)) {
    throw std::invalid_argument(msg(kTag, "scale ", scale,
                                    " must be in [min_scale ", o.min_scale,
                                    ", max_scale ", o.max_scale, "]"));
  }
}

void check_options(const DynamicLossScalingOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument(msg(kTag, what));
  };
  if (!(o.scaling_factor > 1.0f) || !std::isfinite(o.scaling_factor)) {
    fail(msg("scaling_factor must be > 1, got ", o.scaling_factor));
  }
  if (o.interval < 1) fail(msg("interval must be >= 1, got ", o.interval));
  if (o.accum_grad < 1) {
    fail(msg("accum_grad must be >= 1, got ", o.accum_grad));
  }
  if (!(o.min_scale > 0.0f)) {
    fail(msg("min_scale must be > 0, got ", o.min_scale));
  }
  if (!std::isfinite(o.max_scale)) fail("max_scale must be finite");
  if (o.min_scale > o.max_scale) {
    fail(msg("min_scale ", o.min_scale, " is above max_scale ", o.max_scale));
  }
  if (o.weight_decay && !(*o.weight_decay >= 0.0f)) {
    fail(msg("weight_decay must be >= 0, got ", *o.weight_decay));
  }
  if (o.clip_grad_by_global_norm && !(*o.clip_grad_by_global_norm > 0.0f)) {
    fail(msg("clip_grad_by_global_norm must be > 0, got ",
             *o.clip_grad_by_global_norm));
  }
  if (o.scale_history_length < 1) {
    fail(
        msg("scale_history_length must be >= 1, got ", o.scale_history_length));
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
  if (!solver_) throw std::invalid_argument(msg(kTag, "solver is null"));
  if (!loss_) throw std::invalid_argument(msg(kTag, "loss is null"));
  if (!feeder_) throw std::invalid_argument(msg(kTag, "feeder is empty"));
  if (!options_.loss_scaling) {
    // A plain updater: the scale is 1 and never moves.
    options_.scale = options_.min_scale = options_.max_scale = 1.0f;
  }
  check_options(options_);
  state_.scale = options_.scale;
  if (options_.communicator) {
    broadcast_parameters(*options_.communicator, solver_->parameters());
  }
}

void DynamicLossScalingUpdater::set_state(const LossScalerState& state) {
  if (!options_.loss_scaling && state.scale != 1.0f) {
    throw std::invalid_argument(
        msg(kTag,
            "loss scaling is off (options.loss_scaling = false), so the "
            "scale must be 1, got ",
            state.scale, " (a checkpoint of a run with loss scaling?)"));
  }
  check_scale(state.scale, options_);
  if (state.counter < 0 || state.applied_steps < 0 || state.skipped_steps < 0) {
    throw std::invalid_argument(
        msg(kTag, "state counters must not be negative, got counter ",
            state.counter, ", applied_steps ", state.applied_steps,
            ", skipped_steps ", state.skipped_steps));
  }
  state_ = state;
}

std::vector<float> DynamicLossScalingUpdater::scale_history() const {
  std::vector<float> ordered(history_.begin() + history_next_, history_.end());
  ordered.insert(ordered.end(), history_.begin(),
                 history_.begin() + history_next_);
  return ordered;
}

bool DynamicLossScalingUpdater::update() {
  const float scale = state_.scale;
  const auto length = static_cast<size_t>(options_.scale_history_length);
  if (history_.size() < length) {
    history_.push_back(scale);
  } else {
    history_[history_next_] = scale;
    history_next_ = (history_next_ + 1) % length;
  }
  const CommunicatorPtr& comm = options_.communicator;
  if (comm && (!reducer_ || !reducer_->covers(solver_->parameters()))) {
    reducer_ = std::make_unique<GradReducer>(comm, solver_->parameters(),
                                             options_.data_parallel);
  }
  // Each grad is checked once (and the global norm taken when clipping).
  // The check only reads, and update() unscales (and clips) inside its own
  // pass, unless weight decay must add to unscaled grads in memory, or a
  // scale below 1 could overflow them in the unscale: then the check writes
  // the unscaled grads. (For scale >= 1 a grad is finite exactly when the
  // unscaled one is; at scale 1 the grads are already unscaled.)
  const bool unscale_first =
      (options_.weight_decay && scale != 1.0f) || scale < 1.0f;
  const float check_scale = unscale_first ? 1.0f / scale : 1.0f;
  const bool clip = options_.clip_grad_by_global_norm.has_value();
  bool overflow = false;
  double norm2 = 0.0;
  // Without a reduce after backward, the last backward checks each grad as
  // it finishes it, while it is still in cache: no pass over every grad
  // afterwards (for an MLP's 7 MB of fp32 grads, a few % of a step).
  // Grads on a device wait for the pass after backward: one launch for all
  // of them, not one (and a wait for its answer) per grad.
  std::unordered_set<const Variable*> checked;
  const GradReadyCallback check_when_ready = [&](Variable& leaf) {
    if (!leaf.grad() || leaf.grad()->array().head_device() != "cpu") return;
    double n2 = 0.0;
    overflow |= solver_->scale_grad_and_check_inf_or_nan(
        {&leaf}, check_scale, unscale_first, clip ? &n2 : nullptr);
    norm2 += n2;
    checked.insert(&leaf);
  };
  solver_->zero_grad();
  // The scale stays fixed across accumulated batches: they add up in one
  // set of grads that is unscaled once. The last batch's backward launches
  // the reduces of the grads it finishes.
  try {
    for (int i = 0; i < options_.accum_grad; ++i) {
      feeder_();
      loss_->forward(/*clear_buffer=*/false,
                     /*clear_no_need_grad=*/options_.clear_buffer);
      const bool last = i + 1 == options_.accum_grad;
      GradReadyCallback on_ready;
      if (last) on_ready = reducer_ ? reducer_->callback() : check_when_ready;
      loss_->backward(scale, options_.clear_buffer, on_ready);
    }
  } catch (...) {
    // Buckets that left before backward threw are reduced in place in
    // their grads: wait for them before the next step zeroes (frees) those.
    if (reducer_) {
      try {
        reducer_->abort();
      } catch (...) {  // the communicator's own failure: report the first
      }
    }
    throw;
  }
  if (reducer_) {
    reducer_->finish();
    double* norm = clip ? &norm2 : nullptr;
    overflow = unscale_first
                   ? solver_->scale_grad_and_check_inf_or_nan(check_scale, norm)
                   : solver_->check_inf_or_nan_grad(norm);
  } else {
    // The grads backward did not check (on a device, or not reached by
    // it), in one pass.
    std::vector<const Variable*> rest;
    for (const auto& kv : solver_->parameters()) {
      if (!checked.count(kv.second.get())) rest.push_back(kv.second.get());
    }
    double n2 = 0.0;
    overflow |= solver_->scale_grad_and_check_inf_or_nan(
        rest, check_scale, unscale_first, clip ? &n2 : nullptr);
    norm2 += n2;
  }
  if (comm) {
    // One decision for all ranks: skip if any rank saw inf or nan (the
    // reduced grads carry it to every rank anyway; this makes it certain,
    // whatever the reduce did with it).
    float any = overflow ? 1.0f : 0.0f;
    comm->all_reduce(&any, 1, ReduceOp::max);
    overflow = any != 0.0f;
  }
  if (overflow) {
    ++state_.skipped_steps;
    state_.counter = 0;
    if (scale <= options_.min_scale) {
      const int64_t step = state_.applied_steps + state_.skipped_steps;
      const std::string text =
          options_.loss_scaling
              ? msg(kTag, "gradients overflowed at the minimum loss scale ",
                    options_.min_scale, " (step ", step,
                    "): the loss or the gradients are inf or nan without "
                    "scaling; check the data, the learning rate, or lower "
                    "min_scale")
              : msg(kTag, "gradients are inf or nan (step ", step,
                    ") with loss scaling off: the step is skipped; check the "
                    "data and the learning rate");
      if (options_.at_min_scale == MinScalePolicy::error) {
        throw std::runtime_error(text);
      }
      std::fprintf(stderr, "warning: %s\n", text.c_str());
    }
    state_.scale =
        std::max(scale / options_.scaling_factor, options_.min_scale);
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
    state_.scale =
        std::min(scale * options_.scaling_factor, options_.max_scale);
    state_.counter = 0;
  }
  return true;
}

}  // namespace mg
