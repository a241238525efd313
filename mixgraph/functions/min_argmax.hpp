// Min over axes, and ArgMax / ArgMin: the reductions that Max does not cover.
#pragma once

#include <mixgraph/functions/reduction.hpp>
#include <vector>

namespace mg {

namespace decl {
/// Min's declaration: as Max's.
inline constexpr FunctionDeclOf<ExtremumOptions> Min{
    {"Min", "min", {Port{"x"}}, {Port{"y"}, Port{"indices", Port::integer}}}};
}  // namespace decl

/// y = the min of x over the axes; backward routes the grad to the first
/// minimum, whose index forward keeps.
class Min : public Extremum {
 public:
  using Extremum::Extremum;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace decl {
/// ArgMax's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> ArgMax{
    {"ArgMax",
     "argmax",
     {Port{"x", Port::floating, false}},
     {Port{"y", Port::float32}}}};
}  // namespace decl

/// y = the position of the first max of x over the axes, counted row-major
/// within the reduced axes (for one axis: the index along it). y is written
/// as fp32 whatever the type (exact up to 2^24); x gets a zero gradient.
class ArgMax : public Reduction {
 public:
  using Reduction::Reduction;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace decl {
/// ArgMin's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> ArgMin{
    {"ArgMin",
     "argmin",
     {Port{"x", Port::floating, false}},
     {Port{"y", Port::float32}}}};
}  // namespace decl

/// As ArgMax, for the first min.
class ArgMin : public ArgMax {
 public:
  using ArgMax::ArgMax;
};

namespace functions {
/// Min over `axes` (all when empty).
VariablePtr min(const VariablePtr& x, std::vector<int> axes = {},
                bool keep_dims = false);
/// The index of the max over `axes` (all, flattened, when empty).
VariablePtr argmax(const VariablePtr& x, std::vector<int> axes = {},
                   bool keep_dims = false);
/// The index of the min over `axes` (all, flattened, when empty).
VariablePtr argmin(const VariablePtr& x, std::vector<int> axes = {},
                   bool keep_dims = false);
}  // namespace functions

}  // namespace mg
