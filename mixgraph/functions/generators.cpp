#include <mixgraph/functions/generators.hpp>

#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Constant::setup_impl(const Variables&, const Variables& out) {
  for (int64_t d : opts_.shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg(tag(), "shape ", shape_str(opts_.shape), " has a negative size"));
    }
  }
  out[0]->reshape(opts_.shape);
}

void Arange::setup_impl(const Variables&, const Variables& out) {
  const ArangeOptions& o = opts_;
  if (o.step == 0.0f || !std::isfinite(o.step) || !std::isfinite(o.start) ||
      !std::isfinite(o.stop)) {
    throw std::invalid_argument(
        msg(tag(), "start ", o.start, ", stop ", o.stop, " and step ", o.step,
            " must be finite, with a step other than 0"));
  }
  const double n =
      std::ceil((static_cast<double>(opts_.stop) - opts_.start) / opts_.step);
  out[0]->reshape({n > 0 ? static_cast<int64_t>(n) : 0});
}

void Linspace::setup_impl(const Variables&, const Variables& out) {
  const LinspaceOptions& o = opts_;
  if (o.num < 0 || !std::isfinite(o.start) || !std::isfinite(o.stop)) {
    throw std::invalid_argument(msg(tag(), "start ", o.start, " and stop ",
                                    o.stop, " must be finite and num ", o.num,
                                    " 0 or more"));
  }
  out[0]->reshape({opts_.num});
}

namespace functions {

VariablePtr constant(float val, const Shape& shape) {
  return apply_function1(decl::Constant, ConstantOptions{val, shape}, {});
}

VariablePtr arange(float start, float stop, float step) {
  return apply_function1(decl::Arange, ArangeOptions{start, stop, step}, {});
}

VariablePtr linspace(float start, float stop, int num) {
  return apply_function1(decl::Linspace, LinspaceOptions{start, stop, num}, {});
}

}  // namespace functions

}  // namespace mg
