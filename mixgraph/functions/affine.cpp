#include <mixgraph/functions/affine.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Affine::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& w = in[1]->shape();
  const int base = opts_.base_axis;
  if (base < 0 || base >= static_cast<int>(x.size())) {
    throw std::invalid_argument(msg(tag(), "base_axis ", base,
                                    " must be in [0, ", x.size(),
                                    ") for x with shape ", shape_str(x)));
  }
  if (w.size() < 2) {
    throw std::invalid_argument(msg(tag(), "W with shape ", shape_str(w),
                                    " must have at least 2 dimensions (K, M)"));
  }
  batch_ = shape_size(x, 0, base);
  features_ = shape_size(x, base, static_cast<int>(x.size()));
  outputs_ = shape_size(w, 1, static_cast<int>(w.size()));
  if (w[0] != features_) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " and base_axis ", base, " has ", features_,
                                    " features, but W with shape ",
                                    shape_str(w), " expects ", w[0]));
  }
  const Shape wout(w.begin() + 1, w.end());
  if (in.size() == 3 && in[2]->shape() != wout) {
    throw std::invalid_argument(msg(
        tag(), "b with shape ", shape_str(in[2]->shape()), " must have shape ",
        shape_str(wout), " to match W with shape ", shape_str(w)));
  }
  Shape y(x.begin(), x.begin() + base);
  y.insert(y.end(), wout.begin(), wout.end());
  out[0]->reshape(y);
}

namespace functions {

VariablePtr affine(const VariablePtr& x, const VariablePtr& W,
                   const VariablePtr& b, const AffineOptions& opts) {
  std::vector<VariablePtr> inputs{x, W};
  if (b) inputs.push_back(b);
  return apply_function1(decl::Affine, opts, std::move(inputs));
}

}  // namespace functions

namespace parametric_functions {

VariablePtr affine(const VariablePtr& x, int64_t n_outmaps,
                   ParameterScope scope, const AffineParams& params) {
  if (!x) throw std::invalid_argument("[affine] x is a null variable");
  const Shape& xs = x->shape();
  if (params.base_axis < 0 || params.base_axis >= static_cast<int>(xs.size())) {
    throw std::invalid_argument(msg("[affine] base_axis ", params.base_axis,
                                    " must be in [0, ", xs.size(),
                                    ") for x with shape ", shape_str(xs)));
  }
  if (n_outmaps <= 0) {
    throw std::invalid_argument(
        msg("[affine] n_outmaps must be positive, got ", n_outmaps));
  }
  const int64_t k =
      shape_size(xs, params.base_axis, static_cast<int>(xs.size()));
  auto w_init =
      params.w_init ? params.w_init : glorot_uniform_initializer(k, n_outmaps);
  // NNabla's names: <scope>/affine/W and <scope>/affine/b.
  ParameterScope layer = scope["affine"];
  auto W = layer.get_or_create("W", {k, n_outmaps}, w_init);
  VariablePtr b;
  if (params.with_bias) {
    b = layer.get_or_create(
        "b", {n_outmaps},
        params.b_init ? params.b_init : constant_initializer(0.0f));
  }
  return functions::affine(x, W, b, AffineOptions{params.base_axis});
}

}  // namespace parametric_functions

}  // namespace mg
