// BatchNormalization: normalise over every axis but `axes`, with running
// statistics kept in fp32 whatever the compute type. SyncBatchNormalization:
// the same with the batch statistics of every rank of a communicator.
#pragma once

#include <string>
#include <vector>

#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct BatchNormalizationOptions {
  /// The kept (channel) axes: one axis, or several consecutive ones.
  std::vector<int> axes = {1};
  /// running = decay_rate * running + (1 - decay_rate) * batch statistic.
  float decay_rate = 0.9f;
  /// Added to the variance before the square root.
  float eps = 1e-5f;
  /// true: normalise with the batch statistics and update the running ones
  /// (training); false: normalise with the running statistics (inference).
  bool batch_stat = true;
  /// NNabla's: no gamma input (a scale of 1) ...
  bool no_scale = false;
  /// ... and no beta input (a bias of 0); the inputs left out are skipped,
  /// so with both the inputs are (x, mean, variance).
  bool no_bias = false;

  /// The fields FusedBatchNormalization shares (its NNabla arguments lack
  /// no_scale and no_bias).
  template <class V>
  void shared_fields(V&& v) {
    v("axes", axes);
    v("decay_rate", decay_rate);
    v("eps", eps);
    v("batch_stat", batch_stat);
  }
  template <class V>
  void fields(V&& v) {
    shared_fields(v);
    v("no_scale", no_scale);
    v("no_bias", no_bias);
  }
};

namespace decl {
/// BatchNormalization's declaration.
inline constexpr FunctionDeclOf<BatchNormalizationOptions> BatchNormalization{
    {"BatchNormalization",
     "batch_normalization",
     {Port{"x"}, Port{"beta", Port::floating, true, true},
      Port{"gamma", Port::floating, true, true},
      Port{"mean", Port::float32, false},
      Port{"variance", Port::float32, false}},
     {Port{"y"}}}};
}  // namespace decl

/// Inputs x, beta, gamma, mean, variance (beta left out with no_bias, gamma
/// with no_scale: NNabla's lists of 3 to 5); the last four have x's shape with
/// 1 outside `axes` ((1, C, 1, 1) for NCHW and axes {1}). y = (x - mu) /
/// sqrt(var + eps) * gamma + beta, per channel. In training the running mean
/// and variance (inputs 3 and 4) are updated in place in forward, the
/// variance with the unbiased batch variance (n / (n - 1)) as NNabla does;
/// they are read and written as fp32 and get no gradient.
class BatchNormalization : public FunctionWith<BatchNormalizationOptions> {
 public:
  using FunctionWith::FunctionWith;
  // Backward reads x and gamma; the running statistics only in inference.
  bool grad_depends_input_data(int i) const override {
    const int port = input_port(i);
    return port == 0 || port == 2 || (port >= 3 && !opts_.batch_stat);
  }
  // beta and gamma may be left out (no_bias, no_scale): the inputs after
  // them move up.
  int input_port(int i) const override;

 protected:
  // The kernels see all five inputs: a beta or gamma left out is given as
  // a constant (0 or 1) of the parameters' shape that gets no grad.
  void setup_impl(const Variables& in, const Variables& out) final;
  void forward_impl(const Variables& in, const Variables& out) final;
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) final;
  /// setup, forward and backward with (x, beta, gamma, mean, variance, ...).
  virtual void setup_full(const Variables& in, const Variables& out);
  virtual void forward_full(const Variables& in, const Variables& out) = 0;
  virtual void backward_full(const Variables& in, const Variables& out,
                             const std::vector<bool>& propagate_down,
                             const std::vector<bool>& accum) = 0;
  // The checks of the parameter shapes and options, and size0_ .. size2_.
  void setup_layout(const Variables& in);
  // Throws unless there are 2 values per channel for batch statistics:
  // size0_ * size2_ on each of `ranks` ranks.
  void check_batch_values(const Shape& x, int ranks) const;
  // Sums n per-channel values of the batch statistics (the value counts,
  // the sums of x, of the squared deviations, of dy and dy (x - mean)) over
  // every rank whose batch they cover: nothing here, where x is the whole
  // batch; SyncBatchNormalization all-reduces them. The kernels call it
  // between their steps.
  virtual void sum_over_ranks(float* /*values*/, int64_t /*n*/) {}
  // x seen as (size0, size1, size2): batch axes, channels, the rest.
  int64_t size0_ = 0, size1_ = 0, size2_ = 0;

 private:
  // The inputs as the kernels see them, and flags to match.
  Variables full_inputs(const Variables& in);
  std::vector<bool> full_flags(const std::vector<bool>& flags) const;
  // The beta (0) and gamma (1) of no_bias and no_scale.
  std::shared_ptr<Variable> zero_beta_, one_gamma_;
};

struct SyncBatchNormalizationOptions {
  /// The ranks whose batches make the statistics: "world" (every rank of
  /// the communicator) is the only group.
  std::string group = "world";
  /// BatchNormalizationOptions' fields.
  std::vector<int> axes = {1};
  float decay_rate = 0.9f;
  float eps = 1e-5f;
  bool batch_stat = true;

  /// (The communicator is not an argument: a function read back uses the
  /// default one.)
  MG_FIELDS(group, axes, decay_rate, eps, batch_stat);
};

namespace decl {
/// SyncBatchNormalization's declaration.
inline constexpr FunctionDeclOf<SyncBatchNormalizationOptions>
    SyncBatchNormalization{{"SyncBatchNormalization",
                            "sync_batch_normalization",
                            {Port{"x"}, Port{"beta"}, Port{"gamma"},
                             Port{"mean", Port::float32, false},
                             Port{"variance", Port::float32, false}},
                            {Port{"y"}}}};
}  // namespace decl

/// BatchNormalization whose batch statistics are those of the union of the
/// batches of every rank of a communicator (NNabla's SyncBatchNormalization):
/// the per-channel counts and sums (of x, then of the squared deviations
/// from the global mean) are all-reduced in fp32, so every rank normalises
/// and updates its running statistics (unbiased with the global count) as
/// one process with the whole batch would. Backward all-reduces the sums of
/// dy and dy (x - mean) that dx needs, so dx is the whole batch's for this
/// rank's rows; the grads of beta and gamma stay this rank's sums (the data-
/// parallel grad all-reduce adds them up, as NNabla since v1.32). With
/// batch_stat = false it is BatchNormalization (no communication). The
/// communicator is given to the builder; without one, and in a network read
/// from a file, it is default_communicator() when forward runs. Its buffers
/// must be on the host (device() "cpu": MPI or local).
class SyncBatchNormalization : public BatchNormalization {
 public:
  explicit SyncBatchNormalization(const SyncBatchNormalizationOptions& opts)
      : BatchNormalization(BatchNormalizationOptions{
            opts.axes, opts.decay_rate, opts.eps, opts.batch_stat}),
        sync_opts_(opts) {}
  const SyncBatchNormalizationOptions& options() const { return sync_opts_; }
  /// The communicator given to the builder (null: the default one).
  void set_communicator(CommunicatorPtr comm) { comm_ = std::move(comm); }
  /// The communicator the statistics are reduced over now.
  CommunicatorPtr communicator() const;

 protected:
  void setup_full(const Variables& in, const Variables& out) override;
  void sum_over_ranks(float* values, int64_t n) override;
  const SyncBatchNormalizationOptions sync_opts_;
  CommunicatorPtr comm_;
};

/// The shape of BatchNormalization's beta, gamma, mean and variance for x:
/// x's shape with 1 outside `axes`. Throws std::invalid_argument (with `tag`)
/// for axes that are empty, out of range, repeated or not consecutive.
Shape batch_normalization_param_shape(const Shape& x,
                                      const std::vector<int>& axes,
                                      const std::string& tag);

namespace functions {
/// Batch normalization of x with the given parameters and running stats;
/// with opts.no_bias (no_scale) beta (gamma) is null and left out of the
/// inputs, as NNabla's lists leave it.
VariablePtr batch_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma,
                                const VariablePtr& mean,
                                const VariablePtr& variance,
                                const BatchNormalizationOptions& opts = {});

/// Batch normalization with the batch statistics of every rank of `comm`
/// (null: default_communicator() at forward).
VariablePtr sync_batch_normalization(
    const VariablePtr& x, const VariablePtr& beta, const VariablePtr& gamma,
    const VariablePtr& mean, const VariablePtr& variance,
    CommunicatorPtr comm = nullptr,
    const SyncBatchNormalizationOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct BatchNormalizationParams {
  std::vector<int> axes = {1};
  float decay_rate = 0.9f;
  float eps = 1e-5f;
  /// Whether beta and gamma are fixed (need_grad = false).
  bool fix_parameters = false;
  /// NNabla's no_scale and no_bias: no gamma (1) or no beta (0) is created
  /// or learned. PF::batch_normalization only.
  bool no_scale = false;
  bool no_bias = false;
};

/// A batch normalization layer whose parameters live in `scope`/bn, created on
/// first use with NNabla's names and values: "beta" (0), "gamma" (1), "mean"
/// (0) and "var" (1); mean and var have need_grad = false.
VariablePtr batch_normalization(const VariablePtr& x, ParameterScope scope,
                                bool batch_stat = true,
                                const BatchNormalizationParams& params = {});

/// The same layer (the same parameters in `scope`) normalising with the
/// batch statistics of every rank of `comm` (null: the default
/// communicator at forward): F::sync_batch_normalization.
VariablePtr sync_batch_normalization(
    const VariablePtr& x, ParameterScope scope, CommunicatorPtr comm = nullptr,
    bool batch_stat = true, const BatchNormalizationParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
