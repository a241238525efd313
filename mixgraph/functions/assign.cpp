#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/assign.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/graph/function_node.hpp>

#include <stdexcept>

namespace mg {

void Assign::setup_impl(const Variables& in, const Variables& out) {
  if (in[0]->shape() != in[1]->shape()) {
    throw std::invalid_argument(
        msg(tag(), "dst with shape ", shape_str(in[0]->shape()),
            " and src with shape ", shape_str(in[1]->shape()),
            " must have the same shape"));
  }
  if (in[0]->parent()) {
    throw std::invalid_argument(
        msg(tag(), "dst is the output of ", in[0]->parent()->function().name(),
            ": Assign writes into dst, so it must be a leaf variable (a "
            "parameter or an input), whose buffer the graph never frees or "
            "shares"));
  }
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr assign(const VariablePtr& dst, const VariablePtr& src) {
  return apply_function1(decl::Assign, AssignOptions{}, {dst, src});
}

}  // namespace functions

}  // namespace mg
