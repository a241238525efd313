#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/broadcast_to.hpp>
#include <mixgraph/functions/builder.hpp>
#include <stdexcept>

namespace mg {

void BroadcastTo::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& y = in[1]->shape();
  const int xd = static_cast<int>(x.size()), yd = static_cast<int>(y.size());
  if (yd > xd) {
    throw std::invalid_argument(msg(tag(), "y with shape ", shape_str(y),
                                    " has more axes than x with shape ",
                                    shape_str(x)));
  }
  // As NNabla: a negative axis is "not set", y fits x's last axes.
  const int start = opts_.axis < 0 ? xd - yd : opts_.axis;
  if (opts_.axis >= 0 && start + yd > xd) {
    throw std::invalid_argument(
        msg(tag(), "axis ", opts_.axis, " puts y with shape ", shape_str(y),
            " past the last axis of x with shape ", shape_str(x)));
  }
  for (int i = 0; i < yd; ++i) {
    if (x[start + i] != y[i]) {
      throw std::invalid_argument(msg(
          tag(), "y with shape ", shape_str(y), " does not fit x with shape ",
          shape_str(x), " from axis ", start, ": axis ", start + i,
          " of x has size ", x[start + i], ", axis ", i, " of y ", y[i]));
    }
  }
  layout_ = {shape_size(x, 0, start), shape_size(y),
             shape_size(x, start + yd, xd)};
  out[0]->reshape(x);
}

void Meshgrid::setup_impl(const Variables& in, const Variables& out) {
  const int n = static_cast<int>(in.size());
  if (opts_.num_outputs > 0 && n != opts_.num_outputs) {
    throw std::invalid_argument(msg(tag(), "has ", n, " inputs with shapes ",
                                    shapes_str(in), ", but num_outputs is ",
                                    opts_.num_outputs));
  }
  // Output axis of input k: "xy" swaps the first two.
  auto axis_of = [&](int k) {
    return !opts_.ij_indexing && n > 1 && k < 2 ? 1 - k : k;
  };
  Shape y(n);
  for (int k = 0; k < n; ++k) {
    const Shape& s = in[k]->shape();
    if (s.size() != 1) {
      throw std::invalid_argument(
          msg(tag(), "input ", k, " with shape ", shape_str(s),
              " must be 1-D (inputs have shapes ", shapes_str(in), ")"));
    }
    y[axis_of(k)] = s[0];
  }
  layouts_.clear();
  for (int k = 0; k < n; ++k) {
    const int a = axis_of(k);
    layouts_.push_back({shape_size(y, 0, a), y[a], shape_size(y, a + 1, n)});
  }
  for (Variable* v : out) v->reshape(y);
}

namespace functions {

VariablePtr broadcast_to(const VariablePtr& x, const VariablePtr& y, int axis) {
  return apply_function1(decl::BroadcastTo, BroadcastToOptions{axis}, {x, y});
}

std::vector<VariablePtr> meshgrid(std::vector<VariablePtr> xs,
                                  bool ij_indexing) {
  const int n = static_cast<int>(xs.size());
  if (n == 0) throw std::invalid_argument("[meshgrid] needs at least 1 input");
  return apply_function(decl::Meshgrid, MeshgridOptions{ij_indexing, n},
                        std::move(xs));
}

}  // namespace functions

}  // namespace mg
