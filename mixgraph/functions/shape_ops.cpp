#include <mixgraph/functions/shape_ops.hpp>

#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void Reshape::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int64_t n = shape_size(x);
  Shape s = opts_.shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) {
        throw std::invalid_argument(
            msg(tag(), "shape ", shape_str(s), " has more than one -1"));
      }
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw std::invalid_argument(msg(tag(), "shape ", shape_str(s),
                                      " has a negative dimension ", s[i],
                                      "; only -1 (inferred) is allowed"));
    } else {
      known *= s[i];
    }
  }
  const std::string has = tag() + "x with shape " + shape_str(x) + " has " +
                          std::to_string(n) + " elements";
  if (infer >= 0) {
    if (known == 0) {
      throw std::invalid_argument(
          msg(has, ", but the -1 in shape ", shape_str(s),
              " cannot be inferred next to a 0 dimension"));
    }
    if (n % known != 0) {
      throw std::invalid_argument(msg(has, ", which is not a multiple of ",
                                      known, ", the size of shape ",
                                      shape_str(s), " without its -1"));
    }
    s[infer] = n / known;
  } else if (known != n) {
    throw std::invalid_argument(
        msg(has, ", but shape ", shape_str(s), " has ", known));
  }
  out[0]->reshape(s);
}

void Transpose::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const std::vector<int>& axes = opts_.axes;
  if (static_cast<int>(axes.size()) != nd) {
    throw std::invalid_argument(msg(tag(), "axes ", ints_str(axes), " has ",
                                    axes.size(), " entries, but x with shape ",
                                    shape_str(x), " has ", nd, " dimensions"));
  }
  perm_ = axes_of_shape(axes, x, tag());  // nd distinct axes: a permutation
  Shape y(nd);
  for (int i = 0; i < nd; ++i) y[i] = x[perm_[i]];
  out[0]->reshape(y);
}

void Concatenate::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x0 = in[0]->shape();
  const int nd = static_cast<int>(x0.size());
  if (opts_.axis < -nd || opts_.axis >= nd) {
    throw std::invalid_argument(msg(tag(), "axis ", opts_.axis,
                                    " is out of range for x0 with shape ",
                                    shape_str(x0), " (", nd, " dimensions)"));
  }
  const int axis = opts_.axis < 0 ? opts_.axis + nd : opts_.axis;
  Shape y = x0;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& xi = in[i]->shape();
    const std::string name =
        "x" + std::to_string(i) + " with shape " + shape_str(xi);
    if (static_cast<int>(xi.size()) != nd) {
      throw std::invalid_argument(msg(tag(), name, " has ", xi.size(),
                                      " dimensions, but x0 with shape ",
                                      shape_str(x0), " has ", nd));
    }
    for (int d = 0; d < nd; ++d) {
      if (d != axis && xi[d] != x0[d]) {
        throw std::invalid_argument(
            msg(tag(), name, " must match x0 with shape ", shape_str(x0),
                " on every axis but the concatenation axis ", axis, "; axis ",
                d, " is ", xi[d], " against ", x0[d]));
      }
    }
    y[axis] += xi[axis];
  }
  outer_ = shape_size(x0, 0, axis);
  inner_ = shape_size(x0, axis + 1, nd);
  out[0]->reshape(y);
}

void Slice::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const size_t k = opts_.start.size();
  if (opts_.stop.size() != k ||
      (!opts_.step.empty() && opts_.step.size() != k)) {
    throw std::invalid_argument(
        msg(tag(), "start, stop and step must have the same length, but have ",
            k, ", ", opts_.stop.size(), " and ", opts_.step.size()));
  }
  if (static_cast<int>(k) > nd) {
    throw std::invalid_argument(msg(tag(), "start, stop and step have ", k,
                                    " entries, but x with shape ", shape_str(x),
                                    " has only ", nd, " dimensions"));
  }
  start_.assign(nd, 0);
  step_.assign(nd, 1);
  Shape y = x;
  const int first =
      nd - static_cast<int>(k);  // the vectors cover the last k axes
  for (int a = first; a < nd; ++a) {
    const size_t i = a - first;
    const int64_t n = x[a];
    const int64_t step = opts_.step.empty() ? 1 : opts_.step[i];
    int64_t s = opts_.start[i], e = opts_.stop[i];
    const std::string where =
        " on axis " + std::to_string(a) + " of x with shape " + shape_str(x);
    if (step == 0) throw std::invalid_argument(msg(tag(), "step is 0", where));
    if (s < 0) s += n;
    if (e < 0) e += n;
    // A positive step reads [start, stop) with start in [0, n]; a negative
    // one reads (stop, start] with start in [0, n - 1] and stop >= -1.
    const int64_t s_max = step > 0 ? n : n - 1;
    if (s < 0 || s > s_max) {
      throw std::invalid_argument(msg(tag(), "start ", opts_.start[i],
                                      " is out of range", where, "; expected [",
                                      -n, ", ", s_max, "] with step ", step));
    }
    e = std::min(e, s_max);
    if (e < (step > 0 ? 0 : -1)) {
      throw std::invalid_argument(msg(
          tag(), "stop ", opts_.stop[i], " is out of range", where,
          "; expected at least ", step > 0 ? -n : -n - 1, " with step ", step));
    }
    int64_t len = 0;
    if (step > 0 && s < e) len = (e - 1 - s) / step + 1;
    if (step < 0 && s > e) len = (s - 1 - e) / -step + 1;
    start_[a] = s;
    step_[a] = step;
    y[a] = len;
  }
  out[0]->reshape(y);
}

namespace functions {

VariablePtr reshape(const VariablePtr& x, Shape shape, bool inplace) {
  return apply_function1(decl::Reshape,
                         ReshapeOptions{std::move(shape), inplace}, {x});
}

VariablePtr transpose(const VariablePtr& x, std::vector<int> axes) {
  return apply_function1(decl::Transpose, TransposeOptions{std::move(axes)},
                         {x});
}

VariablePtr concatenate(std::vector<VariablePtr> xs, int axis) {
  if (xs.empty()) {
    throw std::invalid_argument("[concatenate] needs at least one input");
  }
  return apply_function1(decl::Concatenate, ConcatenateOptions{axis},
                         std::move(xs));
}

VariablePtr slice(const VariablePtr& x, std::vector<int64_t> start,
                  std::vector<int64_t> stop, std::vector<int64_t> step) {
  return apply_function1(
      decl::Slice,
      SliceOptions{std::move(start), std::move(stop), std::move(step)}, {x});
}

}  // namespace functions

}  // namespace mg
