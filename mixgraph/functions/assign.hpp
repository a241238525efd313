// Assign: src's values written into dst, as NNabla's (TensorFlow's assign):
// for synchronizing or updating parameters by hand inside a graph.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct AssignOptions {};

namespace decl {
/// Assign's declaration: dst gets y's grad (as NNabla's), src none.
inline constexpr FunctionDeclOf<AssignOptions> Assign{
    {"Assign",
     "assign",
     {Port{"dst"}, Port{"src", Port::floating, false}},
     {Port{"y"}}}};
}  // namespace decl

/// Forward writes src into dst's data and y = src; backward gives dst the
/// grad of y (NNabla's rule). dst must be a leaf (a parameter or an input),
/// never another function's output, whose buffer the graph may free or
/// share. dst keeps the type it is held in: an fp32 master parameter takes
/// src's values in fp32 (exactly where src is held in fp32), not a rounded
/// half copy.
class Assign : public Function {
 public:
  explicit Assign(const AssignOptions&) {}
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// Writes src into dst when run; returns src's values as y.
VariablePtr assign(const VariablePtr& dst, const VariablePtr& src);
}  // namespace functions

}  // namespace mg
