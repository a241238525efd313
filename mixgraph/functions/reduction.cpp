#include <mixgraph/functions/reduction.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Reduction::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  axes_ = axes_of_shape(opts_.axes, x, tag());
  if (opts_.axes.empty()) {
    for (int a = 0; a < nd; ++a) axes_.push_back(a);
  }
  std::sort(axes_.begin(), axes_.end());
  count_ = 1;
  Shape y;
  for (int a = 0; a < nd; ++a) {
    const bool reduced = std::binary_search(axes_.begin(), axes_.end(), a);
    if (reduced) count_ *= x[a];
    if (!reduced) {
      y.push_back(x[a]);
    } else if (opts_.keep_dims) {
      y.push_back(1);
    }
  }
  out[0]->reshape(y);
}

void Extremum::setup_impl(const Variables& in, const Variables& out) {
  Reduction::setup_impl(in, out);
  const bool indices = extremum_opts_.with_index || extremum_opts_.only_index;
  // Only the CPU kernel writes the indices; a device kernel would write y
  // alone, so the request is refused rather than half met.
  if (indices && backend().name != "cpu") {
    throw std::invalid_argument(msg(
        tag(),
        "with_index and only_index are implemented on the CPU only, not on ",
        backend().str()));
  }
  if (out.size() == 2) out[1]->reshape(out[0]->shape());
}

void Max::setup_impl(const Variables& in, const Variables& out) {
  Extremum::setup_impl(in, out);
  for (int a : axes_) {
    if (in[0]->shape()[a] == 0) {
      throw std::invalid_argument(
          msg(tag(), "x with shape ", shape_str(in[0]->shape()),
              " has no elements on axis ", a, " to take the max of"));
    }
  }
}

void Norm::setup_impl(const Variables& in, const Variables& out) {
  if (!(norm_.p > 0.0f) || !std::isfinite(norm_.p)) {
    throw std::invalid_argument(
        msg(tag(), "p ", norm_.p, " must be a finite number above 0"));
  }
  Reduction::setup_impl(in, out);
}

namespace functions {

VariablePtr sum(const VariablePtr& x, std::vector<int> axes, bool keep_dims) {
  return apply_function1(decl::Sum, ReduceOptions{std::move(axes), keep_dims},
                         {x});
}

VariablePtr mean(const VariablePtr& x, std::vector<int> axes, bool keep_dims) {
  return apply_function1(decl::Mean, ReduceOptions{std::move(axes), keep_dims},
                         {x});
}

VariablePtr max(const VariablePtr& x, std::vector<int> axes, bool keep_dims) {
  ExtremumOptions opts;
  opts.axes = std::move(axes);
  opts.keep_dims = keep_dims;
  return apply_function1(decl::Max, opts, {x});
}

VariablePtr prod(const VariablePtr& x, std::vector<int> axes, bool keep_dims) {
  return apply_function1(decl::Prod, ReduceOptions{std::move(axes), keep_dims},
                         {x});
}

VariablePtr norm(const VariablePtr& x, float p, std::vector<int> axes,
                 bool keep_dims) {
  return apply_function1(decl::Norm, NormOptions{p, std::move(axes), keep_dims},
                         {x});
}

VariablePtr reduce_sum(const VariablePtr& x) {
  return apply_function1(decl::ReduceSum, ReduceAllOptions{}, {x});
}

VariablePtr reduce_mean(const VariablePtr& x) {
  return apply_function1(decl::ReduceMean, ReduceAllOptions{}, {x});
}

}  // namespace functions

}  // namespace mg
