// Prune: the smallest magnitudes of an array set to zero, as NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct PruneOptions {
  /// The fraction of elements to zero, in [0, 1].
  float rate = 0.9f;

  MG_FIELDS(rate);
};

namespace decl {
/// Prune's declaration.
inline constexpr FunctionDeclOf<PruneOptions> Prune{
    {"Prune", "prune", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = 0 where |x| < t, else x, with t the magnitude at sorted position
/// floor((size - 1) rate) (rate 1 zeroes everything); the grad passes
/// straight through (dx = dy), as NNabla's. Ties at t are kept.
class Prune : public FunctionWith<PruneOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// x with its smallest magnitudes (the fraction `rate`) set to zero.
VariablePtr prune(const VariablePtr& x, float rate = 0.9f);
}  // namespace functions

}  // namespace mg
