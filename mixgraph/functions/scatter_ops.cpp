#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/scatter_ops.hpp>
#include <stdexcept>

namespace mg {

namespace {

// indices (M, ...) must have 2 axes or more (NNabla's rule) and M at most
// the rank of `target`.
void check_index_rows(const std::string& tag, const Shape& idx,
                      const Shape& target, const char* what) {
  if (idx.size() < 2) {
    throw std::invalid_argument(msg(tag, "indices with shape ", shape_str(idx),
                                    " must have 2 axes or more: (M, ...), M "
                                    "indices per column"));
  }
  if (idx[0] > static_cast<int64_t>(target.size())) {
    throw std::invalid_argument(msg(tag, "indices with shape ", shape_str(idx),
                                    " has ", idx[0], " rows, more than ", what,
                                    " with shape ", shape_str(target),
                                    " has axes"));
  }
}

}  // namespace

void GatherNd::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& idx = in[1]->shape();
  check_index_rows(tag(), idx, x, "x");
  const int m = static_cast<int>(idx[0]);
  count_ = shape_size(idx, 1, static_cast<int>(idx.size()));
  slice_ = shape_size(x, m, static_cast<int>(x.size()));
  Shape y(idx.begin() + 1, idx.end());
  y.insert(y.end(), x.begin() + m, x.end());
  out[0]->reshape(y);
}

void ScatterNd::setup_impl(const Variables& in, const Variables& out) {
  const Shape& data = in[0]->shape();
  const Shape& idx = in[1]->shape();
  const bool has_out = in.size() > 2;
  if (opts_.shape.empty() && !has_out) {
    throw std::invalid_argument(msg(tag(),
                                    "shape is empty: give the output's "
                                    "shape (or an out to write into)"));
  }
  const Shape& target = opts_.shape.empty() ? in[2]->shape() : opts_.shape;
  if (has_out && in[2]->shape() != target) {
    throw std::invalid_argument(msg(tag(), "out with shape ",
                                    shape_str(in[2]->shape()),
                                    " differs from shape ", shape_str(target)));
  }
  check_index_rows(tag(), idx, target, "shape");
  const int m = static_cast<int>(idx[0]);
  Shape want(idx.begin() + 1, idx.end());
  want.insert(want.end(), target.begin() + m, target.end());
  if (data != want) {
    throw std::invalid_argument(msg(tag(), "data with shape ", shape_str(data),
                                    " must have shape ", shape_str(want),
                                    " (indices with shape ", shape_str(idx),
                                    " without its first axis, then shape ",
                                    shape_str(target), " from axis ", m, ")"));
  }
  count_ = shape_size(idx, 1, static_cast<int>(idx.size()));
  slice_ = shape_size(target, m, static_cast<int>(target.size()));
  out[0]->reshape(target);
}

void ScatterAdd::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x0 = in[0]->shape();
  const Shape& idx = in[1]->shape();
  const Shape& x1 = in[2]->shape();
  const int nd = static_cast<int>(x0.size());
  if (idx.size() != x0.size() || x1.size() != x0.size()) {
    throw std::invalid_argument(
        msg(tag(), "x0, indices and x1 must have one rank, but have shapes ",
            shapes_str(in)));
  }
  if (opts_.axis < -nd || opts_.axis >= nd) {
    throw std::invalid_argument(msg(tag(), "axis ", opts_.axis,
                                    " is out of range for x0 with shape ",
                                    shape_str(x0)));
  }
  axis_ = opts_.axis < 0 ? opts_.axis + nd : opts_.axis;
  for (int d = 0; d < nd; ++d) {
    if (idx[d] > x1[d] || (d != axis_ && idx[d] > x0[d])) {
      throw std::invalid_argument(
          msg(tag(), "indices with shape ", shape_str(idx),
              " is larger on axis ", d, " than ", idx[d] > x1[d] ? "x1" : "x0",
              " (x0, indices, x1: ", shapes_str(in),
              "); indices must fit in x1, and in x0 off axis ", axis_));
    }
  }
  out[0]->reshape(x0);
}

namespace functions {

VariablePtr gather_nd(const VariablePtr& x, const VariablePtr& indices) {
  return apply_function1(decl::GatherNd, GatherNdOptions{}, {x, indices});
}

VariablePtr scatter_nd(const VariablePtr& data, const VariablePtr& indices,
                       Shape shape, bool add) {
  return apply_function1(decl::ScatterNd,
                         ScatterNdOptions{std::move(shape), add},
                         {data, indices});
}

VariablePtr scatter_nd(const VariablePtr& data, const VariablePtr& indices,
                       const VariablePtr& out, Shape shape, bool add) {
  return apply_function1(decl::ScatterNd,
                         ScatterNdOptions{std::move(shape), add},
                         {data, indices, out});
}

VariablePtr scatter_add(const VariablePtr& x0, const VariablePtr& indices,
                        const VariablePtr& x1, int axis) {
  return apply_function1(decl::ScatterAdd, ScatterAddOptions{axis},
                         {x0, indices, x1});
}

}  // namespace functions

}  // namespace mg
