#include <algorithm>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <stdexcept>

namespace mg {

namespace {

std::vector<int> batch_axes(const std::vector<int>& axes, const Shape& x,
                            const std::string& tag) {
  return axes_of_shape(axes, x, tag, "batch_axis");
}

// The channel axis in [0, ndim), not one of the batch axes.
int channel_axis_of(int axis, const std::vector<int>& batch, const Shape& x,
                    const std::string& tag) {
  const int n = axis_of_shape(axis, x, tag, "channel_axis");
  if (std::find(batch.begin(), batch.end(), n) != batch.end()) {
    throw std::invalid_argument(
        msg(tag, "channel_axis ", axis, " is also a batch axis"));
  }
  return n;
}

// x's shape with 1 everywhere but `keep`.
Shape param_shape(const Shape& x, const std::vector<int>& keep) {
  Shape s(x.size(), 1);
  for (int a : keep) s[a] = x[a];
  return s;
}

}  // namespace

void Normalization::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const size_t expected = 1 + !no_bias_ + !no_scale_;
  if (in.size() != expected) {
    throw std::invalid_argument(
        msg(tag(), "takes ", expected, " inputs (x", (no_bias_ ? "" : ", beta"),
            (no_scale_ ? "" : ", gamma"), ") with no_bias ",
            (no_bias_ ? "true" : "false"), " and no_scale ",
            (no_scale_ ? "true" : "false"), ", but got ", in.size()));
  }
  layout_ = layout(x);
  for (int i : {beta_index(), gamma_index()}) {
    if (i < 0) continue;
    const Shape& p = in[i]->shape();
    bool ok = p.size() == x.size();
    for (size_t d = 0; ok && d < p.size(); ++d) ok = p[d] == 1 || p[d] == x[d];
    if (!ok) {
      throw std::invalid_argument(
          msg(tag(), (i == beta_index() ? "beta" : "gamma"), " with shape ",
              shape_str(p), " must have the dimensions of x with shape ",
              shape_str(x), ", each 1 or x's size"));
    }
  }
  out[0]->reshape(x);
}

Normalization::Layout LayerNormalization::layout(const Shape& x) const {
  Layout l{x, std::vector<bool>(x.size(), false)};
  for (int a : batch_axes(opts_.batch_axis, x, tag())) l.kept[a] = true;
  return l;
}

Normalization::Layout InstanceNormalization::layout(const Shape& x) const {
  const auto batch = batch_axes(opts_.batch_axis, x, tag());
  Layout l{x, std::vector<bool>(x.size(), false)};
  for (int a : batch) l.kept[a] = true;
  l.kept[channel_axis_of(opts_.channel_axis, batch, x, tag())] = true;
  return l;
}

Normalization::Layout TensorNormalization::layout(const Shape& x) const {
  Layout l{x, std::vector<bool>(x.size(), false)};
  for (int a : axes_of_shape(opts_.axes, x, tag())) l.kept[a] = true;
  return l;
}

Normalization::Layout WeightStandardization::layout(const Shape& x) const {
  Layout l{x, std::vector<bool>(x.size(), false)};
  l.kept[channel_axis_of(opts_.channel_axis, {}, x, tag())] = true;
  return l;
}

Normalization::Layout GroupNormalization::layout(const Shape& x) const {
  const auto batch = batch_axes(opts_.batch_axis, x, tag());
  const int c = channel_axis_of(opts_.channel_axis, batch, x, tag());
  const int g = opts_.num_groups;
  if (g <= 0 || x[c] % g != 0) {
    throw std::invalid_argument(
        msg(tag(), "num_groups ", g, " must be positive and divide the ", x[c],
            " channels of x with shape ", shape_str(x), " on axis ", c));
  }
  // The channel axis c becomes (groups, channels per group) at c and c + 1.
  Layout l;
  for (int a = 0; a < static_cast<int>(x.size()); ++a) {
    const bool in_batch =
        std::find(batch.begin(), batch.end(), a) != batch.end();
    if (a == c) {
      l.view.push_back(g);
      l.kept.push_back(true);
      l.view.push_back(x[c] / g);
      l.kept.push_back(false);
    } else {
      l.view.push_back(x[a]);
      l.kept.push_back(in_batch);
    }
  }
  return l;
}

namespace functions {

namespace {

std::vector<VariablePtr> norm_inputs(const VariablePtr& x,
                                     const VariablePtr& beta,
                                     const VariablePtr& gamma) {
  std::vector<VariablePtr> in{x};
  if (beta) in.push_back(beta);
  if (gamma) in.push_back(gamma);
  return in;
}

}  // namespace

VariablePtr layer_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma,
                                std::vector<int> batch_axis, float eps) {
  return apply_function1(
      decl::LayerNormalization,
      LayerNormalizationOptions{std::move(batch_axis), eps, !gamma, !beta},
      norm_inputs(x, beta, gamma));
}

VariablePtr tensor_normalization(const VariablePtr& x, const VariablePtr& beta,
                                 const VariablePtr& gamma,
                                 std::vector<int> axes, float eps) {
  return apply_function1(
      decl::TensorNormalization,
      TensorNormalizationOptions{std::move(axes), eps, !gamma, !beta},
      norm_inputs(x, beta, gamma));
}

VariablePtr weight_standardization(const VariablePtr& w, int channel_axis,
                                   float eps) {
  return apply_function1(decl::WeightStandardization,
                         WeightStandardizationOptions{channel_axis, eps}, {w});
}

VariablePtr group_normalization(const VariablePtr& x, const VariablePtr& beta,
                                const VariablePtr& gamma, int num_groups,
                                int channel_axis, std::vector<int> batch_axis,
                                float eps) {
  return apply_function1(
      decl::GroupNormalization,
      GroupNormalizationOptions{num_groups, channel_axis, std::move(batch_axis),
                                eps, !gamma, !beta},
      norm_inputs(x, beta, gamma));
}

VariablePtr instance_normalization(const VariablePtr& x,
                                   const VariablePtr& beta,
                                   const VariablePtr& gamma, int channel_axis,
                                   std::vector<int> batch_axis, float eps) {
  return apply_function1(
      decl::InstanceNormalization,
      InstanceNormalizationOptions{channel_axis, std::move(batch_axis), eps,
                                   !gamma, !beta},
      norm_inputs(x, beta, gamma));
}

}  // namespace functions

namespace parametric_functions {

namespace {

// "beta" (0) and "gamma" (1) of `shape` in scope.
std::pair<VariablePtr, VariablePtr> beta_gamma(ParameterScope scope,
                                               const Shape& shape) {
  return {scope.get_or_create("beta", shape, constant_initializer(0.0f)),
          scope.get_or_create("gamma", shape, constant_initializer(1.0f))};
}

const Shape& shape_of(const VariablePtr& x, const char* tag) {
  if (!x)
    throw std::invalid_argument(msg(std::string(tag), "x is a null variable"));
  return x->shape();
}

}  // namespace

VariablePtr layer_normalization(const VariablePtr& x, ParameterScope scope,
                                std::vector<int> batch_axis, float eps) {
  const char* tag = "[layer_normalization] ";
  const Shape& s = shape_of(x, tag);
  Shape p = s;
  for (int a : batch_axes(batch_axis, s, tag)) p[a] = 1;
  auto [beta, gamma] = beta_gamma(scope["layer_normalization"], p);
  return functions::layer_normalization(x, beta, gamma, std::move(batch_axis),
                                        eps);
}

VariablePtr group_normalization(const VariablePtr& x, int num_groups,
                                ParameterScope scope, int channel_axis,
                                std::vector<int> batch_axis, float eps) {
  const char* tag = "[group_normalization] ";
  const Shape& s = shape_of(x, tag);
  const int c =
      channel_axis_of(channel_axis, batch_axes(batch_axis, s, tag), s, tag);
  auto [beta, gamma] =
      beta_gamma(scope["group_normalization"], param_shape(s, {c}));
  return functions::group_normalization(
      x, beta, gamma, num_groups, channel_axis, std::move(batch_axis), eps);
}

VariablePtr instance_normalization(const VariablePtr& x, ParameterScope scope,
                                   int channel_axis,
                                   std::vector<int> batch_axis, float eps) {
  const char* tag = "[instance_normalization] ";
  const Shape& s = shape_of(x, tag);
  const int c =
      channel_axis_of(channel_axis, batch_axes(batch_axis, s, tag), s, tag);
  auto [beta, gamma] =
      beta_gamma(scope["instance_normalization"], param_shape(s, {c}));
  return functions::instance_normalization(x, beta, gamma, channel_axis,
                                           std::move(batch_axis), eps);
}

}  // namespace parametric_functions

}  // namespace mg
