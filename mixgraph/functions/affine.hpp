// Affine: y = x W + b, with x flattened from base_axis.
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct AffineOptions {
  /// Axes before base_axis are batch axes; the rest are features.
  int base_axis = 1;

  MG_FIELDS(base_axis);
};

namespace decl {
/// Affine's declaration.
inline constexpr FunctionDeclOf<AffineOptions> Affine{
    {"Affine",
     "affine",
     {Port{"x"}, Port{"W"}, Port{"b", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// x: (..., K) flattened from base_axis; W: (K, outmaps...); b: (outmaps...).
/// y: x.shape[:base_axis] + W.shape[1:].
class Affine : public FunctionWith<AffineOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i < 2; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t batch_ = 0, features_ = 0, outputs_ = 0;  // N, K, M
};

namespace functions {
/// y = x W + b; b may be null.
VariablePtr affine(const VariablePtr& x, const VariablePtr& W,
                   const VariablePtr& b = nullptr,
                   const AffineOptions& opts = {});
}  // namespace functions

namespace parametric_functions {

struct AffineParams {
  int base_axis = 1;
  bool with_bias = true;
  /// Initializers; by default W is Glorot-uniform and b zero, as in NNabla.
  Initializer w_init;
  Initializer b_init;
};

/// An affine layer with `n_outmaps` outputs whose parameters "W" and "b" live
/// in `scope`/affine (NNabla's names; created on first use).
VariablePtr affine(const VariablePtr& x, int64_t n_outmaps,
                   ParameterScope scope, const AffineParams& params = {});

}  // namespace parametric_functions

}  // namespace mg
