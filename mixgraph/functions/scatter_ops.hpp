// Functions that read or write by N-d indices, as NNabla's: GatherNd,
// ScatterNd and ScatterAdd. Indices are integer data (int32, exact; float
// indices must hold whole numbers) and get no gradient; wherever elements
// meet (repeated indices, added data) the sums are in fp32.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct GatherNdOptions {};

namespace decl {
/// GatherNd's declaration.
inline constexpr FunctionDeclOf<GatherNdOptions> GatherNd{
    {"GatherNd",
     "gather_nd",
     {Port{"x"}, Port{"indices", Port::integer, false}},
     {Port{"y"}}}};
}  // namespace decl

/// x (X_0, ..., X_{N-1}) and indices (M, Y_0, ..., Y_{K-1}), M <= N: y
/// (Y_0, ..., Y_{K-1}, X_M, ..., X_{N-1}) holds, at each Y position, the
/// slice of x at the M indices in that column (negative ones count from
/// the end, as NNabla's). dx adds dy back to the slices in fp32.
class GatherNd : public Function {
 public:
  explicit GatherNd(const GatherNdOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t count_ = 0, slice_ = 1;  // index columns, elements per slice
};

struct ScatterNdOptions {
  /// The output's shape; may be left empty when `out` is given (its shape).
  Shape shape;
  /// Add the data where indices meet, instead of writing over.
  bool add = false;

  MG_FIELDS(shape, add);
};

namespace decl {
/// ScatterNd's declaration.
inline constexpr FunctionDeclOf<ScatterNdOptions> ScatterNd{
    {"ScatterNd",
     "scatter_nd",
     {Port{"data"}, Port{"indices", Port::integer, false},
      Port{"out", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// GatherNd's inverse: y of `shape` is zeros (or a copy of `out`, where
/// NNabla writes into out in place) with the slices of data written (or
/// added, in fp32) at the columns of indices (M, Y...); data has shape
/// (Y..., shape[M:]). ddata gathers dy at every column (as NNabla's);
/// dout is dy, zero where data was written over.
class ScatterNd : public FunctionWith<ScatterNdOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t count_ = 0, slice_ = 1;
};

struct ScatterAddOptions {
  /// The axis of x0 the indices pick along (negative counts from the end).
  int axis = 0;

  MG_FIELDS(axis);
};

namespace decl {
/// ScatterAdd's declaration.
inline constexpr FunctionDeclOf<ScatterAddOptions> ScatterAdd{
    {"ScatterAdd",
     "scatter_add",
     {Port{"x0"}, Port{"indices", Port::integer, false}, Port{"x1"}},
     {Port{"y"}}}};
}  // namespace decl

/// y = x0 + x1 scattered along axis: for each position p of indices,
/// y[p with p[axis] = indices[p]] += x1[p] (x0, indices and x1 of one rank;
/// indices no larger than x1 on every axis and than x0 off the axis;
/// indices in [0, x0.shape[axis])). Sums in fp32. dx0 = dy; dx1[p] = dy at
/// p's target, 0 outside indices' shape.
class ScatterAdd : public FunctionWith<ScatterAddOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int axis_ = 0;
};

namespace functions {
/// The slices of x at the index columns of indices (M, ...).
VariablePtr gather_nd(const VariablePtr& x, const VariablePtr& indices);
/// data's slices written (or added) into zeros of `shape` at the index
/// columns of indices (M, ...).
VariablePtr scatter_nd(const VariablePtr& data, const VariablePtr& indices,
                       Shape shape, bool add = false);
/// The same into a copy of `out` (shape empty: out's).
VariablePtr scatter_nd(const VariablePtr& data, const VariablePtr& indices,
                       const VariablePtr& out, Shape shape = {},
                       bool add = false);
/// x0 plus x1 added at indices along axis.
VariablePtr scatter_add(const VariablePtr& x0, const VariablePtr& indices,
                        const VariablePtr& x1, int axis);
}  // namespace functions

}  // namespace mg
