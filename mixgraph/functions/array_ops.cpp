#include <algorithm>
#include <cstdlib>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/builder.hpp>
#include <stdexcept>

namespace mg {

namespace {

// The axis in [0, ndim), or "<tag>axis 3 is out of range for x with shape
// (2, 3)".
int axis_of(int axis, const Shape& shape, int ndim, const std::string& what,
            const std::string& tag) {
  if (axis < -ndim || axis >= ndim) {
    throw std::invalid_argument(msg(tag, "axis ", axis, " is out of range for ",
                                    what, " with shape ", shape_str(shape)));
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace

int Split::num_outputs_for(const Variables& inputs) const {
  if (opts_.num_outputs > 0 || inputs.size() != 1 || !inputs[0]) {
    return opts_.num_outputs;
  }
  // An axis out of range gives 1 here; setup then says what is wrong.
  const Shape& x = inputs[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int axis = opts_.axis < 0 ? opts_.axis + nd : opts_.axis;
  return axis >= 0 && axis < nd ? static_cast<int>(x[axis]) : 1;
}

void Split::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int nd = static_cast<int>(x.size());
  const int axis = axis_of(opts_.axis, x, nd, "x", tag());
  if (opts_.num_outputs > 0 && x[axis] != opts_.num_outputs) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has ", x[axis], " slices along axis ",
                                    axis, ", but num_outputs is ",
                                    opts_.num_outputs));
  }
  outer_ = shape_size(x, 0, axis);
  inner_ = shape_size(x, axis + 1, nd);
  Shape y = x;
  y.erase(y.begin() + axis);
  for (Variable* v : out) v->reshape(y);
}

void Stack::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i]->shape() != x) {
      throw std::invalid_argument(
          msg(tag(), "input ", i, " with shape ", shape_str(in[i]->shape()),
              " differs from input 0 with shape ", shape_str(x),
              "; stacked inputs must have one shape"));
    }
  }
  const int nd = static_cast<int>(x.size());
  const int axis = axis_of(opts_.axis, x, nd + 1, "the stack of x", tag());
  outer_ = shape_size(x, 0, axis);
  inner_ = shape_size(x, axis, nd);
  Shape y = x;
  y.insert(y.begin() + axis, static_cast<int64_t>(in.size()));
  out[0]->reshape(y);
}

void Broadcast::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& s = opts_.shape;
  const std::string fail = tag() + "x with shape " + shape_str(x) +
                           " cannot broadcast to shape " + shape_str(s);
  if (x.size() > s.size()) {
    throw std::invalid_argument(msg(fail, ": it has more dimensions"));
  }
  const size_t lead = s.size() - x.size();
  axes_.clear();
  for (size_t a = 0; a < s.size(); ++a) {
    const int64_t xd = a < lead ? 1 : x[a - lead];
    if (xd != s[a] && xd != 1) {
      throw std::invalid_argument(msg(fail, ": axis ", a, " is ", xd,
                                      " against ", s[a],
                                      "; x's size must match or be 1"));
    }
    if (xd == 1 && s[a] != 1) axes_.push_back(static_cast<int>(a));
  }
  out[0]->reshape(s);
}

void Pad::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& pw = opts_.pad_width;
  const int nd = static_cast<int>(x.size());
  const int np = static_cast<int>(pw.size()) / 2;
  if (pw.size() % 2 != 0 || np > nd) {
    throw std::invalid_argument(
        msg(tag(), "pad_width ", ints_str(pw),
            " must hold (before, after) pairs for at most the ", nd,
            " axes of x with shape ", shape_str(x)));
  }
  const std::string& mode = opts_.mode;
  if (mode != "constant" && mode != "reflect" && mode != "repeat") {
    throw std::invalid_argument(msg(
        tag(), "mode '", mode, "' is not one of constant, reflect, repeat"));
  }
  Shape y = x;
  x_view_ = x;
  source_.assign(nd, {});
  for (int a = 0; a < nd; ++a) {
    const int p = a - (nd - np);  // the pair for this axis, or none
    const int64_t before = p >= 0 ? pw[2 * p] : 0;
    const int64_t after = p >= 0 ? pw[2 * p + 1] : 0;
    const int64_t n = x[a];
    if (before < 0 || after < 0) {
      throw std::invalid_argument(
          msg(tag(), "pad_width ", ints_str(pw), " has a negative entry"));
    }
    if (mode == "reflect" && (before >= n || after >= n) && before + after) {
      throw std::invalid_argument(msg(tag(), "reflect padding (", before, ", ",
                                      after, ") on axis ", a,
                                      " of x with shape ", shape_str(x),
                                      " must be less than its size ", n));
    }
    if (mode == "repeat" && n == 0 && before + after) {
      throw std::invalid_argument(msg(tag(), "repeat padding of axis ", a,
                                      " of x with shape ", shape_str(x),
                                      ", which is empty"));
    }
    y[a] = before + n + after;
    auto& src = source_[a];
    src.resize(y[a]);
    for (int64_t j = 0; j < y[a]; ++j) {
      int64_t i = j - before;
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "reflect") {
          i = i < 0 ? -i : 2 * (n - 1) - i;
        } else {
          i = std::clamp<int64_t>(i, 0, n - 1);
        }
      }
      src[j] = i;
    }
  }
  out[0]->reshape(y);
}

void Flip::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  flipped_.assign(x.size(), false);
  for (int n : axes_of_shape(opts_.axes, x, tag())) flipped_[n] = true;
  out[0]->reshape(x);
}

void Tile::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& reps = opts_.reps;
  for (int r : reps) {
    if (r < 0) {
      throw std::invalid_argument(
          msg(tag(), "reps ", ints_str(reps), " has a negative entry"));
    }
  }
  const size_t nd = std::max(x.size(), reps.size());
  x_view_.assign(nd - x.size(), 1);
  x_view_.insert(x_view_.end(), x.begin(), x.end());
  Shape y(nd);
  source_.assign(nd, {});
  for (size_t a = 0; a < nd; ++a) {
    const size_t lead = nd - reps.size();
    const int64_t r = a >= lead ? reps[a - lead] : 1;
    y[a] = x_view_[a] * r;
    for (int64_t j = 0; j < y[a]; ++j) source_[a].push_back(j % x_view_[a]);
  }
  out[0]->reshape(y);
}

void Unpooling::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& k = opts_.kernel;
  const int nd = static_cast<int>(x.size());
  const int nk = static_cast<int>(k.size());
  const int last = opts_.channel_last ? nd - 1 : nd;  // one past the pooled
  if (nk == 0 || nk > last) {
    throw std::invalid_argument(
        msg(tag(), "kernel ", shape_str(k), " must have ",
            (last <= 1 ? std::string("1 value")
                       : "1 to " + std::to_string(last) + " values"),
            ", one per pooled axis of x with shape ", shape_str(x),
            (opts_.channel_last ? " (channel_last)" : "")));
  }
  for (int64_t e : k) {
    if (e <= 0) {
      throw std::invalid_argument(
          msg(tag(), "kernel ", shape_str(k), " must be positive"));
    }
  }
  x_view_ = x;
  Shape y = x;
  source_.assign(nd, {});
  for (int a = 0; a < nd; ++a) {
    const int p = a - (last - nk);  // the kernel entry for this axis, or none
    const int64_t f = p >= 0 && a < last ? k[p] : 1;
    y[a] = x[a] * f;
    for (int64_t j = 0; j < y[a]; ++j) source_[a].push_back(j / f);
  }
  out[0]->reshape(y);
}

void Shift::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& shifts = opts_.shifts;
  const int nd = static_cast<int>(x.size());
  const int ns = static_cast<int>(shifts.size());
  if (ns > nd) {
    throw std::invalid_argument(msg(tag(), "shifts ", ints_str(shifts),
                                    " has more entries than x with shape ",
                                    shape_str(x), " has axes"));
  }
  const bool reflect = opts_.border_mode == "reflect";
  if (!reflect && opts_.border_mode != "nearest") {
    throw std::invalid_argument(msg(tag(), "border_mode '", opts_.border_mode,
                                    "' is not one of nearest, reflect"));
  }
  x_view_ = x;
  source_.assign(nd, {});
  for (int a = 0; a < nd; ++a) {
    const int64_t n = x[a], s = a >= nd - ns ? shifts[a - (nd - ns)] : 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = j - s;
      if (reflect) {
        // NNabla's: x mirrored with its edge repeated (-1 -> 0, -2 -> 1,
        // NumPy's 'symmetric'), period 2 n, written as NNabla writes it.
        const int64_t r = n > 1 ? std::llabs(i + 2 * n) % (2 * n) : 0;
        i = r >= n ? 2 * n - 1 - r : r;
      } else {
        i = std::clamp<int64_t>(i, 0, n - 1);
      }
      source_[a].push_back(i);
    }
  }
  out[0]->reshape(x);
}

void Trilu::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x.size() < 2) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " needs at least 2 axes (rows, columns)"));
  }
  out[0]->reshape(x);
}

namespace functions {

std::vector<VariablePtr> split(const VariablePtr& x, int axis) {
  if (!x) throw std::invalid_argument("[split] x is a null variable");
  const Shape& s = x->shape();
  const int nd = static_cast<int>(s.size());
  const int a = axis_of(axis, s, nd, "x", "[split] ");
  if (s[a] == 0) {
    throw std::invalid_argument(msg("[split] x with shape ", shape_str(s),
                                    " has no slices along axis ", a));
  }
  return apply_function(decl::Split, SplitOptions{axis, static_cast<int>(s[a])},
                        {x});
}

VariablePtr stack(std::vector<VariablePtr> xs, int axis) {
  return apply_function1(decl::Stack, StackOptions{axis}, std::move(xs));
}

VariablePtr broadcast(const VariablePtr& x, Shape shape) {
  return apply_function1(decl::Broadcast, BroadcastOptions{std::move(shape)},
                         {x});
}

VariablePtr pad(const VariablePtr& x, std::vector<int> pad_width,
                const std::string& mode, float constant_value) {
  return apply_function1(
      decl::Pad, PadOptions{std::move(pad_width), mode, constant_value}, {x});
}

VariablePtr flip(const VariablePtr& x, std::vector<int> axes) {
  return apply_function1(decl::Flip, FlipOptions{std::move(axes)}, {x});
}

VariablePtr tile(const VariablePtr& x, std::vector<int> reps) {
  return apply_function1(decl::Tile, TileOptions{std::move(reps)}, {x});
}

VariablePtr shift(const VariablePtr& x, std::vector<int> shifts,
                  const std::string& border_mode) {
  return apply_function1(decl::Shift,
                         ShiftOptions{std::move(shifts), border_mode}, {x});
}

VariablePtr unpooling(const VariablePtr& x, std::vector<int64_t> kernel,
                      bool channel_last) {
  return apply_function1(
      decl::Unpooling, UnpoolingOptions{std::move(kernel), channel_last}, {x});
}

VariablePtr trilu(const VariablePtr& x, int k, bool upper) {
  return apply_function1(decl::Trilu, TriluOptions{k, upper}, {x});
}

}  // namespace functions

}  // namespace mg
