// CReLU and CELU: an activation of x and of -x, concatenated along an axis
// (NNabla's; Shang et al. 2016). y has twice x's size along the axis.
#pragma once

#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

/// The shape rule the two share: y = concatenate(f(x), f(-x), axis).
class ConcatActivation : public Function {
 public:
  // dx = f'(x) dy_first - f'(-x) dy_second: backward reads x.
  bool grad_depends_input_data(int) const override { return true; }

 protected:
  void setup_split(const Variables& in, const Variables& out, int axis);
  AxisSplit split_;  // of x: y is (outer, 2 size, inner)
};

struct CReLUOptions {
  /// The axis the two halves are joined along (negative counts from the
  /// end); NNabla's default, 1, is the channel axis.
  int axis = 1;

  MG_FIELDS(axis);
};

namespace decl {
/// CReLU's declaration.
inline constexpr FunctionDeclOf<CReLUOptions> CReLU{
    {"CReLU", "crelu", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = concatenate(relu(x), relu(-x), axis).
class CReLU : public FunctionWith<CReLUOptions, ConcatActivation> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    setup_split(in, out, opts_.axis);
  }
};

struct CELUOptions {
  /// ELU's alpha: f(x) = alpha (exp(x) - 1) for x < 0.
  float alpha = 1.0f;
  /// The axis the two halves are joined along (negative counts from the
  /// end); NNabla's default, 1, is the channel axis.
  int axis = 1;

  MG_FIELDS(alpha, axis);
};

namespace decl {
/// CELU's declaration.
inline constexpr FunctionDeclOf<CELUOptions> CELU{
    {"CELU", "celu", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = concatenate(elu(x, alpha), elu(-x, alpha), axis) (NNabla's
/// "concatenated ELU"; not PyTorch's CELU, which is an ELU variant).
class CELU : public FunctionWith<CELUOptions, ConcatActivation> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    setup_split(in, out, opts_.axis);
  }
};

namespace functions {
/// concatenate(relu(x), relu(-x), axis).
VariablePtr crelu(const VariablePtr& x, int axis = 1);
/// concatenate(elu(x, alpha), elu(-x, alpha), axis).
VariablePtr celu(const VariablePtr& x, float alpha = 1.0f, int axis = 1);
}  // namespace functions

}  // namespace mg
