#include <mixgraph/functions/pooling.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/convolution.hpp>  // detail::per_axis

namespace mg {

namespace {

// Floor division for a positive divisor (C++ truncates toward zero).
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

}  // namespace

void Pooling::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& kernel = args_.kernel;
  const auto& opts = args_.options;
  detail::check_channel_first(tag(), opts.channel_last);
  if (kernel.empty() || kernel.size() > 3) {
    throw std::invalid_argument(msg(tag(), "kernel ", shape_str(kernel),
                                    " must have 1 to 3 values, one per pooled "
                                    "axis"));
  }
  if (kernel.size() > x.size()) {
    throw std::invalid_argument(msg(tag(), "kernel ", shape_str(kernel),
                                    " has more axes than x with shape ",
                                    shape_str(x)));
  }
  for (int64_t k : kernel) {
    if (k <= 0) {
      throw std::invalid_argument(
          msg(tag(), "kernel ", shape_str(kernel), " must be positive"));
    }
  }
  const size_t axes = kernel.size();
  const int first = static_cast<int>(x.size() - axes);
  PoolingGeometry g;
  g.maps = shape_size(x, 0, first);
  g.kernel = kernel;
  g.stride = opts.stride.empty() ? kernel
                                 : detail::per_axis(tag(), "stride",
                                                    opts.stride, axes, 1, 1, x);
  g.pad = detail::per_axis(tag(), "pad", opts.pad, axes, 0, 0, x);
  g.in.assign(x.begin() + first, x.end());
  for (size_t i = 0; i < axes; ++i) {
    const int64_t padded = g.in[i] + 2 * g.pad[i];
    if (opts.ignore_border && kernel[i] > padded) {
      throw std::invalid_argument(msg(
          tag(), "kernel ", shape_str(kernel), " is larger than x with shape ",
          shape_str(x), " padded by ", shape_str(g.pad), " along pooled axis ",
          i, " (", kernel[i], " > ", padded, ")"));
    }
    g.out.push_back(opts.ignore_border
                        ? (padded - kernel[i]) / g.stride[i] + 1
                        : floor_div(g.in[i] + g.pad[i] - 1, g.stride[i]) + 1);
  }
  geom_ = g;
  Shape y(x.begin(), x.begin() + first);
  y.insert(y.end(), g.out.begin(), g.out.end());
  out[0]->reshape(y);
}

void GlobalAveragePooling::setup_impl(const Variables& in,
                                      const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x.size() < 2) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x),
            " must have at least 2 dimensions (N, C, ...)"));
  }
  rows_ = x[0] * x[1];
  size_ = shape_size(x, 2, static_cast<int>(x.size()));
  out[0]->reshape({x[0], x[1], 1, 1});
}

namespace functions {

VariablePtr max_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                        const PoolingOptions& opts) {
  return apply_function1(decl::MaxPooling, PoolingArgs{std::move(kernel), opts},
                         {x});
}

VariablePtr average_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                            const PoolingOptions& opts) {
  return apply_function1(decl::AveragePooling,
                         PoolingArgs{std::move(kernel), opts}, {x});
}

VariablePtr sum_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                        const PoolingOptions& opts) {
  return apply_function1(decl::SumPooling, PoolingArgs{std::move(kernel), opts},
                         {x});
}

VariablePtr global_average_pooling(const VariablePtr& x) {
  return apply_function1(decl::GlobalAveragePooling,
                         GlobalAveragePoolingOptions{}, {x});
}

}  // namespace functions

}  // namespace mg
