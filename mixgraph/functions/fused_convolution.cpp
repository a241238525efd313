#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/convolution.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/fused_convolution.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/registry.hpp>

#include <stdexcept>

namespace mg {

namespace {

// The inner functions' context: this function's backend first, then its
// float form (a function the policy keeps in float runs there, as in the
// unfused graph).
Context inner_context(const Backend& b) {
  Context ctx = default_context();
  ctx.backends = {b};
  if (b.type != Dtype::f32) ctx.backends.push_back({b.name, Dtype::f32});
  return ctx;
}

}  // namespace

Variable* FusedConvolution::slot(int s, const Variables& in,
                                 const Variables& out) const {
  if (s == kOutput) return out[0];
  if (s >= 0) return in[s];
  return tmp_[-1 - s].get();
}

Variables FusedConvolution::vars(const std::vector<int>& slots,
                                 const Variables& in,
                                 const Variables& out) const {
  Variables v;
  for (int s : slots) v.push_back(slot(s, in, out));
  return v;
}

void FusedConvolution::setup_impl(const Variables& in, const Variables& out) {
  // Which optional inputs are present, from their count (NNabla's rule).
  const int n = static_cast<int>(in.size());
  int bias = -1, bn = -1, z = -1;
  switch (n) {
    case 2:
      break;
    case 3:
      (in[2]->ndim() == 1 ? bias : z) = 2;
      break;
    case 4:
      bias = 2, z = 3;
      break;
    case 6:
      bn = 2;
      break;
    case 7:
      if (in[2]->ndim() == 1) {
        throw std::invalid_argument(
            msg(tag(), "input 2 with shape ", shape_str(in[2]->shape()),
                " looks like a bias, given with batch normalization's "
                "inputs: a bias before batch normalization is not taken "
                "(NNabla's rule)"));
      }
      bn = 2, z = 6;
      break;
    default:
      throw std::invalid_argument(
          msg(tag(),
              "takes 2, 3, 4, 6 or 7 inputs (x, weight, then bias, "
              "beta, gamma, mean, variance and z as NNabla counts "
              "them), but got ",
              n, " with shapes ", shapes_str(in)));
  }
  // Each input's declared port: x, weight, bias, beta, gamma, mean,
  // variance, z (decl::FusedConvolution's order).
  constexpr int kBias = 2, kBeta = 3, kZ = 7;
  ports_ = {0, 1};
  if (bias >= 0) ports_.push_back(kBias);
  if (bn >= 0) {
    for (int p = kBeta; p < kBeta + 4; ++p) ports_.push_back(p);
  }
  if (z >= 0) ports_.push_back(kZ);
  if (opts_.channel_last) {
    throw std::invalid_argument(
        msg(tag(),
            "channel_last is not supported: Convolution here is "
            "channel-first"));
  }
  const Shape& xs = in[0]->shape();
  detail::check_conv_base_axis(tag(), xs, opts_.base_axis);
  const size_t spatial = xs.size() - opts_.base_axis - 1;
  std::vector<int64_t> pad = opts_.pad;
  if (pad.empty()) pad.assign(spatial, 0);
  if (pad.size() != spatial && pad.size() != 2 * spatial) {
    throw std::invalid_argument(
        msg(tag(), "pad has ", pad.size(), " values, but x with shape ",
            shape_str(xs), " and base_axis ", opts_.base_axis, " has ", spatial,
            " spatial axes: give ", spatial, " or ", 2 * spatial));
  }
  const std::string& act = opts_.nonlinearity;
  const size_t want_args = act == "leaky_relu" || act == "elu" ? 1 : 0;
  if (act != "identity" && act != "relu" && act != "sigmoid" && act != "tanh" &&
      act != "leaky_relu" && act != "elu" && act != "relu6" && !act.empty()) {
    throw std::invalid_argument(
        msg(tag(), "nonlinearity '", act,
            "' is not one of identity, relu, sigmoid, tanh, leaky_relu, elu, "
            "relu6"));
  }
  if (opts_.nonlinearity_args.size() != want_args) {
    throw std::invalid_argument(msg(tag(), "nonlinearity '", act, "' takes ",
                                    want_args, " nonlinearity_args, but got ",
                                    opts_.nonlinearity_args.size()));
  }

  const Context ctx = inner_context(backend());
  steps_.clear();
  tmp_.clear();
  auto add = [&](std::shared_ptr<Function> fn, std::vector<int> inputs) {
    tmp_.push_back(std::make_shared<Variable>());
    steps_.push_back(
        {std::move(fn), std::move(inputs), -static_cast<int>(tmp_.size())});
    return steps_.back().out;
  };
  int h = 0;
  std::vector<int64_t> conv_pad = pad;
  const bool skip_pad = pad.size() == spatial && opts_.pad_mode == "constant" &&
                        opts_.constant_value == 0.0f;
  if (!skip_pad) {
    PadOptions po;
    for (size_t i = 0; i < pad.size(); ++i) {
      const int v = static_cast<int>(pad[i]);
      po.pad_width.push_back(v);
      if (pad.size() == spatial) po.pad_width.push_back(v);
    }
    po.mode = opts_.pad_mode;
    po.constant_value = opts_.constant_value;
    h = add(create_function(decl::Pad, po, ctx), {h});
    conv_pad.assign(spatial, 0);
  }
  ConvolutionOptions co;
  co.base_axis = opts_.base_axis;
  co.pad = conv_pad;
  co.stride = opts_.stride;
  co.dilation = opts_.dilation;
  co.group = opts_.group;
  std::vector<int> conv_in{h, 1};
  if (bias >= 0) conv_in.push_back(bias);
  h = add(create_function(decl::Convolution, co, ctx), conv_in);
  if (bn >= 0) {
    BatchNormalizationOptions bo;
    bo.axes = {opts_.base_axis};
    bo.decay_rate = opts_.decay_rate;
    bo.eps = opts_.eps;
    bo.batch_stat = opts_.batch_stat;
    h = add(create_function(decl::BatchNormalization, bo, ctx),
            {h, bn, bn + 1, bn + 2, bn + 3});
  }
  const int before_add = h;
  if (z >= 0) {
    h = add(create_function(decl::binary<ops::Add2>, ops::Add2{}, ctx), {h, z});
  }
  const float alpha =
      opts_.nonlinearity_args.empty() ? 0.0f : opts_.nonlinearity_args[0];
  if (act == "relu") {
    h = add(create_function(decl::unary<ops::ReLU>, ops::ReLU{}, ctx), {h});
  } else if (act == "sigmoid") {
    h = add(create_function(decl::unary<ops::Sigmoid>, ops::Sigmoid{}, ctx),
            {h});
  } else if (act == "tanh") {
    h = add(create_function(decl::unary<ops::Tanh>, ops::Tanh{}, ctx), {h});
  } else if (act == "leaky_relu") {
    h = add(create_function(decl::unary<ops::LeakyReLU>, ops::LeakyReLU{alpha},
                            ctx),
            {h});
  } else if (act == "elu") {
    h = add(create_function(decl::unary<ops::ELU>, ops::ELU{alpha}, ctx), {h});
  } else if (act == "relu6") {
    h = add(create_function(decl::unary<ops::ReLU6>, ops::ReLU6{}, ctx), {h});
  }
  // The last function writes y itself.
  steps_.back().out = kOutput;
  tmp_.pop_back();
  for (const Step& s : steps_) {
    const Variables sin = vars(s.in, in, out);
    if (z >= 0 && s.in.size() == 2 && s.in[0] == before_add && s.in[1] == z &&
        sin[0]->shape() != sin[1]->shape()) {
      throw std::invalid_argument(
          msg(tag(), "z with shape ", shape_str(sin[1]->shape()),
              " must have the convolution's output shape ",
              shape_str(sin[0]->shape())));
    }
    try {
      s.fn->setup(sin, {slot(s.out, in, out)});
    } catch (const std::invalid_argument& e) {
      // The stage's own message, under this function's tag.
      throw std::invalid_argument(
          msg(tag(), "its ", s.fn->name(), " stage: ", e.what()));
    }
  }
}

void FusedConvolution::forward_impl(const Variables& in, const Variables& out) {
  for (const Step& s : steps_) {
    s.fn->forward(vars(s.in, in, out), {slot(s.out, in, out)});
  }
}

void FusedConvolution::backward_impl(const Variables& in, const Variables& out,
                                     const std::vector<bool>& propagate_down,
                                     const std::vector<bool>& accum) {
  // Whether each intermediate leads back to an input that wants a grad.
  std::vector<bool> need(tmp_.size(), false);
  auto needs = [&](int s) {
    return s >= 0 ? static_cast<bool>(propagate_down[s])
                  : static_cast<bool>(need[-1 - s]);
  };
  for (const Step& s : steps_) {
    if (s.out == kOutput) continue;
    bool any = false;
    for (int i : s.in) any = any || needs(i);
    need[-1 - s.out] = any;
  }
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    std::vector<bool> pd, acc;
    bool any = false;
    for (int i : it->in) {
      pd.push_back(needs(i));
      // Each input feeds one function of the chain: an outer input adds
      // as the graph asks, an intermediate is written.
      acc.push_back(i >= 0 ? static_cast<bool>(accum[i]) : false);
      any = any || pd.back();
    }
    if (!any) continue;
    it->fn->backward(vars(it->in, in, out), {slot(it->out, in, out)}, pd, acc);
  }
}

namespace functions {

VariablePtr fused_convolution(const VariablePtr& x, const VariablePtr& weight,
                              const VariablePtr& bias, const VariablePtr& beta,
                              const VariablePtr& gamma, const VariablePtr& mean,
                              const VariablePtr& variance, const VariablePtr& z,
                              const FusedConvolutionOptions& opts) {
  const std::string tag = decl::FusedConvolution.tag();
  const int bn =
      (beta ? 1 : 0) + (gamma ? 1 : 0) + (mean ? 1 : 0) + (variance ? 1 : 0);
  if (bn != 0 && bn != 4) {
    throw std::invalid_argument(
        msg(tag,
            "beta, gamma, mean and variance are given together or not "
            "at all, but ",
            bn, " of them were given"));
  }
  if (bias && bn) {
    throw std::invalid_argument(
        msg(tag,
            "bias and batch normalization cannot be given together "
            "(NNabla's rule: batch normalization's beta is the bias)"));
  }
  std::vector<VariablePtr> in{x, weight};
  if (bias) in.push_back(bias);
  if (bn) in.insert(in.end(), {beta, gamma, mean, variance});
  if (z) in.push_back(z);
  return apply_function1(decl::FusedConvolution, opts, std::move(in));
}

}  // namespace functions

}  // namespace mg
