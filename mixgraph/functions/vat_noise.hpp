// VATNoise: the noise of virtual adversarial training, as NNabla's GUI
// layer: forward normalises the noise per sample, backward writes the grad
// it receives into the noise buffer.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct VATNoiseOptions {
  /// Axes before base_axis index the samples; each is normalised over the
  /// rest.
  int base_axis = 1;
  /// The noise's norm.
  float eps = 1.0f;

  MG_FIELDS(base_axis, eps);
};

namespace decl {
/// VATNoise's declaration: x's grad is 0 (NNabla's rule); w is the buffer
/// backward writes, with no grad.
inline constexpr FunctionDeclOf<VATNoiseOptions> VATNoise{
    {"VATNoise",
     "vat_noise",
     {Port{"x"}, Port{"w", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y_i = eps x_i / sqrt(sum_k x_k^2 + 1e-8) per sample (the sum in fp32).
/// Backward writes eps dy into w's data (w a leaf of x's shape: the noise
/// variable fed back at the next step; in fp32 where w is held in fp32)
/// and gives x a zero grad, as NNabla's. Backward runs only where x needs
/// a grad.
class VATNoise : public FunctionWith<VATNoiseOptions> {
 public:
  using FunctionWith::FunctionWith;
  /// Backward writes w's data: kept (x's is not read).
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t samples_ = 0, size_ = 0;  // samples, and elements per sample
};

namespace functions {
/// eps x / ||x|| per sample; backward writes eps dy into w.
VariablePtr vat_noise(const VariablePtr& x, const VariablePtr& w,
                      const VATNoiseOptions& opts = {});
}  // namespace functions

}  // namespace mg
