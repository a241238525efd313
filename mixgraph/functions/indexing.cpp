#include <cmath>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <stdexcept>

namespace mg {

void check_indices(const int32_t* ids, int64_t n, int64_t limit,
                   const std::string& has, const std::string& tag,
                   const char* what) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= limit) {
      throw std::invalid_argument(msg(tag, what, " holds index ", ids[i],
                                      " at flat index ", i, ", but ", has,
                                      "; indices must be in [0, ", limit, ")"));
    }
  }
}

void Embed::check_ids(const int32_t* ids, const Variables& in) const {
  check_indices(
      ids, in[0]->size(), rows_,
      msg("W with shape ", shape_str(in[1]->shape()), " has ", rows_, " rows"),
      tag(), "x");
}

void Embed::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& w = in[1]->shape();
  if (w.empty()) {
    throw std::invalid_argument(
        msg(tag(), "W with shape ", shape_str(w),
            " must have at least 1 dimension (n_inputs)"));
  }
  rows_ = w[0];
  width_ = shape_size(w, 1, static_cast<int>(w.size()));
  Shape y = x;
  y.insert(y.end(), w.begin() + 1, w.end());
  out[0]->reshape(y);
}

void Gather::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& idx = in[1]->shape();
  const int nd = static_cast<int>(x.size());
  const int ni = static_cast<int>(idx.size());
  const int axis = axis_of_shape(opts_.axis, x, tag());
  const int b = opts_.batch_dims;
  if (b < 0 || b > axis || b > ni) {
    throw std::invalid_argument(
        msg(tag(), "batch_dims ", b,
            " must be in [0, min(axis, indices dimensions)] = [0, ",
            std::min(axis, ni), "] for x with shape ", shape_str(x),
            " and indices with shape ", shape_str(idx)));
  }
  for (int d = 0; d < b; ++d) {
    if (x[d] != idx[d]) {
      throw std::invalid_argument(
          msg(tag(), "x with shape ", shape_str(x), " and indices with shape ",
              shape_str(idx), " must match on the ", b,
              " batch dimensions, but differ on axis ", d));
    }
  }
  batch_ = shape_size(x, 0, b);
  outer_ = shape_size(x, b, axis);
  size_ = x[axis];
  inner_ = shape_size(x, axis + 1, nd);
  count_ = shape_size(idx, b, ni);
  Shape y(x.begin(), x.begin() + axis);
  y.insert(y.end(), idx.begin() + b, idx.end());
  y.insert(y.end(), x.begin() + axis + 1, x.end());
  out[0]->reshape(y);
}

void OneHot::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& s = opts_.shape;
  if (s.empty()) {
    throw std::invalid_argument(msg(tag(), "shape must not be empty"));
  }
  for (int64_t d : s) {
    if (d <= 0) {
      throw std::invalid_argument(
          msg(tag(), "shape ", shape_str(s), " must have positive sizes"));
    }
  }
  if (x.empty() || x.back() != static_cast<int64_t>(s.size())) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " must have a last axis of ",
            s.size(), " ids, one per axis of shape ", shape_str(s)));
  }
  Shape y(x.begin(), x.end() - 1);
  y.insert(y.end(), s.begin(), s.end());
  out[0]->reshape(y);
}

void Where::setup_impl(const Variables& in, const Variables& out) {
  const Shape& c = in[0]->shape();
  const Shape& t = in[1]->shape();
  const Shape& f = in[2]->shape();
  if (t != f) {
    throw std::invalid_argument(msg(tag(), "x_true with shape ", shape_str(t),
                                    " and x_false with shape ", shape_str(f),
                                    " must have one shape: where does not "
                                    "broadcast them (F::broadcast both to the "
                                    "shape you want first)"));
  }
  bool ok = c.size() <= t.size();
  for (size_t i = 0; ok && i < c.size(); ++i) {
    const int64_t cd = c[c.size() - 1 - i], td = t[t.size() - 1 - i];
    ok = cd == td || cd == 1;
  }
  if (!ok) {
    throw std::invalid_argument(
        msg(tag(), "condition with shape ", shape_str(c),
            " cannot broadcast to x_true with shape ", shape_str(t)));
  }
  out[0]->reshape(t);
}

namespace functions {

VariablePtr embed(const VariablePtr& x, const VariablePtr& W) {
  return apply_function1(decl::Embed, EmbedOptions{}, {x, W});
}

VariablePtr gather(const VariablePtr& x, const VariablePtr& indices, int axis,
                   int batch_dims) {
  return apply_function1(decl::Gather, GatherOptions{axis, batch_dims},
                         {x, indices});
}

VariablePtr one_hot(const VariablePtr& x, Shape shape) {
  return apply_function1(decl::OneHot, OneHotOptions{std::move(shape)}, {x});
}

VariablePtr where(const VariablePtr& condition, const VariablePtr& x_true,
                  const VariablePtr& x_false) {
  return apply_function1(decl::Where, WhereOptions{},
                         {condition, x_true, x_false});
}

}  // namespace functions

namespace parametric_functions {

VariablePtr embed(const VariablePtr& x, int64_t n_inputs, int64_t n_features,
                  ParameterScope scope, const Initializer& w_init) {
  if (n_inputs <= 0 || n_features <= 0) {
    throw std::invalid_argument(
        msg("[embed] n_inputs and n_features must be positive, got ", n_inputs,
            " and ", n_features));
  }
  const float lim = std::sqrt(3.0f);
  auto W = scope["embed"].get_or_create(
      "W", {n_inputs, n_features},
      w_init ? w_init : uniform_initializer(-lim, lim));
  return functions::embed(x, W);
}

}  // namespace parametric_functions

}  // namespace mg
