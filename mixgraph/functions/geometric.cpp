#include <mixgraph/functions/geometric.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void AffineGrid::setup_impl(const Variables& in, const Variables& out) {
  const Shape& t = in[0]->shape();
  const auto& size = opts_.size;
  const int d = static_cast<int>(size.size());
  if (d != 2 && d != 3) {
    throw std::invalid_argument(
        msg(tag(), "size ", shape_str(size),
            " must have 2 values (H, W) or 3 (D, H, W)"));
  }
  for (int64_t s : size) {
    if (s <= 0) {
      throw std::invalid_argument(
          msg(tag(), "size ", shape_str(size), " must be positive"));
    }
  }
  if (t.size() != 3 || t[1] != d || t[2] != d + 1) {
    throw std::invalid_argument(
        msg(tag(), "theta with shape ", shape_str(t), " must be (B, ", d, ", ",
            d + 1, ") for the ", d, "-D size ", shape_str(size)));
  }
  Shape g{t[0]};
  g.insert(g.end(), size.begin(), size.end());
  g.push_back(d);
  out[0]->reshape(g);
}

void WarpByGrid::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& g = in[1]->shape();
  if (opts_.mode != "linear" && opts_.mode != "nearest") {
    throw std::invalid_argument(
        msg(tag(), "mode '", opts_.mode, "' is not one of linear, nearest"));
  }
  if (opts_.padding_mode != "zero" && opts_.padding_mode != "repeat" &&
      opts_.padding_mode != "reflect") {
    throw std::invalid_argument(msg(tag(), "padding_mode '", opts_.padding_mode,
                                    "' is not one of zero, repeat, reflect"));
  }
  const int nd = static_cast<int>(x.size());
  if (nd != 4 && nd != 5) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x),
            " must have 4 axes (2-D images) or 5 (3-D volumes)"));
  }
  const int d = nd - 2;
  if (static_cast<int>(g.size()) != nd || g.back() != d) {
    throw std::invalid_argument(msg(tag(), "grid with shape ", shape_str(g),
                                    " must be (B, ",
                                    d == 2 ? "Ho, Wo, 2" : "Do, Ho, Wo, 3",
                                    ") for x with shape ", shape_str(x)));
  }
  if (g[0] != x[0]) {
    throw std::invalid_argument(msg(tag(), "grid with shape ", shape_str(g),
                                    " and x with shape ", shape_str(x),
                                    " must have the same batch size"));
  }
  Shape y{x[0]};
  if (!opts_.channel_last) y.push_back(x[1]);
  y.insert(y.end(), g.begin() + 1, g.end() - 1);
  if (opts_.channel_last) y.push_back(x[nd - 1]);
  out[0]->reshape(y);
}

void WarpByFlow::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& f = in[1]->shape();
  if (x.size() != 4) {
    throw std::invalid_argument(msg(tag(), "data with shape ", shape_str(x),
                                    " must have 4 axes (N, C, H, W)"));
  }
  if (f != Shape{x[0], 2, x[2], x[3]}) {
    throw std::invalid_argument(msg(tag(), "flow with shape ", shape_str(f),
                                    " must be ",
                                    shape_str(Shape{x[0], 2, x[2], x[3]}),
                                    " for data with shape ", shape_str(x)));
  }
  out[0]->reshape(x);
}

namespace functions {

VariablePtr affine_grid(const VariablePtr& theta, std::vector<int64_t> size,
                        bool align_corners) {
  return apply_function1(decl::AffineGrid,
                         AffineGridOptions{std::move(size), align_corners},
                         {theta});
}

VariablePtr warp_by_grid(const VariablePtr& x, const VariablePtr& grid,
                         const std::string& mode,
                         const std::string& padding_mode, bool align_corners,
                         bool channel_last) {
  return apply_function1(
      decl::WarpByGrid,
      WarpByGridOptions{mode, padding_mode, align_corners, channel_last},
      {x, grid});
}

VariablePtr warp_by_flow(const VariablePtr& data, const VariablePtr& flow) {
  return apply_function1(decl::WarpByFlow, WarpByFlowOptions{}, {data, flow});
}

}  // namespace functions

}  // namespace mg
