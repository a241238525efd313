// NormNormalization, WeightNormalization and SpectralNorm: arrays (weights,
// mostly) divided by one of their norms, the norms in fp32.
#pragma once

#include <vector>

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct NormNormalizationOptions {
  /// The order of the norm (at least 1).
  float p = 2.0f;
  /// The axes the norm runs over; empty: every axis (NNabla's default).
  std::vector<int> axes = {};
  /// Added to the sum of |x|^p before its p-th root.
  float eps = 1e-12f;

  MG_FIELDS(p, axes, eps);
};

namespace decl {
/// NormNormalization's declaration.
inline constexpr FunctionDeclOf<NormNormalizationOptions> NormNormalization{
    {"NormNormalization", "norm_normalization", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x / (sum over axes of |x|^p + eps)^(1/p), the norm kept over the
/// reduced axes. eps is added as NNabla documents it (NNabla's CPU code
/// leaves it out, so an all-zero slice gives 0 / 0 there and 0 here).
class NormNormalization : public FunctionWith<NormNormalizationOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<bool> reduced_;
};

struct WeightNormalizationOptions {
  /// The output axis: one scale g and one norm per index along it.
  int dim = 0;
  /// Added to the sum of squares before the square root.
  float eps = 1e-12f;

  MG_FIELDS(dim, eps);
};

namespace decl {
/// WeightNormalization's declaration.
inline constexpr FunctionDeclOf<WeightNormalizationOptions> WeightNormalization{
    {"WeightNormalization",
     "weight_normalization",
     {Port{"w"}, Port{"g"}},
     {Port{"w_wn"}}}};
}  // namespace decl

/// w_wn = g[c] w / sqrt(sum of w^2 over every axis but dim + eps), c the
/// index along dim (Salimans and Kingma). g is 1-D with w.shape[dim]
/// values.
class WeightNormalization : public FunctionWith<WeightNormalizationOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  // w as (outer, channels, inner), the channels along dim.
  int64_t outer_ = 0, channels_ = 0, inner_ = 0;
};

struct SpectralNormOptions {
  /// The output axis: W is seen as a matrix with rows along dim and
  /// columns over the other axes in order.
  int dim = 0;
  /// Power iterations per forward (at least 1).
  int itr = 1;
  /// Added to the sums of squares of u and v before the square root.
  float eps = 1e-12f;
  /// true: u is left as it is; false: forward writes the iterated u into u.
  bool test = false;
  /// Also output u as it was before forward (a second output).
  bool output_u = false;

  MG_FIELDS(dim, itr, eps, test, output_u);
};

namespace decl {
/// SpectralNorm's declaration: u (fp32) is updated in place and gets no
/// grad; the second output (with output_u) is u before the update.
inline constexpr FunctionDeclOf<SpectralNormOptions> SpectralNorm{
    {"SpectralNorm",
     "spectral_norm",
     {Port{"w"}, Port{"u", Port::float32, false}},
     {Port{"w_sn"}, Port{"u", Port::float32}}}};
}  // namespace decl

/// W_sn = W / sigma (Miyato et al.), W the (w.shape[dim], rest) matrix of
/// w. sigma comes from `itr` power iterations from u, in fp32 as NNabla:
/// v = normalize(W^T u), u = normalize(W v), normalize(a) = a / sqrt(|a|^2
/// + eps); sigma = u^T W v. Unless test, the new u is written into u. u
/// and v are constants for the grad (NNabla's): dW = (dW_sn - (sum dW_sn
/// W) / sigma u v^T) / sigma.
class SpectralNorm : public FunctionWith<SpectralNormOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override { return opts_.output_u ? 2 : 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  // w as (outer, rows, inner) with the rows along dim: the matrix's row r,
  // column (o, i) is w[o, r, i].
  int64_t outer_ = 0, rows_ = 0, inner_ = 0;
};

namespace functions {
/// x divided by its p-norm over `axes`.
VariablePtr norm_normalization(const VariablePtr& x,
                               const NormNormalizationOptions& opts = {});
/// w normalized to the norms g along dim.
VariablePtr weight_normalization(const VariablePtr& w, const VariablePtr& g,
                                 const WeightNormalizationOptions& opts = {});
/// w divided by its spectral norm, estimated by power iteration from u;
/// with output_u, {w_sn, u before the update}.
std::vector<VariablePtr> spectral_norm(const VariablePtr& w,
                                       const VariablePtr& u,
                                       const SpectralNormOptions& opts = {});
}  // namespace functions

namespace parametric_functions {
/// Weight normalization of w with the scale "g" (w.shape[dim],) in
/// `scope`/wn, created on first use from w's norms along dim (NNabla's
/// WeightNormalizationScaleInitializer, so w_wn starts equal to w); with
/// fix_parameters g is not learned.
VariablePtr weight_normalization(const VariablePtr& w, ParameterScope scope,
                                 int dim = 0, float eps = 1e-12f,
                                 bool fix_parameters = false);
/// Spectral normalization of w with the vector "u" (w.shape[dim],) in
/// `scope`/spectral-norm, created on first use from N(0, 1) and never
/// learned (NNabla's names and values).
VariablePtr spectral_norm(const VariablePtr& w, ParameterScope scope,
                          int dim = 0, int itr = 1, float eps = 1e-12f,
                          bool test = false);
}  // namespace parametric_functions

}  // namespace mg
