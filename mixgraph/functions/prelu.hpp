// PReLU: a leaky ReLU whose negative slope is learnt (He et al. 2015).
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

struct PReLUOptions {
  /// The channel axis: a slope per x.shape[base_axis] element, when the
  /// slope has that many (negative counts from the end).
  int base_axis = 1;

  MG_FIELDS(base_axis);
};

namespace decl {
/// PReLU's declaration: x and the slope w (a parameter: fp32 grad for an
/// fp32 master, as every parametric function's).
inline constexpr FunctionDeclOf<PReLUOptions> PReLU{
    {"PReLU", "prelu", {Port{"x"}, Port{"w"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x for x >= 0, w x below; w is one slope shared by every element
/// (shape () or (1)) or one per channel (shape (C), C =
/// x.shape[base_axis]). dw sums dy x over x < 0 in fp32.
class PReLU : public FunctionWith<PReLUOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  // x seen as (outer, channels, inner); channels = 1 for a shared slope.
  int64_t outer_ = 1, channels_ = 1, inner_ = 1;
};

namespace functions {
/// y = max(x, 0) + w min(x, 0), w of shape () (shared) or (C,).
VariablePtr prelu(const VariablePtr& x, const VariablePtr& w,
                  int base_axis = 1);
}  // namespace functions

namespace parametric_functions {
/// PReLU with its slope "slope" in `scope`/prelu (created at 0.25, NNabla's and
/// PyTorch's default): one slope when shared, else one per channel
/// (x.shape[base_axis]).
VariablePtr prelu(const VariablePtr& x, ParameterScope scope, int base_axis = 1,
                  bool shared = true);
}  // namespace parametric_functions

}  // namespace mg
