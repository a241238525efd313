#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/norm_normalization.hpp>

#include <cmath>
#include <stdexcept>

namespace mg {

namespace {

// The axis dim of w checked to be in [0, ndim) (NNabla's rule: no negative
// dim), w seen as (outer, shape[dim], inner).
void split_at_dim(const std::string& tag, const Shape& ws, int dim,
                  int64_t* outer, int64_t* rows, int64_t* inner) {
  const int nd = static_cast<int>(ws.size());
  if (dim < 0 || dim >= nd) {
    throw std::invalid_argument(msg(tag, "dim ", dim, " must be in [0, ", nd,
                                    ") for w with shape ", shape_str(ws)));
  }
  *outer = shape_size(ws, 0, dim);
  *rows = ws[dim];
  *inner = shape_size(ws, dim + 1, nd);
}

}  // namespace

void NormNormalization::setup_impl(const Variables& in, const Variables& out) {
  if (!(opts_.p >= 1.0f)) {
    throw std::invalid_argument(
        msg(tag(), "p ", opts_.p, " must be at least 1"));
  }
  reduced_.assign(in[0]->ndim(), opts_.axes.empty());
  for (int k : axes_of_shape(opts_.axes, in[0]->shape(), tag())) {
    reduced_[k] = true;
  }
  out[0]->reshape(in[0]->shape());
}

void WeightNormalization::setup_impl(const Variables& in,
                                     const Variables& out) {
  const Shape& ws = in[0]->shape();
  split_at_dim(tag(), ws, opts_.dim, &outer_, &channels_, &inner_);
  if (in[1]->ndim() != 1 || in[1]->shape()[0] != channels_) {
    throw std::invalid_argument(
        msg(tag(), "g with shape ", shape_str(in[1]->shape()),
            " must be 1-D with w.shape[dim] = ", channels_,
            " values (w with shape ", shape_str(ws), ", dim ", opts_.dim, ")"));
  }
  if (!(opts_.eps > 0.0f)) {
    throw std::invalid_argument(
        msg(tag(), "eps ", opts_.eps, " must be positive"));
  }
  out[0]->reshape(ws);
}

void SpectralNorm::setup_impl(const Variables& in, const Variables& out) {
  const Shape& ws = in[0]->shape();
  split_at_dim(tag(), ws, opts_.dim, &outer_, &rows_, &inner_);
  if (opts_.itr < 1) {
    throw std::invalid_argument(
        msg(tag(), "itr ", opts_.itr, " must be at least 1"));
  }
  if (!(opts_.eps > 0.0f)) {
    throw std::invalid_argument(
        msg(tag(), "eps ", opts_.eps, " must be positive"));
  }
  if (in[1]->ndim() != 1 || in[1]->shape()[0] != rows_) {
    throw std::invalid_argument(
        msg(tag(), "u with shape ", shape_str(in[1]->shape()),
            " must be 1-D with w.shape[dim] = ", rows_,
            " values (w with shape ", shape_str(ws), ", dim ", opts_.dim, ")"));
  }
  out[0]->reshape(ws);
  if (opts_.output_u) out[1]->reshape(in[1]->shape());
}

namespace functions {

VariablePtr norm_normalization(const VariablePtr& x,
                               const NormNormalizationOptions& opts) {
  return apply_function1(decl::NormNormalization, opts, {x});
}

VariablePtr weight_normalization(const VariablePtr& w, const VariablePtr& g,
                                 const WeightNormalizationOptions& opts) {
  return apply_function1(decl::WeightNormalization, opts, {w, g});
}

std::vector<VariablePtr> spectral_norm(const VariablePtr& w,
                                       const VariablePtr& u,
                                       const SpectralNormOptions& opts) {
  return apply_function(decl::SpectralNorm, opts, {w, u});
}

}  // namespace functions

namespace parametric_functions {

VariablePtr weight_normalization(const VariablePtr& w, ParameterScope scope,
                                 int dim, float eps, bool fix_parameters) {
  const std::string tag = decl::WeightNormalization.tag();
  if (!w) throw std::invalid_argument(msg(tag, "w is a null variable"));
  int64_t outer = 0, rows = 0, inner = 0;
  split_at_dim(tag, w->shape(), dim, &outer, &rows, &inner);
  // g starts at w's norms along dim (NNabla's
  // WeightNormalizationScaleInitializer), read from w's data now.
  const VariablePtr wv = w;
  Initializer init = [wv, dim, eps, outer, rows, inner](NdArray& g) {
    const float* d = wv->data()->get<const float>();
    std::vector<double> sq(rows, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < inner; ++i) {
          const double v = d[(o * rows + r) * inner + i];
          sq[r] += v * v;
        }
      }
    }
    float* out = g.cast<float>();
    for (int64_t r = 0; r < rows; ++r) {
      out[r] = static_cast<float>(std::sqrt(sq[r] + eps));
    }
  };
  auto g = scope["wn"].get_or_create("g", {rows}, init, !fix_parameters);
  WeightNormalizationOptions opts;
  opts.dim = dim;
  opts.eps = eps;
  return functions::weight_normalization(w, g, opts);
}

VariablePtr spectral_norm(const VariablePtr& w, ParameterScope scope, int dim,
                          int itr, float eps, bool test) {
  const std::string tag = decl::SpectralNorm.tag();
  if (!w) throw std::invalid_argument(msg(tag, "w is a null variable"));
  int64_t outer = 0, rows = 0, inner = 0;
  split_at_dim(tag, w->shape(), dim, &outer, &rows, &inner);
  auto u = scope["spectral-norm"].get_or_create(
      "u", {rows}, normal_initializer(0.0f, 1.0f), false);
  SpectralNormOptions opts;
  opts.dim = dim;
  opts.itr = itr;
  opts.eps = eps;
  opts.test = test;
  return functions::spectral_norm(w, u, opts).front();
}

}  // namespace parametric_functions

}  // namespace mg
