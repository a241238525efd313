#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/integer_ops.hpp>

#include <stdexcept>

namespace mg {

void Mod2::setup_impl(const Variables& in, const Variables& out) {
  plan_ = broadcast_plan(in[0]->shape(), in[1]->shape(), tag());
  out[0]->reshape(plan_.out_shape);
}

void BitShift::setup_impl(const Variables& in, const Variables& out) {
  if (opts_.direction != "LEFT" && opts_.direction != "RIGHT") {
    throw std::invalid_argument(msg(tag(), "direction is '", opts_.direction,
                                    "'; expected 'LEFT' or 'RIGHT'"));
  }
  left_ = opts_.direction == "LEFT";
  plan_ = broadcast_plan(in[0]->shape(), in[1]->shape(), tag());
  out[0]->reshape(plan_.out_shape);
}

namespace functions {

VariablePtr mod2(const VariablePtr& x0, const VariablePtr& x1, bool fmod) {
  return apply_function1(decl::Mod2, Mod2Options{fmod}, {x0, x1});
}

VariablePtr bit_shift(const VariablePtr& x, const VariablePtr& shift,
                      const std::string& direction) {
  return apply_function1(decl::BitShift, BitShiftOptions{direction},
                         {x, shift});
}

}  // namespace functions

}  // namespace mg
