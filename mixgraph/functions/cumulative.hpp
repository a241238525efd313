// CumSum and CumProd along one axis (NNabla's).
#pragma once

#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

struct CumulativeOptions {
  /// The axis to run along (negative counts from the end).
  int axis = 0;
  /// y[k] leaves out x[k]: y[0] is 0 for CumSum, 1 for CumProd.
  bool exclusive = false;
  /// Run from the last element to the first.
  bool reverse = false;

  MG_FIELDS(axis, exclusive, reverse);
};

/// The shape rule the two share: y has x's shape.
class Cumulative : public FunctionWith<CumulativeOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  AxisSplit split_;
};

namespace decl {
/// CumSum's declaration.
inline constexpr FunctionDeclOf<CumulativeOptions> CumSum{
    {"CumSum", "cumsum", {Port{"x"}}, {Port{"y"}}}};
/// CumProd's declaration.
inline constexpr FunctionDeclOf<CumulativeOptions> CumProd{
    {"CumProd", "cumprod", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y[k] = x[0] + ... + x[k] along the axis (x[k] left out when exclusive;
/// from the end when reverse). The running sum is kept in double whatever
/// the storage type, so a long half cumsum is right to the last element
/// (each y rounded once); dx is the cumsum of dy the other way.
class CumSum : public Cumulative {
 public:
  using Cumulative::Cumulative;
  bool grad_depends_input_data(int) const override { return false; }
};

/// y[k] = x[0] ... x[k] along the axis, the running product in double. dx
/// comes from a backward recurrence (no division), right with zeros in x.
class CumProd : public Cumulative {
 public:
  using Cumulative::Cumulative;
};

namespace functions {
/// The cumulative sum along `axis`.
VariablePtr cumsum(const VariablePtr& x, int axis = 0, bool exclusive = false,
                   bool reverse = false);
/// The cumulative product along `axis`.
VariablePtr cumprod(const VariablePtr& x, int axis = 0, bool exclusive = false,
                    bool reverse = false);
}  // namespace functions

}  // namespace mg
