#include "training.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include <mixgraph/utils/data/feed.hpp>

namespace tutorial {

namespace F = mg::functions;

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Both splits are loaded once per process and shared by every run.
std::shared_ptr<const mg::ImageDataset> dataset(const std::string& split,
                                                const std::string& dir) {
  static std::map<std::string, std::shared_ptr<const mg::ImageDataset>> cache;
  auto& slot = cache[split + "@" + dir];
  if (!slot) {
    slot = std::make_shared<const mg::ImageDataset>(
        mg::load_fashion_mnist(split, dir));
  }
  return slot;
}

uint64_t weights_hash(const mg::ParameterScope& params) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& [name, p] : params.parameters()) {
    const auto* bytes =
        reinterpret_cast<const unsigned char*>(p->data()->get<const float>());
    for (int64_t i = 0; i < p->size() * 4; ++i) {
      h = (h ^ bytes[i]) * 1099511628211ull;
    }
  }
  return h;
}

bool weights_finite(const mg::ParameterScope& params) {
  for (const auto& [name, p] : params.parameters()) {
    const float* w = p->data()->get<const float>();
    if (!std::all_of(w, w + p->size(),
                     [](float v) { return std::isfinite(v); }))
      return false;
  }
  return true;
}

float mean(const std::deque<float>& v) {
  return v.empty() ? 0.0f
                   : std::accumulate(v.begin(), v.end(), 0.0f) / v.size();
}

std::string str(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace

namespace {
mg::CommunicatorPtr communicator_for(const Options& options) {
  return options.ranks ? mg::mpi_communicator() : nullptr;
}
}  // namespace

Training::Training(std::string name, const Options& options)
    : name_(std::move(name)),
      options_(options),
      comm_(communicator_for(options)),
      train_(dataset("train", options.data_dir)),
      // Every rank shuffles with the same seed and reads its slice.
      batches_(train_->size, options.batch_size, options.seed, true,
               comm_ ? comm_->rank() : 0, comm_ ? comm_->size() : 1) {
  mg::seed(options.seed);
  summary_.ranks = comm_ ? comm_->size() : 1;
}

mg::DynamicLossScalingOptions Training::updater_options(
    mg::DynamicLossScalingOptions scaling) const {
  scaling.communicator = comm_;
  scaling.data_parallel.bucket_bytes =
      static_cast<int64_t>(options_.bucket_mb * 1048576.0);
  scaling.data_parallel.overlap = options_.overlap;
  return scaling;
}

Training::~Training() { bar_.reset(); }

bool Training::interrupted() { return mg::InterruptGuard::requested(); }

void Training::feed(const mg::VariablePtr& x, const mg::VariablePtr& t) {
  const int64_t epoch = batches_.epoch();
  const auto& indices = batches_.next();
  mg::feed_images(*train_, indices, *x);
  mg::feed_labels(*train_, indices, *t);
  epoch_ended_ = epoch_ended_ || batches_.epoch() != epoch;
}

void Training::attach(mg::VariablePtr loss, mg::SolverPtr solver,
                      mg::DynamicLossScalingUpdater* updater) {
  loss_ = std::move(loss);
  solver_ = std::move(solver);
  updater_ = updater;
  show_scale_ = show_scale_ || updater != nullptr;
  summary_.type_config = mg::dtype_name(mg::default_context().type_config());
  // The test graph shares the parameters and evaluates a whole batch at a
  // time; it never runs backward.
  mg::NoGradGuard no_grad;
  const int64_t n = options_.batch_size;
  test_x_ = mg::make_variable({n, 1, train_->height, train_->width});
  test_t_ = mg::make_variable({n, 1});
  test_error_ = F::top_n_error(lenet(test_x_, params), test_t_);
}

void Training::keep(const std::string& name, float* value) {
  kept_floats_.emplace_back(name, value);
  show_scale_ = true;
}

void Training::keep(const std::string& name, int* value) {
  kept_ints_.emplace_back(name, value);
}

std::string Training::checkpoint_path() const {
  return options_.checkpoint.empty() ? name_ + ".ckpt.h5" : options_.checkpoint;
}

bool Training::running() {
  if (!started_) {
    if (!loss_) {
      throw std::logic_error("[Training] call attach(loss, solver) first");
    }
    started_ = true;
    // Ctrl-C: the loop stops after its step and saves where it is.
    interrupt_ = std::make_unique<mg::InterruptGuard>([this] {
      bar_.reset();
      save_checkpoint();
    });
    if (options_.resume) resume();
    if (!options_.csv.empty()) {
      csv_ = std::make_unique<mg::CsvWriter>(
          options_.csv,
          std::vector<std::string>{"step", "epoch", "loss", "loss_scale",
                                   "applied"},
          /*append=*/summary_.steps > 0);
    }
  }
  const bool more =
      batches_.epoch() < options_.epochs &&
      (options_.iterations == 0 || summary_.steps < options_.iterations);
  if (!more) {
    bar_.reset();
    return false;
  }
  if (comm_) {
    // Every rank stops at the same step (a rank that stopped alone would
    // leave the others waiting in the next all-reduce): one all-reduce of
    // the Ctrl-C flag. Rank 0 saves.
    float stop = mg::InterruptGuard::requested() ? 1.0f : 0.0f;
    comm_->all_reduce(&stop, 1, mg::ReduceOp::max);
    if (stop != 0.0f) {
      bar_.reset();
      save_checkpoint();
      return false;
    }
  } else if (interrupt_->stop()) {
    bar_.reset();
    return false;
  }
  if (!bar_) start_bar();
  step_start_ = std::chrono::steady_clock::now();
  return true;
}

void Training::start_bar() {
  int64_t total = batches_.batches_per_epoch() - batches_.index();
  if (options_.iterations > 0) {
    total = std::min(total, options_.iterations - summary_.steps);
  }
  const std::string label = summary_.type_config + " epoch " +
                            std::to_string(batches_.epoch() + 1) + "/" +
                            std::to_string(options_.epochs);
  bar_ = std::make_unique<mg::ProgressBar>(label, total, options_.log_every);
  bar_steps_ = bar_images_ = 0;
  bar_seconds_ = 0;
}

void Training::step_done(float loss_scale, bool applied) {
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - step_start_)
                             .count();
  float loss = loss_->data()->get<const float>()[0];
  // Each rank's loss is the mean over its shard: their mean is the global
  // batch's, the loss a single process would print (rank 0's alone is not).
  if (comm_) comm_->all_reduce(&loss, 1, mg::ReduceOp::mean);
  summary_.train_seconds += seconds;
  summary_.images += options_.batch_size * summary_.ranks;  // every rank's
  summary_.steps += 1;
  summary_.skipped_steps += applied ? 0 : 1;
  summary_.final_loss = loss;
  scale_ = loss_scale;
  show_scale_ = show_scale_ || loss_scale != 1.0f;
  if (first_losses_.size() < 10) first_losses_.push_back(loss);
  recent_losses_.push_back(loss);
  if (recent_losses_.size() > 10) recent_losses_.pop_front();
  if (csv_ && leader()) {
    csv_->row(summary_.steps, batches_.epoch() + (epoch_ended_ ? 0 : 1), loss,
              loss_scale, applied ? 1 : 0);
  }

  bar_steps_ += 1;
  bar_images_ += options_.batch_size * summary_.ranks;
  bar_seconds_ += seconds;
  char fields[160];
  std::snprintf(
      fields, sizeof fields, "loss %.4f  %s%.0f img/s%s", mean(recent_losses_),
      show_scale_ ? ("scale " + str(loss_scale) + "  ").c_str() : "",
      bar_seconds_ > 0 ? bar_images_ / bar_seconds_ : 0.0,
      summary_.skipped_steps
          ? ("  skipped " + std::to_string(summary_.skipped_steps)).c_str()
          : "");
  bar_->update(bar_steps_, fields);

  if (epoch_ended_) {
    epoch_ended_ = false;
    bar_.reset();
    summary_.epochs_done = batches_.epoch();
    test_now();
    save_checkpoint();
    std::printf(
        "epoch %lld/%d: test accuracy %.2f%%, %.0f img/s, %lld "
        "skipped steps; checkpoint %s\n",
        static_cast<long long>(summary_.epochs_done), options_.epochs,
        summary_.test_accuracy,
        bar_seconds_ > 0 ? bar_images_ / bar_seconds_ : 0.0,
        static_cast<long long>(summary_.skipped_steps),
        checkpoint_path().c_str());
    std::fflush(stdout);
  } else if (options_.checkpoint_every > 0 &&
             summary_.steps % options_.checkpoint_every == 0) {
    save_checkpoint();
  }
}

void Training::test_now() {
  // A network with a nan weight would score 100%: top_n_error counts the
  // classes scored above the label, and no comparison with nan is true.
  summary_.test_accuracy = weights_finite(params)
                               ? evaluate()
                               : std::numeric_limits<double>::quiet_NaN();
  tested_at_ = summary_.steps;
}

double Training::evaluate() {
  // The ranks hold the same weights: rank 0 evaluates for them all.
  if (!leader()) return std::numeric_limits<double>::quiet_NaN();
  if (!test_) test_ = dataset("test", options_.data_dir);
  return 100.0 *
         (1.0 - mg::evaluate_error_rate(*test_, test_x_, test_t_, test_error_));
}

mg::CheckpointExtras Training::extras() const {
  mg::CheckpointExtras e;
  e.set("data_iterator", batches_.state());
  e.set("steps", summary_.steps);
  e.set("skipped_steps", summary_.skipped_steps);
  e.set("epochs_done", summary_.epochs_done);
  e.set("test_accuracy", summary_.test_accuracy);
  e.set("tested_at", tested_at_);
  e.set("train_seconds", summary_.train_seconds);
  e.set("images", summary_.images);
  e.set("peak_bytes", static_cast<int64_t>(summary_.peak_bytes));
  for (const auto& [name, v] : kept_floats_) e.set("keep." + name, *v);
  for (const auto& [name, v] : kept_ints_) e.set("keep." + name, *v);
  return e;
}

void Training::save_checkpoint() {
  summary_.peak_bytes =
      std::max(summary_.peak_bytes,
               mg::device_memory_stats(mg::default_context().device()).peak);
  last_saved_ = summary_.steps;
  // The ranks hold the same weights, solver and updater states and
  // iterator position: rank 0's file resumes every rank.
  if (!leader()) return;
  mg::save_checkpoint(checkpoint_path(), params, *solver_, updater_,
                      summary_.steps, extras());
}

void Training::resume() {
  const std::string path = checkpoint_path();
  if (!file_exists(path)) {
    std::printf("%s: no checkpoint at %s yet, starting from step 0\n",
                name_.c_str(), path.c_str());
    return;
  }
  const mg::CheckpointInfo info =
      mg::load_checkpoint(path, params, *solver_, updater_);
  const mg::CheckpointExtras& e = info.extras;
  if (!e.has("data_iterator") || !e.has("steps")) {
    throw std::invalid_argument("[Training] " + path +
                                " has no data iterator or step count: it was "
                                "not written by a tutorial");
  }
  batches_.set_state(e.get_string("data_iterator"));
  summary_.steps = e.get_int("steps");
  summary_.skipped_steps = e.get_int("skipped_steps");
  summary_.epochs_done = e.get_int("epochs_done");
  summary_.test_accuracy = e.get_float("test_accuracy");
  // A checkpoint from before "tested_at" existed: finish() tests again.
  tested_at_ = e.has("tested_at") ? e.get_int("tested_at") : -1;
  summary_.train_seconds = e.get_float("train_seconds");
  summary_.images = e.get_int("images");
  summary_.peak_bytes = static_cast<size_t>(e.get_int("peak_bytes"));
  for (auto& [name, v] : kept_floats_) {
    *v = static_cast<float>(e.get_float("keep." + name));
  }
  for (auto& [name, v] : kept_ints_) {
    *v = static_cast<int>(e.get_int("keep." + name));
  }
  if (summary_.steps != info.iteration) {
    throw std::invalid_argument(
        "[Training] " + path + ": iteration " + std::to_string(info.iteration) +
        " disagrees with its step count " + std::to_string(summary_.steps));
  }
  last_saved_ = summary_.steps;
  if (!options_.csv.empty())
    mg::truncate_csv_rows(options_.csv, summary_.steps);
  std::printf(
      "%s: resumed from %s at step %lld (%lld epochs and %lld "
      "batches done)\n",
      name_.c_str(), path.c_str(), static_cast<long long>(summary_.steps),
      static_cast<long long>(batches_.epoch()),
      static_cast<long long>(batches_.index()));
}

int Training::finish() {
  bar_.reset();
  summary_.interrupted = interrupted();
  // A run that stopped within an epoch (--iterations) has not been tested
  // on its last weights (or at all): test them, so that the summary and the
  // checkpoint report them. A Ctrl-C stops without the wait.
  const bool test = started_ && !summary_.interrupted && summary_.steps > 0 &&
                    tested_at_ != summary_.steps;
  if (test) {
    test_now();
    if (leader() && std::isnan(summary_.test_accuracy)) {
      std::printf("%s: no test after step %lld: the weights are not finite\n",
                  name_.c_str(), static_cast<long long>(summary_.steps));
    } else if (leader()) {
      std::printf("%s: test accuracy %.2f%% after step %lld\n", name_.c_str(),
                  summary_.test_accuracy,
                  static_cast<long long>(summary_.steps));
    }
  }
  if (started_ && (test || last_saved_ != summary_.steps ||
                   !file_exists(checkpoint_path()))) {
    save_checkpoint();
  }
  // The losses of this process's steps (none when a finished run resumed).
  const bool stepped = !first_losses_.empty();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  summary_.first_loss = stepped ? std::accumulate(first_losses_.begin(),
                                                  first_losses_.end(), 0.0f) /
                                      first_losses_.size()
                                : nan;
  summary_.last_loss = stepped ? mean(recent_losses_) : nan;
  if (!stepped) summary_.final_loss = nan;
  summary_.weights_hash = weights_hash(params);
  summary_.peak_bytes =
      std::max(summary_.peak_bytes,
               mg::device_memory_stats(mg::default_context().device()).peak);
  if (updater_ && updater_->grad_reducer()) {
    const mg::AllReduceStats& st = updater_->grad_reducer()->stats();
    summary_.allreduce_seconds = st.finish_seconds;
    summary_.allreduce_steps = st.steps;
    summary_.buckets = st.buckets;
    summary_.buckets_during_backward = st.launched_during_backward;
  }
  const Summary& s = summary_;
  if (s.interrupted) {
    std::printf(
        "%s: interrupted at step %lld; checkpoint %s. Run again with "
        "--resume to continue.\n",
        name_.c_str(), static_cast<long long>(s.steps),
        checkpoint_path().c_str());
  }
  std::printf(
      "RESULT tutorial=%s type_config=%s steps=%lld skipped_steps=%lld "
      "first_loss=%.6g last_loss=%.6g final_loss=%.9g test_accuracy=%.2f "
      "images_per_second=%.1f peak_memory_mib=%.1f loss_scale=%g "
      "weights_hash=%016llx checkpoint=%s\n",
      name_.c_str(), s.type_config.c_str(), static_cast<long long>(s.steps),
      static_cast<long long>(s.skipped_steps), s.first_loss, s.last_loss,
      s.final_loss, s.test_accuracy, s.images_per_second(),
      s.peak_bytes / 1048576.0, updater_ ? updater_->scale() : scale_,
      static_cast<unsigned long long>(s.weights_hash),
      checkpoint_path().c_str());
  std::fflush(stdout);
  if (s.interrupted) return 130;
  return !stepped || std::isfinite(s.final_loss) ? 0 : 1;
}

}  // namespace tutorial
