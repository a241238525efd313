// Sum, Mean, Max, Prod and Norm over a set of axes; ReduceSum and
// ReduceMean over every axis (NNabla's).
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

  MG_FIELDS(axes, keep_dims);
};

/// The shape rule shared by Sum, Mean and Max: y drops (or keeps as 1) the
/// reduced axes; with every axis reduced and keep_dims off, y has shape ().
class Reduction : public FunctionWith<ReduceOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
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

/// Max's and Min's arguments (NNabla's): ReduceOptions' and the indices.
struct ExtremumOptions : ReduceOptions {
  /// Also output the indices, as a second output (integer): the position
  /// of the first extremum counted row-major within the reduced axes (for
  /// one axis, the index along it).
  bool with_index = false;
  /// Output the indices alone (the one output; it takes no grad).
  bool only_index = false;

  /// ReduceOptions' fields, then these.
  template <class V>
  void fields(V&& v) {
    ReduceOptions::fields(v);
    v("with_index", with_index);
    v("only_index", only_index);
  }
};

/// The shape rule of Max and Min: Reduction's, and the indices' output
/// (y's shape) with with_index.
class Extremum : public Reduction {
 public:
  explicit Extremum(const ExtremumOptions& opts)
      : Reduction(opts), extremum_opts_(opts) {}
  // y and the indices, or one of them.
  int num_outputs() const override {
    return extremum_opts_.with_index && !extremum_opts_.only_index ? 2 : 1;
  }
  const ExtremumOptions& options() const { return extremum_opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const ExtremumOptions extremum_opts_;
};

namespace decl {
/// Max's declaration: y, and the indices with with_index (only_index: the
/// indices are the one output).
inline constexpr FunctionDeclOf<ExtremumOptions> Max{
    {"Max", "max", {Port{"x"}}, {Port{"y"}, Port{"indices", Port::integer}}}};
}  // namespace decl

/// y = the max of x over the axes; backward routes the grad to the first
/// maximum, whose index forward keeps.
class Max : public Extremum {
 public:
  using Extremum::Extremum;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace decl {
/// Prod's declaration.
inline constexpr FunctionDeclOf<ReduceOptions> Prod{
    {"Prod", "prod", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = the product of x over the axes, multiplied in double and rounded
/// once. dx_i = dy times the product of the others, formed from the product
/// of the nonzero elements and the count of zeros (never 0/0: with one zero
/// its grad is the others' product, with two every grad is 0).
class Prod : public Reduction {
 public:
  using Reduction::Reduction;
  bool grad_depends_input_data(int) const override { return true; }
};

struct NormOptions {
  /// The order: y = (sum |x|^p)^(1/p); p > 0 (NNabla: None means 2).
  float p = 2.0f;
  std::vector<int> axes;
  bool keep_dims = false;

  MG_FIELDS(p, axes, keep_dims);
};

namespace decl {
/// Norm's declaration.
inline constexpr FunctionDeclOf<NormOptions> Norm{
    {"Norm", "norm", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = (sum |x|^p)^(1/p) over the axes, the sum in double (a half input's
/// squares overflow half long before the norm does). dx = dy sign(x)
/// |x|^(p-1) y^(1-p), 0 where y is 0.
class Norm : public Reduction {
 public:
  explicit Norm(const NormOptions& opts)
      : Reduction(ReduceOptions{opts.axes, opts.keep_dims}), norm_(opts) {}
  bool grad_depends_output_data(int) const override { return true; }
  bool grad_depends_input_data(int) const override { return true; }
  const NormOptions& options() const { return norm_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const NormOptions norm_;
};

/// ReduceSum and ReduceMean have no arguments: they reduce every axis.
struct ReduceAllOptions {};

namespace decl {
/// ReduceSum's declaration: fp32 under half and bfloat16, as Sum's.
inline constexpr FunctionDeclOf<ReduceAllOptions> ReduceSum{
    {"ReduceSum", "reduce_sum", {Port{"x"}}, {Port{"y"}}, Precision::float32}};
/// ReduceMean's declaration: fp32 under half and bfloat16, as Mean's.
inline constexpr FunctionDeclOf<ReduceAllOptions> ReduceMean{
    {"ReduceMean",
     "reduce_mean",
     {Port{"x"}},
     {Port{"y"}},
     Precision::float32}};
}  // namespace decl

/// NNabla's ReduceSum: the sum of every element, shape (). F::sum with no
/// axes is the same; this is the name NNabla files use.
class ReduceSum : public Reduction {
 public:
  explicit ReduceSum(const ReduceAllOptions&) : Reduction(ReduceOptions{}) {}
  const ReduceAllOptions& options() const { return all_; }

 private:
  const ReduceAllOptions all_{};
};

/// NNabla's ReduceMean: the mean of every element, shape ().
class ReduceMean : public Reduction {
 public:
  explicit ReduceMean(const ReduceAllOptions&) : Reduction(ReduceOptions{}) {}
  const ReduceAllOptions& options() const { return all_; }

 private:
  const ReduceAllOptions all_{};
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
/// Product over `axes` (all when empty).
VariablePtr prod(const VariablePtr& x, std::vector<int> axes = {},
                 bool keep_dims = false);
/// The p-norm over `axes` (all when empty).
VariablePtr norm(const VariablePtr& x, float p = 2.0f,
                 std::vector<int> axes = {}, bool keep_dims = false);
/// The sum of every element (NNabla's ReduceSum).
VariablePtr reduce_sum(const VariablePtr& x);
/// The mean of every element (NNabla's ReduceMean).
VariablePtr reduce_mean(const VariablePtr& x);
}  // namespace functions

}  // namespace mg
