// Functions that lay an array along some axes of a larger one and repeat it
// over the others, as NNabla's: BroadcastTo and Meshgrid. Forward moves
// elements (integer data keeps its type); the grad sums the copies in fp32.
#pragma once

#include <mixgraph/graph/function.hpp>
#include <vector>

namespace mg {

/// An input laid along consecutive axes of an output: the output seen as
/// (outer, mid, inner) holds the input (mid elements) at every outer and
/// inner index.
struct SpreadLayout {
  int64_t outer = 1, mid = 1, inner = 1;
};

struct BroadcastToOptions {
  /// The axis of x where y's first axis goes; negative (NNabla's default
  /// -1, and any negative as NNabla's): y fits x's last axes.
  int axis = -1;

  MG_FIELDS(axis);
};

namespace decl {
/// BroadcastTo's declaration: x gives the shape alone (no grad, any dtype).
inline constexpr FunctionDeclOf<BroadcastToOptions> BroadcastTo{
    {"BroadcastTo",
     "broadcast_to",
     {Port{"x", Port::any, false}, Port{"y", Port::any}},
     {Port{"z", Port::any}}}};
}  // namespace decl

/// z of x's shape holds y along x's axes [axis, axis + y.ndim) (y's sizes
/// must equal those), repeated over the others (NNabla's BroadcastTo, for
/// any rank; NNabla's CPU kernel stops at 4 axes and has no grad). dy sums
/// dz over the repeated axes in fp32; x gets no grad.
class BroadcastTo : public FunctionWith<BroadcastToOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  SpreadLayout layout_;  // y in z
};

struct MeshgridOptions {
  /// Matrix ("ij") indexing: output axis k follows input k. False
  /// (NNabla's default, Cartesian "xy"): the first two axes are swapped.
  bool ij_indexing = false;
  /// How many inputs and outputs. Ours, not NNabla's: 0 (the default) takes
  /// the number of inputs when the function is linked to them; a count
  /// given must equal it.
  int num_outputs = 0;

  MG_FIELDS(ij_indexing, num_outputs);
};

namespace decl {
/// Meshgrid's declaration: N 1-D inputs, N outputs.
inline constexpr FunctionDeclOf<MeshgridOptions> Meshgrid{
    {"Meshgrid",
     "meshgrid",
     {Port{"x", Port::any}},
     {Port{"y", Port::any}},
     Precision::reduced,
     /*variadic=*/true,
     /*variadic_outputs=*/true}};
}  // namespace decl

/// Coordinate arrays from N 1-D arrays (numpy.meshgrid): every output has
/// the shape (n_0, ..., n_{N-1}) ("ij") or (n_1, n_0, n_2, ...) ("xy"), and
/// y_k holds x_k along x_k's axis, repeated over the others. dx_k sums dy_k
/// over the other axes in fp32 (every input gets its grad; NNabla's
/// backward looks only at the first two inputs' propagate_down).
class Meshgrid : public FunctionWith<MeshgridOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override { return opts_.num_outputs; }
  int num_outputs_for(const Variables& inputs) const override {
    return opts_.num_outputs > 0 ? opts_.num_outputs
                                 : static_cast<int>(inputs.size());
  }
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  std::vector<SpreadLayout> layouts_;  // x_k in y_k
};

namespace functions {
/// y repeated to x's shape, its axes at x's [axis, axis + y.ndim) (the
/// last ones for axis -1).
VariablePtr broadcast_to(const VariablePtr& x, const VariablePtr& y,
                         int axis = -1);
/// Coordinate arrays of the 1-D xs: one output per input, "xy" indexing
/// unless ij_indexing.
std::vector<VariablePtr> meshgrid(std::vector<VariablePtr> xs,
                                  bool ij_indexing = false);
}  // namespace functions

}  // namespace mg
