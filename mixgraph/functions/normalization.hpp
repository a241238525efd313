// LayerNormalization, GroupNormalization, InstanceNormalization,
// TensorNormalization and WeightStandardization: arrays normalised by their
// own statistics (no running averages), computed in fp32.
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <vector>

namespace mg {

struct LayerNormalizationOptions {
  /// The axes that index samples; the statistics run over all the others.
  std::vector<int> batch_axis = {0};
  float eps = 1e-5f;
  /// Whether gamma (beta) is left out of the inputs.
  bool no_scale = false;
  bool no_bias = false;

  MG_FIELDS(batch_axis, eps, no_scale, no_bias);
};

struct GroupNormalizationOptions {
  /// The channels are split into num_groups groups of consecutive channels.
  int num_groups = 1;
  int channel_axis = 1;
  std::vector<int> batch_axis = {0};
  float eps = 1e-5f;
  bool no_scale = false;
  bool no_bias = false;

  MG_FIELDS(num_groups, channel_axis, batch_axis, eps, no_scale, no_bias);
};

struct InstanceNormalizationOptions {
  int channel_axis = 1;
  std::vector<int> batch_axis = {0};
  float eps = 1e-5f;
  bool no_scale = false;
  bool no_bias = false;

  MG_FIELDS(channel_axis, batch_axis, eps, no_scale, no_bias);
};

struct TensorNormalizationOptions {
  /// The axes that index the statistics (their shape is x's with 1 on the
  /// other axes): (1,) on (N, C, H, W) normalizes per channel over N, H and
  /// W, as batch normalization with batch statistics.
  std::vector<int> axes = {1};
  float eps = 1e-5f;
  bool no_scale = false, no_bias = false;

  MG_FIELDS(axes, eps, no_scale, no_bias);
};

struct WeightStandardizationOptions {
  /// The output-channel axis: one mean and deviation per channel.
  int channel_axis = 0;
  float eps = 1e-5f;

  MG_FIELDS(channel_axis, eps);
};

/// The shared rule. Inputs x, then beta unless no_bias, then gamma unless
/// no_scale (NNabla's order); beta and gamma have x's number of dimensions
/// and broadcast to it. y = (x - mean) / sqrt(var + eps) * gamma + beta, with
/// the mean and the (biased) variance taken over each statistics group in
/// fp32. The subclasses say which elements form a group.
class Normalization : public Function {
 public:
  // Backward reads x and gamma, not beta.
  bool grad_depends_input_data(int i) const override {
    return i != beta_index();
  }

  /// x seen as `view` (x's shape, a channel axis split in two for groups),
  /// with `kept[d]` true on the axes that index a statistics group.
  struct Layout {
    Shape view;
    std::vector<bool> kept;
  };

 protected:
  Normalization(float eps, bool no_scale, bool no_bias)
      : eps_(eps), no_scale_(no_scale), no_bias_(no_bias) {}
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The grouping for x; throws for bad axes.
  virtual Layout layout(const Shape& x) const = 0;
  int beta_index() const { return no_bias_ ? -1 : 1; }
  int gamma_index() const { return no_scale_ ? -1 : (no_bias_ ? 1 : 2); }

  const float eps_;
  const bool no_scale_, no_bias_;
  Layout layout_;
};

namespace decl {
/// LayerNormalization's declaration.
inline constexpr FunctionDeclOf<LayerNormalizationOptions> LayerNormalization{
    {"LayerNormalization",
     "layer_normalization",
     {Port{"x"}, Port{"beta", Port::floating, true, true},
      Port{"gamma", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// Statistics per sample (per index of the batch axes) over all other axes.
class LayerNormalization
    : public FunctionWith<LayerNormalizationOptions, Normalization> {
 public:
  explicit LayerNormalization(const LayerNormalizationOptions& opts)
      : FunctionWith(opts, opts.eps, opts.no_scale, opts.no_bias) {}

 protected:
  Layout layout(const Shape& x) const override;
};

namespace decl {
/// GroupNormalization's declaration.
inline constexpr FunctionDeclOf<GroupNormalizationOptions> GroupNormalization{
    {"GroupNormalization",
     "group_normalization",
     {Port{"x"}, Port{"beta", Port::floating, true, true},
      Port{"gamma", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// Statistics per sample and group of num_groups consecutive channels.
class GroupNormalization
    : public FunctionWith<GroupNormalizationOptions, Normalization> {
 public:
  explicit GroupNormalization(const GroupNormalizationOptions& opts)
      : FunctionWith(opts, opts.eps, opts.no_scale, opts.no_bias) {}

 protected:
  Layout layout(const Shape& x) const override;
};

namespace decl {
/// InstanceNormalization's declaration.
inline constexpr FunctionDeclOf<InstanceNormalizationOptions>
    InstanceNormalization{{"InstanceNormalization",
                           "instance_normalization",
                           {Port{"x"}, Port{"beta", Port::floating, true, true},
                            Port{"gamma", Port::floating, true, true}},
                           {Port{"y"}}}};
}  // namespace decl

/// Statistics per sample and channel, over the remaining (spatial) axes.
class InstanceNormalization
    : public FunctionWith<InstanceNormalizationOptions, Normalization> {
 public:
  explicit InstanceNormalization(const InstanceNormalizationOptions& opts)
      : FunctionWith(opts, opts.eps, opts.no_scale, opts.no_bias) {}

 protected:
  Layout layout(const Shape& x) const override;
};

namespace decl {
/// TensorNormalization's declaration.
inline constexpr FunctionDeclOf<TensorNormalizationOptions> TensorNormalization{
    {"TensorNormalization",
     "tensor_normalization",
     {Port{"x"}, Port{"beta", Port::floating, true, true},
      Port{"gamma", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// Statistics per index of `axes`, over all other axes (NNabla's general
/// normalization).
class TensorNormalization
    : public FunctionWith<TensorNormalizationOptions, Normalization> {
 public:
  explicit TensorNormalization(const TensorNormalizationOptions& opts)
      : FunctionWith(opts, opts.eps, opts.no_scale, opts.no_bias) {}

 protected:
  Layout layout(const Shape& x) const override;
};

namespace decl {
/// WeightStandardization's declaration.
inline constexpr FunctionDeclOf<WeightStandardizationOptions>
    WeightStandardization{{"WeightStandardization",
                           "weight_standardization",
                           {Port{"w"}},
                           {Port{"y"}}}};
}  // namespace decl

/// A weight standardized per output channel: (w - mean) / sqrt(var + eps)
/// over the channel's other axes (Qiao et al. 2019), before it enters a
/// convolution or affine; no beta or gamma.
class WeightStandardization
    : public FunctionWith<WeightStandardizationOptions, Normalization> {
 public:
  explicit WeightStandardization(const WeightStandardizationOptions& opts)
      : FunctionWith(opts, opts.eps, true, true) {}

 protected:
  Layout layout(const Shape& x) const override;
};

namespace functions {
/// Tensor normalization with statistics per index of `axes`; beta and
/// gamma may be null (then left out).
VariablePtr tensor_normalization(const VariablePtr& x, const VariablePtr& beta,
                                 const VariablePtr& gamma,
                                 std::vector<int> axes = {1},
                                 float eps = 1e-5f);
/// w standardized per index of channel_axis.
VariablePtr weight_standardization(const VariablePtr& w, int channel_axis = 0,
                                   float eps = 1e-5f);
/// Layer normalization; beta and gamma may be null (then left out).
VariablePtr layer_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma,
                                std::vector<int> batch_axis = {0},
                                float eps = 1e-5f);
/// Group normalization over num_groups groups of channels.
VariablePtr group_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma, int num_groups,
                                int channel_axis = 1,
                                std::vector<int> batch_axis = {0},
                                float eps = 1e-5f);
/// Instance normalization: per sample and channel.
VariablePtr instance_normalization(
    const VariablePtr& x, const VariablePtr& beta, const VariablePtr& gamma,
    int channel_axis = 1, std::vector<int> batch_axis = {0}, float eps = 1e-5f);
}  // namespace functions

namespace parametric_functions {
/// Layer normalization with "beta" (0) and "gamma" (1) in
/// `scope`/layer_normalization (group and instance normalization: in
/// `scope`/group_normalization, `scope`/instance_normalization), of x's
/// shape with 1 on the batch axes, as NNabla creates them.
VariablePtr layer_normalization(const VariablePtr& x, ParameterScope scope,
                                std::vector<int> batch_axis = {0},
                                float eps = 1e-5f);
/// Group normalization with "beta" and "gamma" of shape (1, C, 1, ...).
VariablePtr group_normalization(const VariablePtr& x, int num_groups,
                                ParameterScope scope, int channel_axis = 1,
                                std::vector<int> batch_axis = {0},
                                float eps = 1e-5f);
/// Instance normalization with "beta" and "gamma" of shape (1, C, 1, ...).
VariablePtr instance_normalization(const VariablePtr& x, ParameterScope scope,
                                   int channel_axis = 1,
                                   std::vector<int> batch_axis = {0},
                                   float eps = 1e-5f);
}  // namespace parametric_functions

}  // namespace mg
