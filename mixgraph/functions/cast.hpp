// Cast: converts a variable to another dtype.
#pragma once

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

struct CastOptions {
  /// The dtype y is stored in.
  Dtype dtype = Dtype::f32;

  MG_FIELDS(dtype);
};

namespace decl {
/// Cast's declaration.
inline constexpr FunctionDeclOf<CastOptions> Cast{
    {"Cast",
     "cast",
     {Port{"x", Port::any}},
     // y holds the dtype the options name: floating unless asked for ints.
     {Port{"y"}}}};
}  // namespace decl

/// y = x stored in `dtype` (whatever the context's type): x is read in the
/// dtype it holds and converted once, rounding to nearest even. The grad
/// goes back in x's dtype when that is float, half or bfloat16.
class Cast : public FunctionWith<CastOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// x converted to `dtype`: y's data is held in that dtype.
VariablePtr cast(const VariablePtr& x, Dtype dtype);
}  // namespace functions

}  // namespace mg
