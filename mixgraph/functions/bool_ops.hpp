// Functions driven by a mask, as NNabla's: BoolFill and BoolScatter. The
// mask is data (float 0/1 as NNabla's, or integers: nonzero is true) and
// gets no gradient.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct BoolFillOptions {
  /// What replaces data where the mask is nonzero.
  float value = 0.0f;

  MG_FIELDS(value);
};

namespace decl {
/// BoolFill's declaration.
inline constexpr FunctionDeclOf<BoolFillOptions> BoolFill{
    {"BoolFill",
     "bool_fill",
     {Port{"data"}, Port{"mask", Port::any, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y = value where mask (broadcast to data's shape, aligned on the right)
/// is nonzero, else data; ddata = dy where the mask is zero, else 0.
class BoolFill : public FunctionWith<BoolFillOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct BoolScatterOptions {};

namespace decl {
/// BoolScatter's declaration.
inline constexpr FunctionDeclOf<BoolScatterOptions> BoolScatter{
    {"BoolScatter",
     "bool_scatter",
     {Port{"input"}, Port{"mask", Port::any, false},
      Port{"output", Port::floating, true, true}},
     {Port{"y"}}}};
}  // namespace decl

/// input (nnz, D...) and mask (B...) with nnz nonzeros: y (B..., D...) holds
/// input's rows, in order, where the mask is nonzero, and zeros (or
/// `output`'s rows: NNabla writes into output in place) elsewhere. dinput
/// gathers dy's masked rows; doutput is dy, zero on the masked rows. The
/// count of nonzeros is checked at each forward.
class BoolScatter : public Function {
 public:
  explicit BoolScatter(const BoolScatterOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t row_ = 1;  // elements per row: D...
};

namespace functions {
/// data with `value` where mask is nonzero.
VariablePtr bool_fill(const VariablePtr& data, const VariablePtr& mask,
                      float value = 0.0f);
/// input's rows placed where mask is nonzero, zeros elsewhere.
VariablePtr bool_scatter(const VariablePtr& input, const VariablePtr& mask);
/// The same into a copy of `output`.
VariablePtr bool_scatter(const VariablePtr& input, const VariablePtr& mask,
                         const VariablePtr& output);
}  // namespace functions

}  // namespace mg
