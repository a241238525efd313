// Data-parallel training: the grads of a parameter list all-reduced across
// the ranks of a Communicator in fp32 buckets, launched from backward's
// grad-ready callbacks so that they overlap the rest of backward (as
// PyTorch's DDP; NNabla's communicator callbacks), and the parameters
// broadcast from one rank.
//
//   auto comm = mg::mpi_communicator();
//   mg::broadcast_parameters(*comm, params.parameters());  // same start
//   mg::GradReducer reducer(comm, params.parameters());
//   solver->zero_grad();
//   loss->forward();
//   loss->backward(1.0f, true, reducer.callback());
//   reducer.finish();  // grads now hold the mean over the ranks
//   solver->update();
//
// DynamicLossScalingUpdater does the same when its options name a
// communicator, and agrees on overflow across the ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

class SyncedArray;

/// How grads are reduced.
struct DataParallelOptions {
  /// The size of a bucket: grads are copied into flat fp32 buffers of about
  /// this many bytes and each is reduced in one call. A grad of this size or
  /// more gets a bucket of its own; a bucket of one grad is reduced in the
  /// grad's own buffer (no copies). 1 MB (DDP's first bucket; its others
  /// are 25 MB): a bucket leaves only when its last grad is final, and at
  /// 25 MB a small model's grads are one bucket that leaves at the end of
  /// backward (the main job's LeNet, 2 ranks on one 2-core machine: 4.3-7.7%
  /// of the step not hidden at 25 MB, 1.3-1.7% at 1 MB). Reduces through
  /// NCCL on GPUs may want larger ones: unmeasured.
  int64_t bucket_bytes = 1 << 20;
  /// true: a bucket is launched as soon as backward has finished every grad
  /// in it; false: all buckets after backward (to measure the overlap).
  bool overlap = true;
  /// mean (each rank's loss is a mean over its own batch, so the mean of
  /// the ranks' grads is the grad of the whole batch's mean) or sum.
  ReduceOp op = ReduceOp::mean;
};

/// What the reduces of the steps so far took.
struct AllReduceStats {
  int64_t steps = 0;
  int buckets = 0;    // per step
  int64_t bytes = 0;  // reduced per step
  /// Buckets launched from backward's callbacks, before backward returned,
  /// over all steps (the rest were launched by finish()).
  int64_t launched_during_backward = 0;
  /// Time in finish(): the reduce time backward did not hide (launching
  /// what was left, waiting, copying back), and the same for the last step.
  double finish_seconds = 0, last_finish_seconds = 0;
  /// Time spent in the callbacks (copying grads into buckets, launching).
  double callback_seconds = 0;
};

/// All-reduces the grads of a parameter list across a communicator's
/// ranks, in fp32 buckets. Every rank must build it from the same parameter
/// list (same names, shapes, order) and run the same graph. Parameters
/// without need_grad are left out. A parameter whose grad no backward wrote
/// (zero_grad's deferred zero) takes part as zeros and its grad stays
/// unwritten, so the solver still skips it on every rank.
class GradReducer {
 public:
  GradReducer(CommunicatorPtr comm, const ParameterList& params,
              const DataParallelOptions& options = {});
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  /// For backward's on_grad_ready, in the backward that writes the step's
  /// grads for the last time (the last of accumulated batches). With
  /// options.overlap = false it does nothing.
  GradReadyCallback callback();
  /// Launches the buckets not launched yet, waits for every reduce and
  /// writes the reduced grads back. Every rank calls it once per step.
  /// Between a bucket's launch and finish() its grads are being reduced
  /// (some in place): neither read nor write them.
  void finish();
  /// Ends a step that will not reach finish() (backward threw after some
  /// buckets left): waits for the reduces in flight, so that none writes a
  /// grad afterwards, and forgets the step; the grads are then undefined
  /// (zero them). The next step starts afresh.
  void abort();

  const CommunicatorPtr& communicator() const { return comm_; }
  const DataParallelOptions& options() const { return options_; }
  const AllReduceStats& stats() const { return stats_; }
  /// The bucket each parameter went into, by name, in launch order (for
  /// tests and for tuning bucket_bytes).
  std::vector<std::vector<std::string>> buckets() const;
  /// True when it was built for exactly these variables, in this order.
  bool covers(const ParameterList& params) const;

 private:
  struct Slot {
    std::string name;
    VariablePtr var;
    int bucket = 0;
    int64_t offset = 0;  // in the bucket's buffer, in floats
    int64_t size = 0;
    bool ready = false;
  };
  struct Bucket {
    std::vector<int> slots;
    int64_t size = 0;  // floats
    int ready = 0;
    bool launched = false;
    std::shared_ptr<SyncedArray> buffer;  // allocated at first use
  };
  void on_ready(Variable& leaf);
  void launch(int bucket);
  void forget_step();  // no slot ready, no bucket launched

  CommunicatorPtr comm_;
  DataParallelOptions options_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const Variable*, int> slot_of_;
  std::vector<const Variable*> order_;  // the list it was built for
  bool step_open_ = false;
  AllReduceStats stats_;
};

/// Copies every parameter's data from rank `root` to the others (fp32, the
/// masters), so that all ranks start from the same weights.
void broadcast_parameters(Communicator& comm, const ParameterList& params,
                          int root = 0);

/// All-reduces the grads of `params` at once (no overlap): GradReducer's
/// finish() without callbacks.
void all_reduce_grads(const CommunicatorPtr& comm, const ParameterList& params,
                      const DataParallelOptions& options = {});

}  // namespace mg
