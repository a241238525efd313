#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/vat_noise.hpp>
#include <mixgraph/graph/function_node.hpp>

#include <stdexcept>

namespace mg {

void VATNoise::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int base = opts_.base_axis < 0 ? opts_.base_axis + nd : opts_.base_axis;
  if (base < 1 || base > nd) {
    throw std::invalid_argument(msg(tag(), "base_axis ", opts_.base_axis,
                                    " must leave x with shape ", shape_str(x),
                                    " a sample axis: 1 to ", nd, " (or -",
                                    nd - 1, " to 0 from the end)"));
  }
  if (in[1]->shape() != x) {
    throw std::invalid_argument(msg(tag(), "w with shape ",
                                    shape_str(in[1]->shape()),
                                    " must have x's shape ", shape_str(x)));
  }
  if (in[1]->parent()) {
    throw std::invalid_argument(
        msg(tag(), "w is the output of ", in[1]->parent()->function().name(),
            ": backward writes into w, so it must be a leaf variable (a "
            "parameter or an input)"));
  }
  samples_ = shape_size(x, 0, base);
  size_ = shape_size(x, base, nd);
  out[0]->reshape(x);
}

namespace functions {

VariablePtr vat_noise(const VariablePtr& x, const VariablePtr& w,
                      const VATNoiseOptions& opts) {
  return apply_function1(decl::VATNoise, opts, {x, w});
}

}  // namespace functions

}  // namespace mg
