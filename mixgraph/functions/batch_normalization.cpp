#include <mixgraph/functions/batch_normalization.hpp>

#include <cmath>
#include <stdexcept>
#include <tuple>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>

namespace mg {

namespace {

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(axes[i]);
  }
  return s + "}";
}

// The kept axes, normalised to [0, ndim); checked consecutive and ascending,
// so x is (batch axes, channels, the rest) in memory.
std::vector<int> normalized_axes(const Shape& x, const std::vector<int>& axes,
                                 const std::string& tag) {
  const int nd = static_cast<int>(x.size());
  if (axes.empty()) {
    throw std::invalid_argument(msg(tag, "axes must name at least one axis"));
  }
  std::vector<int> a;
  for (int axis : axes) {
    if (axis < -nd || axis >= nd) {
      throw std::invalid_argument(
          msg(tag, "axis ", axis, " in axes ", axes_str(axes),
              " is out of range for x with shape ", shape_str(x)));
    }
    a.push_back(axis < 0 ? axis + nd : axis);
  }
  for (size_t i = 1; i < a.size(); ++i) {
    if (a[i] != a[i - 1] + 1) {
      throw std::invalid_argument(
          msg(tag, "axes ", axes_str(axes), " for x with shape ", shape_str(x),
              " must be distinct consecutive axes in increasing order"));
    }
  }
  return a;
}

}  // namespace

Shape batch_normalization_param_shape(const Shape& x,
                                      const std::vector<int>& axes,
                                      const std::string& tag) {
  Shape p(x.size(), 1);
  for (int a : normalized_axes(x, axes, tag)) p[a] = x[a];
  return p;
}

void BatchNormalization::setup_layout(const Variables& in) {
  const Shape& x = in[0]->shape();
  const Shape p = batch_normalization_param_shape(x, opts_.axes, tag());
  const char* names[] = {"x", "beta", "gamma", "mean", "variance"};
  for (int i = 1; i < 5; ++i) {
    if (in[i]->shape() != p) {
      throw std::invalid_argument(
          msg(tag(), names[i], " with shape ", shape_str(in[i]->shape()),
              " must have shape ", shape_str(p), " (x's shape ", shape_str(x),
              " with 1 outside axes ", axes_str(opts_.axes), ")"));
    }
  }
  if (!(opts_.decay_rate >= 0.0f && opts_.decay_rate <= 1.0f)) {
    throw std::invalid_argument(msg(tag(), "decay_rate must be in [0, 1], got ",
                                    std::to_string(opts_.decay_rate)));
  }
  if (!(opts_.eps >= 0.0f) || !std::isfinite(opts_.eps)) {
    throw std::invalid_argument(msg(tag(),
                                    "eps must be finite and non-negative, got ",
                                    std::to_string(opts_.eps)));
  }
  const auto axes = normalized_axes(x, opts_.axes, tag());
  const int nd = static_cast<int>(x.size());
  size0_ = shape_size(x, 0, axes.front());
  size1_ = shape_size(x, axes.front(), axes.back() + 1);
  size2_ = shape_size(x, axes.back() + 1, nd);
}

void BatchNormalization::check_batch_values(const Shape& x, int ranks) const {
  // The running variance uses n / (n - 1): a single value has none. Over
  // several ranks, one value on each is enough.
  const int64_t n = size0_ * size2_;
  if (!opts_.batch_stat || n * ranks >= 2) return;
  const std::string need =
      ranks > 1 ? " on this rank; batch statistics (batch_stat = true) over " +
                      std::to_string(ranks) + " ranks need at least 1 on each"
                : "; batch statistics (batch_stat = true) need at least 2";
  throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                  " and axes ", axes_str(opts_.axes), " has ",
                                  n, " value per channel", need));
}

int BatchNormalization::input_port(int i) const {
  if (i == 0) return 0;
  // The ports given: x, beta, gamma, mean, variance less those left out.
  const int skipped_before_gamma = opts_.no_bias ? 1 : 0;
  const int skipped = skipped_before_gamma + (opts_.no_scale ? 1 : 0);
  if (!opts_.no_bias && i == 1) return 1;
  if (!opts_.no_scale && i == 2 - skipped_before_gamma) return 2;
  return Function::input_port(i + skipped);
}

Variables BatchNormalization::full_inputs(const Variables& in) {
  if (!opts_.no_bias && !opts_.no_scale) return in;
  Variables full{in[0]};
  size_t next = 1;
  full.push_back(opts_.no_bias ? zero_beta_.get() : in[next++]);
  full.push_back(opts_.no_scale ? one_gamma_.get() : in[next++]);
  full.insert(full.end(), in.begin() + next, in.end());
  return full;
}

std::vector<bool> BatchNormalization::full_flags(
    const std::vector<bool>& flags) const {
  if (!opts_.no_bias && !opts_.no_scale) return flags;
  std::vector<bool> full{flags[0]};
  size_t next = 1;
  full.push_back(opts_.no_bias ? false : bool(flags[next++]));
  full.push_back(opts_.no_scale ? false : bool(flags[next++]));
  full.insert(full.end(), flags.begin() + next, flags.end());
  return full;
}

void BatchNormalization::setup_impl(const Variables& in, const Variables& out) {
  // NNabla's count: x, mean and variance, with beta and gamma unless left
  // out (the graph's check allows 3 to 5 whatever the flags); more only
  // where the declaration takes more (FusedBatchNormalization's z).
  const size_t n = 3 + (opts_.no_bias ? 0 : 1) + (opts_.no_scale ? 0 : 1);
  if (in.size() < n || (in.size() > n && max_inputs() == 5)) {
    throw std::invalid_argument(
        msg(tag(), "takes ", n, " inputs (x, ", opts_.no_bias ? "" : "beta, ",
            opts_.no_scale ? "" : "gamma, ", "mean, variance) with no_bias ",
            opts_.no_bias ? "true" : "false", " and no_scale ",
            opts_.no_scale ? "true" : "false", ", but got ", in.size(),
            " with shapes ", shapes_str(in)));
  }
  if (opts_.no_bias || opts_.no_scale) {
    const Shape p =
        batch_normalization_param_shape(in[0]->shape(), opts_.axes, tag());
    if (opts_.no_bias && (!zero_beta_ || zero_beta_->shape() != p)) {
      zero_beta_ = std::make_shared<Variable>(p);
      zero_beta_->data()->fill(0.0);
    }
    if (opts_.no_scale && (!one_gamma_ || one_gamma_->shape() != p)) {
      one_gamma_ = std::make_shared<Variable>(p);
      one_gamma_->data()->fill(1.0);
    }
  }
  setup_full(full_inputs(in), out);
}

void BatchNormalization::forward_impl(const Variables& in,
                                      const Variables& out) {
  forward_full(full_inputs(in), out);
}

void BatchNormalization::backward_impl(const Variables& in,
                                       const Variables& out,
                                       const std::vector<bool>& propagate_down,
                                       const std::vector<bool>& accum) {
  backward_full(full_inputs(in), out, full_flags(propagate_down),
                full_flags(accum));
}

void BatchNormalization::setup_full(const Variables& in, const Variables& out) {
  setup_layout(in);
  check_batch_values(in[0]->shape(), 1);
  out[0]->reshape(in[0]->shape());
}

CommunicatorPtr SyncBatchNormalization::communicator() const {
  return comm_ ? comm_ : default_communicator();
}

void SyncBatchNormalization::setup_full(const Variables& in,
                                        const Variables& out) {
  if (sync_opts_.group != "world") {
    throw std::invalid_argument(
        msg(tag(), "group '", sync_opts_.group,
            "' is not supported: the only group is "
            "'world' (every rank of the communicator)"));
  }
  setup_layout(in);
  // A rank may hold a single value per channel when others hold more.
  check_batch_values(in[0]->shape(), communicator()->size());
  out[0]->reshape(in[0]->shape());
}

void SyncBatchNormalization::sum_over_ranks(float* values, int64_t n) {
  const CommunicatorPtr comm = communicator();
  if (comm->size() == 1) return;
  if (comm->device() != "cpu") {
    throw std::invalid_argument(
        msg(tag(), "the ", comm->name(), " communicator reduces buffers on ",
            comm->device(),
            ", but the statistics are on the host: give an "
            "MPI (or local) communicator"));
  }
  comm->all_reduce(values, n, ReduceOp::sum);
}

namespace functions {

VariablePtr batch_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma,
                                const VariablePtr& mean,
                                const VariablePtr& variance,
                                const BatchNormalizationOptions& opts) {
  // NNabla's input lists: beta left out under no_bias, gamma under
  // no_scale.
  std::vector<VariablePtr> in{x};
  for (const auto& [v, left_out, name, option, value] :
       {std::tuple{beta, opts.no_bias, "beta", "no_bias", "0"},
        std::tuple{gamma, opts.no_scale, "gamma", "no_scale", "1"}}) {
    if (left_out && v) {
      throw std::invalid_argument(
          msg("[batch_normalization] ", name, " is given, but ", option,
              " is true: pass a null ", name, " (it is then ", value,
              ") or set ", option, " false"));
    }
    if (!left_out) in.push_back(v);
  }
  in.push_back(mean);
  in.push_back(variance);
  return apply_function1(decl::BatchNormalization, opts, in);
}

VariablePtr sync_batch_normalization(
    const VariablePtr& x, const VariablePtr& beta, const VariablePtr& gamma,
    const VariablePtr& mean, const VariablePtr& variance, CommunicatorPtr comm,
    const SyncBatchNormalizationOptions& opts) {
  // apply_function1 with the communicator handed over before setup runs.
  auto fn = create_function(decl::SyncBatchNormalization, opts);
  static_cast<SyncBatchNormalization&>(*fn).set_communicator(std::move(comm));
  return connect(std::make_shared<FunctionNode>(
                     std::move(fn),
                     std::vector<VariablePtr>{x, beta, gamma, mean, variance}),
                 1)
      .front();
}

}  // namespace functions

namespace parametric_functions {

namespace {

// The layer's parameters in `scope`, created on first use.
struct Layer {
  VariablePtr beta, gamma, mean, var;
};

Layer layer_parameters(const VariablePtr& x, ParameterScope scope,
                       const BatchNormalizationParams& params,
                       const std::string& tag) {
  if (!x) throw std::invalid_argument(msg(tag, "x is a null variable"));
  const Shape p = batch_normalization_param_shape(x->shape(), params.axes, tag);
  const bool learn = !params.fix_parameters;
  return {
      params.no_bias
          ? nullptr
          : scope.get_or_create("beta", p, constant_initializer(0.0f), learn),
      params.no_scale
          ? nullptr
          : scope.get_or_create("gamma", p, constant_initializer(1.0f), learn),
      scope.get_or_create("mean", p, constant_initializer(0.0f), false),
      scope.get_or_create("var", p, constant_initializer(1.0f), false)};
}

// Sync and fused batch normalization take all five inputs.
void refuse_left_out(const BatchNormalizationParams& params,
                     const std::string& tag) {
  if (params.no_scale || params.no_bias) {
    throw std::invalid_argument(
        msg(tag,
            "no_scale and no_bias are for batch_normalization only: this "
            "layer learns both beta and gamma"));
  }
}

}  // namespace

VariablePtr batch_normalization(const VariablePtr& x, ParameterScope scope,
                                bool batch_stat,
                                const BatchNormalizationParams& params) {
  const Layer l =
      layer_parameters(x, scope["bn"], params, "[batch_normalization] ");
  BatchNormalizationOptions opts;
  opts.axes = params.axes;
  opts.decay_rate = params.decay_rate;
  opts.eps = params.eps;
  opts.batch_stat = batch_stat;
  opts.no_scale = params.no_scale;
  opts.no_bias = params.no_bias;
  return functions::batch_normalization(x, l.beta, l.gamma, l.mean, l.var,
                                        opts);
}

VariablePtr sync_batch_normalization(const VariablePtr& x, ParameterScope scope,
                                     CommunicatorPtr comm, bool batch_stat,
                                     const BatchNormalizationParams& params) {
  refuse_left_out(params, "[sync_batch_normalization] ");
  const Layer l =
      layer_parameters(x, scope["bn"], params, "[sync_batch_normalization] ");
  SyncBatchNormalizationOptions opts;
  opts.axes = params.axes;
  opts.decay_rate = params.decay_rate;
  opts.eps = params.eps;
  opts.batch_stat = batch_stat;
  return functions::sync_batch_normalization(x, l.beta, l.gamma, l.mean, l.var,
                                             std::move(comm), opts);
}

VariablePtr fused_batch_normalization(const VariablePtr& x,
                                      const VariablePtr& z,
                                      ParameterScope scope, bool batch_stat,
                                      const BatchNormalizationParams& params,
                                      const std::string& nonlinearity) {
  refuse_left_out(params, decl::FusedBatchNormalization.tag());
  const Layer l = layer_parameters(x, scope["bn"], params,
                                   decl::FusedBatchNormalization.tag());
  FusedBatchNormalizationOptions opts;
  opts.axes = params.axes;
  opts.decay_rate = params.decay_rate;
  opts.eps = params.eps;
  opts.batch_stat = batch_stat;
  opts.nonlinearity = nonlinearity;
  return functions::fused_batch_normalization(x, l.beta, l.gamma, l.mean, l.var,
                                              z, opts);
}

}  // namespace parametric_functions

}  // namespace mg
