#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/mean_subtraction.hpp>

#include <stdexcept>

namespace mg {

void MeanSubtraction::setup_impl(const Variables& in, const Variables& out) {
  const Shape& xs = in[0]->shape();
  const int nd = in[0]->ndim();
  if (opts_.base_axis < 0 || opts_.base_axis >= nd) {
    throw std::invalid_argument(msg(tag(), "base_axis ", opts_.base_axis,
                                    " must be in [0, ", nd,
                                    ") for x with shape ", shape_str(xs)));
  }
  const Shape ms(xs.begin() + opts_.base_axis, xs.end());
  if (in[1]->shape() != ms) {
    throw std::invalid_argument(msg(tag(), "rmean with shape ",
                                    shape_str(in[1]->shape()),
                                    " must have x's shape from base_axis ",
                                    opts_.base_axis, ": ", shape_str(ms)));
  }
  if (in.size() < 3 && opts_.update_running_mean) {
    throw std::invalid_argument(
        msg(tag(), "t (the batch count) is needed with update_running_mean"));
  }
  if (in.size() == 3 && in[2]->size() != 1) {
    throw std::invalid_argument(msg(tag(), "t with shape ",
                                    shape_str(in[2]->shape()),
                                    " must hold one value"));
  }
  features_ = shape_size(ms);
  samples_ = shape_size(xs, 0, opts_.base_axis);
  out[0]->reshape(xs);
}

namespace functions {

VariablePtr mean_subtraction(const VariablePtr& x, const VariablePtr& rmean,
                             const VariablePtr& t,
                             const MeanSubtractionOptions& opts) {
  if (!t) return apply_function1(decl::MeanSubtraction, opts, {x, rmean});
  return apply_function1(decl::MeanSubtraction, opts, {x, rmean, t});
}

}  // namespace functions

namespace parametric_functions {

VariablePtr mean_subtraction(const VariablePtr& x, ParameterScope scope,
                             int base_axis, bool update_running_mean) {
  const std::string tag = decl::MeanSubtraction.tag();
  if (!x) throw std::invalid_argument(msg(tag, "x is a null variable"));
  const Shape& xs = x->shape();
  if (base_axis < 0 || base_axis >= static_cast<int>(xs.size())) {
    throw std::invalid_argument(msg(tag, "base_axis ", base_axis,
                                    " must be in [0, ", xs.size(),
                                    ") for x with shape ", shape_str(xs)));
  }
  ParameterScope s = scope["mean_subtraction"];
  auto mean = s.get_or_create("mean", Shape(xs.begin() + base_axis, xs.end()),
                              constant_initializer(0.0f), false);
  auto t = s.get_or_create("t", {1}, constant_initializer(0.0f), false);
  MeanSubtractionOptions opts;
  opts.base_axis = base_axis;
  opts.update_running_mean = update_running_mean;
  return functions::mean_subtraction(x, mean, t, opts);
}

}  // namespace parametric_functions

}  // namespace mg
