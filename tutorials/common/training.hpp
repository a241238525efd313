// The plumbing every tutorial shares, so that each one shows only its
// training step: Fashion-MNIST batches, progress, test accuracy at each
// epoch's end, CSV curves and checkpoints that resume bit for bit.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/csv.hpp>
#include <mixgraph/utils/data/batch_iterator.hpp>
#include <mixgraph/utils/data/fashion_mnist.hpp>
#include <mixgraph/utils/interrupt.hpp>
#include <mixgraph/utils/progress.hpp>

#include "lenet.hpp"
#include "options.hpp"

namespace tutorial {

/// What a run did, resumed parts included.
struct Summary {
  std::string type_config;
  int64_t steps = 0;
  int64_t skipped_steps = 0;
  int64_t epochs_done = 0;
  // In %, of the weights after the last step (or at the last epoch's end,
  // after Ctrl-C); NaN before any test and for weights that are not finite.
  double test_accuracy = std::numeric_limits<double>::quiet_NaN();
  double train_seconds = 0;  // training steps only (no evaluation, no I/O)
  int64_t images = 0;
  // The loss (with --ranks, its mean over the ranks): means over this
  // process's first and last 10 steps, and the last step's.
  float first_loss = 0, last_loss = 0;
  float final_loss = 0;
  uint64_t weights_hash = 0;  // FNV-1a of the fp32 weights
  size_t peak_bytes = 0;  // the allocator peak of the run's device (cpu or GPU)
  bool interrupted = false;
  // Data-parallel runs (--ranks): the ranks, and this process's grad
  // all-reduce (GradReducer's stats: what backward did not hide).
  int ranks = 1;
  double allreduce_seconds = 0;  // in GradReducer::finish()
  int64_t allreduce_steps = 0;
  int buckets = 0;
  int64_t buckets_during_backward = 0;  // launched before backward returned
  double images_per_second() const {
    return train_seconds > 0 ? images / train_seconds : 0.0;
  }
};

/// One training run of the LeNet on Fashion-MNIST. A tutorial builds its
/// graph on `params`, attaches its loss and solver, and writes its step in
///   while (run.running()) { ...; run.step_done(scale, applied); }
///   return run.finish();
class Training {
 public:
  /// Loads the training set and seeds mg's RNG with --seed (the initial
  /// weights); `name` names the default checkpoint, <name>.ckpt.h5.
  Training(std::string name, const Options& options);
  ~Training();
  Training(const Training&) = delete;
  Training& operator=(const Training&) = delete;

  const Options& options() const { return options_; }
  /// The communicator of a --ranks run, else null.
  const mg::CommunicatorPtr& communicator() const { return comm_; }
  /// True on the rank that prints and writes (rank 0, or alone).
  bool leader() const { return !comm_ || comm_->rank() == 0; }
  /// The updater's options for this run: the communicator and the buckets
  /// of --ranks on top of `scaling`.
  mg::DynamicLossScalingOptions updater_options(
      mg::DynamicLossScalingOptions scaling) const;
  /// Where the network's parameters live.
  mg::ParameterScope params;

  /// Fills x (N, 1, 28, 28) with the next batch's images scaled to [0, 1]
  /// and t (N, 1) with their labels; N is --batch-size (this rank's shard
  /// of the step's batch with --ranks).
  void feed(const mg::VariablePtr& x, const mg::VariablePtr& t);

  /// What the run trains: the loss shown in the progress bar, the solver
  /// (and loss scaling updater) whose state checkpoints hold. Builds the
  /// test graph in the current default context.
  void attach(mg::VariablePtr loss, mg::SolverPtr solver,
              mg::DynamicLossScalingUpdater* updater = nullptr);
  /// A value of the tutorial's own (a hand-written loss scaler's scale and
  /// counter) that checkpoints save and --resume restores.
  void keep(const std::string& name, float* value);
  void keep(const std::string& name, int* value);

  /// True while steps remain (--epochs, --iterations) and no Ctrl-C came.
  /// The first call resumes from --checkpoint when --resume is given.
  bool running();
  /// Ends a step that used `loss_scale` (false `applied`: it was skipped):
  /// progress and CSV of the loss (with --ranks, its mean over the ranks);
  /// at an epoch's end the test accuracy and a checkpoint.
  void step_done(float loss_scale = 1.0f, bool applied = true);
  /// Tests the last weights when the run stopped within an epoch (not after
  /// Ctrl-C), saves the last checkpoint, prints the summary and a
  /// machine-readable "RESULT key=value ..." line; returns the exit status
  /// (130 after Ctrl-C, 1 if the loss is not finite).
  int finish();

  const Summary& summary() const { return summary_; }
  /// The test accuracy in % of the current weights.
  double evaluate();
  /// True once Ctrl-C asked every run to stop.
  static bool interrupted();

 private:
  void resume();
  /// Sets the summary's test accuracy to that of the current weights (NaN
  /// when they are not finite).
  void test_now();
  void save_checkpoint();
  mg::CheckpointExtras extras() const;
  void start_bar();
  std::string checkpoint_path() const;

  std::string name_;
  Options options_;
  mg::CommunicatorPtr comm_;
  std::shared_ptr<const mg::ImageDataset> train_, test_;
  mg::BatchIterator batches_;
  mg::VariablePtr loss_, test_x_, test_t_, test_error_;
  mg::SolverPtr solver_;
  mg::DynamicLossScalingUpdater* updater_ = nullptr;
  std::vector<std::pair<std::string, float*>> kept_floats_;
  std::vector<std::pair<std::string, int*>> kept_ints_;
  std::unique_ptr<mg::CsvWriter> csv_;
  std::unique_ptr<mg::ProgressBar> bar_;
  std::unique_ptr<mg::InterruptGuard> interrupt_;
  int64_t bar_steps_ = 0, bar_images_ = 0;
  double bar_seconds_ = 0;
  bool started_ = false, epoch_ended_ = false, show_scale_ = false;
  int64_t last_saved_ = -1;
  int64_t tested_at_ = -1;  // the step the test accuracy is of
  std::chrono::steady_clock::time_point step_start_;
  std::deque<float> recent_losses_;
  std::vector<float> first_losses_;
  float scale_ = 1.0f;
  Summary summary_;
};

}  // namespace tutorial
