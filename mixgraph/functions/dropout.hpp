// Dropout: training-mode inverted dropout.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <mixgraph/functions/random_generators.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

struct DropoutOptions {
  /// The probability of dropping an element, in [0, 1).
  float p = 0.5f;
  /// Seeds the function's own generator; -1 draws from mg::random_engine()
  /// at each forward (NNabla's rule, see RandomSource), so mg::seed and a
  /// checkpoint's mg::random_state reproduce the masks.
  int seed = -1;

  MG_FIELDS(p, seed);
};

namespace decl {
/// Dropout's declaration.
inline constexpr FunctionDeclOf<DropoutOptions> Dropout{
    {"Dropout", "dropout", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = x * mask / (1 - p), the mask drawn in forward (each element kept with
/// probability 1 - p) and kept for backward: dx = dy * mask / (1 - p). Two
/// functions created with the same seed (other than -1) draw the same
/// masks.
class Dropout : public FunctionWith<DropoutOptions> {
 public:
  explicit Dropout(const DropoutOptions& opts);
  bool grad_depends_input_data(int) const override { return false; }
  /// y[i] and dx[i] are x[i] and dy[i] times the mask's element i (the CPU
  /// kernel, which CUDA contexts run as a stand-in, reads a block before
  /// writing it), so under clearing y may be written over an x nothing
  /// else reads afterwards, and dx over dy where x is read once.
  bool inplace_data(int) const override { return true; }
  bool inplace_grad(int) const override { return true; }
  /// The mask of the last forward: 1 where x was kept.
  const std::vector<uint8_t>& mask() const { return mask_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Draws a new mask of n elements.
  void draw_mask(int64_t n);
  RandomSource source_;
  std::vector<uint8_t> mask_;
  float scale_;  // 1 / (1 - p)
};

namespace functions {
/// Drops each element with probability p and scales the rest by 1 / (1 - p).
VariablePtr dropout(const VariablePtr& x, float p = 0.5f, int seed = -1);
}  // namespace functions

}  // namespace mg
