// AddN and MulN: the sum and the product of any number of arrays of one
// shape (NNabla's).
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

/// AddN and MulN have no arguments.
struct NaryOptions {};

/// The shape rule the two share: one or more inputs, all of one shape (no
/// broadcasting, as NNabla's), y of that shape.
class NaryFunction : public Function {
 public:
  explicit NaryFunction(const NaryOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace decl {
/// AddN's declaration.
inline constexpr FunctionDeclOf<NaryOptions> AddN{{"AddN",
                                                   "add_n",
                                                   {Port{"x"}},
                                                   {Port{"y"}},
                                                   Precision::reduced,
                                                   /*variadic=*/true}};
/// MulN's declaration.
inline constexpr FunctionDeclOf<NaryOptions> MulN{{"MulN",
                                                   "mul_n",
                                                   {Port{"x"}},
                                                   {Port{"y"}},
                                                   Precision::reduced,
                                                   /*variadic=*/true}};
}  // namespace decl

/// y = x_0 + x_1 + ... added in fp32 and rounded once; dx_i = dy.
class AddN : public NaryFunction {
 public:
  using NaryFunction::NaryFunction;
  bool grad_depends_input_data(int) const override { return false; }
};

/// y = x_0 x_1 ... multiplied in fp32 and rounded once; dx_i = dy times the
/// product of the other inputs (computed as such, so a zero input gives
/// the right grads, not 0/0).
class MulN : public NaryFunction {
 public:
  using NaryFunction::NaryFunction;
  bool grad_depends_input_data(int) const override { return true; }
};

namespace functions {
/// The sum of xs (one or more, of one shape).
VariablePtr add_n(std::vector<VariablePtr> xs);
/// The product of xs (one or more, of one shape).
VariablePtr mul_n(std::vector<VariablePtr> xs);
}  // namespace functions

}  // namespace mg
