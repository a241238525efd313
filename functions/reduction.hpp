// Sum, Mean and Max over a set of axes.
#pragma once

#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ReduceOptions {
  /// The axes to reduce; empty reduces all of them. Negative axes count from
  /// the end.
  std::vector<int> axes;
  /// Keep each reduced axis as size 1 instead of dropping it.
  bool keep_dims = false;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(ReduceOptions& o, V&& v) {
  v("axes", o.axes);
  v("keep_dims", o.keep_dims);
}

/// The shape rule shared by Sum, Mean and Max: y drops (or keeps as 1) the
/// reduced axes; with every axis reduced and keep_dims off, y has shape ().
class Reduction : public Function {
 public:
  explicit Reduction(const ReduceOptions& opts) : opts_(opts) {}
  bool grad_depends_input_data(int) const override { return false; }
  const ReduceOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const ReduceOptions opts_;
  std::vector<int> axes_;  // normalised and sorted
  int64_t count_ = 1;      // elements reduced into each output
};

namespace decl {
/// Sum's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> Sum{
    {"Sum",
     "sum",
     {Port{"x"}},
     {Port{"y"}},
     // Runs in fp32 under half and bfloat16 (PyTorch's autocast does the
     // same for sum): it is how a loss is reduced, and the reduced loss must
     // hold a scaled seed of 2^16 or more. A policy file may set it reduced.
     Precision::float32}};
}  // namespace decl

/// y = the sum of x over the axes.
class Sum : public Reduction {
 public:
  using Reduction::Reduction;
};

namespace decl {
/// Mean's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> Mean{
    {"Mean",
     "mean",
     {Port{"x"}},
     {Port{"y"}},
     // Runs in fp32 under half and bfloat16 (PyTorch's autocast does the
     // same for sum): it is how a loss is reduced, and the reduced loss must
     // hold a scaled seed of 2^16 or more. A policy file may set it reduced.
     Precision::float32}};
}  // namespace decl

/// y = the mean of x over the axes.
class Mean : public Reduction {
 public:
  using Reduction::Reduction;
};

namespace decl {
/// Max's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> Max{
    {"Max", "max", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = the max of x over the axes; backward routes the grad to the first
/// maximum, whose index forward keeps.
class Max : public Reduction {
 public:
  using Reduction::Reduction;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// Sum over `axes` (all when empty); accumulates in fp32 for every type.
VariablePtr sum(const VariablePtr& x, std::vector<int> axes = {},
                bool keep_dims = false);
/// Mean over `axes` (all when empty); accumulates in fp32 for every type.
VariablePtr mean(const VariablePtr& x, std::vector<int> axes = {},
                 bool keep_dims = false);
/// Max over `axes` (all when empty).
VariablePtr max(const VariablePtr& x, std::vector<int> axes = {},
                bool keep_dims = false);
}  // namespace functions

}  // namespace mg
