// MaxPoolingBackward: max pooling's backward as a forward (dx from dy and
// x), with its own backward, so max pooling has grads of every order, as
// NNabla's.
#pragma once

#include <mixgraph/functions/pooling.hpp>

namespace mg {

struct MaxPoolingBackwardOptions {
  std::vector<int64_t> kernel;
  /// As MaxPooling's: empty means stride = kernel, pad 0.
  std::vector<int64_t> stride;
  bool ignore_border = true;
  std::vector<int64_t> pad;
  /// NNabla's argument; true is refused, as NNabla's CPU kernel does (our
  /// pooling functions take channels first).
  bool channel_last = false;

  MG_FIELDS(kernel, stride, ignore_border, pad, channel_last);
};

namespace decl {
/// MaxPoolingBackward's declaration: dy gets a grad; x none (dx is
/// piecewise constant in x).
inline constexpr FunctionDeclOf<MaxPoolingBackwardOptions> MaxPoolingBackward{
    {"MaxPoolingBackward",
     "max_pooling_backward",
     {Port{"dy"}, Port{"x", Port::floating, false}},
     {Port{"dx"}}}};
}  // namespace decl

/// dy (the shape MaxPooling gives x) and x: dx (x's shape) with each dy
/// added at its window's first maximum (MaxPooling's rule: nan wins,
/// padding never does). Backward: gdy = gdx at each window's maximum.
/// MaxPooling's shape rule and errors (it is one underneath).
class MaxPoolingBackward : public Pooling {
 public:
  explicit MaxPoolingBackward(const MaxPoolingBackwardOptions& opts);
  bool grad_depends_input_data(int i) const override { return i == 1; }
  const MaxPoolingBackwardOptions& options() const { return mpb_opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const MaxPoolingBackwardOptions mpb_opts_;
};

namespace functions {
/// The grad of max_pooling(x, kernel, ...) for the output grad dy.
VariablePtr max_pooling_backward(const VariablePtr& dy, const VariablePtr& x,
                                 const MaxPoolingBackwardOptions& opts);
}  // namespace functions

}  // namespace mg
