// Pooling: MaxPooling, AveragePooling and SumPooling over the last
// len(kernel) axes, and GlobalAveragePooling, as NNabla's.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct PoolingOptions {
  /// Per pooled axis; empty means stride = kernel.
  std::vector<int64_t> stride;
  /// When true, only windows wholly inside the padded input: out = (in +
  /// 2 pad - kernel) / stride + 1. When false, also the windows that run
  /// past its end, every window starting before the input's end: out =
  /// (in + pad - 1) / stride + 1 (NNabla's rule, floor division).
  bool ignore_border = true;
  /// Per pooled axis, on both sides; empty means 0. Padding never wins a
  /// max.
  std::vector<int64_t> pad;
  /// AveragePooling only: whether padding counts in a window's size.
  /// MaxPooling and SumPooling (NNabla's have no such argument) ignore it:
  /// padding never wins a max and adds 0 to a sum.
  bool including_pad = true;
  /// NNabla's layout flag: true (channels last) is refused with an error
  /// (the kernels are channel-first; transpose x to it).
  bool channel_last = false;
};

/// What a pooling function is made from: its kernel and options.
struct PoolingArgs {
  std::vector<int64_t> kernel;
  PoolingOptions options;

  template <class V>
  void fields(V&& v) {
    v("kernel", kernel);
    v("stride", options.stride);
    v("ignore_border", options.ignore_border);
    v("pad", options.pad);
    v("channel_last", options.channel_last);
    v("including_pad", options.including_pad);
  }
};

/// The geometry of a pooling: `maps` independent arrays (the axes before
/// the pooled ones), each pooled over the trailing axes.
struct PoolingGeometry {
  int64_t maps = 0;
  std::vector<int64_t> in, out, kernel, stride, pad;  // per pooled axis
};

/// The shape rule of MaxPooling and AveragePooling: x (..., in...) with 1
/// to 3 pooled axes -> y (..., out...).
class Pooling : public Function {
 public:
  explicit Pooling(const PoolingArgs& args) : args_(args) {}
  /// The kernel and options it was made from.
  const PoolingArgs& options() const { return args_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const PoolingArgs args_;
  PoolingGeometry geom_;
};

namespace decl {
/// MaxPooling's declaration.
inline constexpr FunctionDeclOf<PoolingArgs> MaxPooling{
    {"MaxPooling", "max_pooling", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The maximum of each window; backward routes the grad to the first
/// maximum (recomputed from x).
class MaxPooling : public Pooling {
 public:
  using Pooling::Pooling;
};

namespace decl {
/// AveragePooling's declaration.
inline constexpr FunctionDeclOf<PoolingArgs> AveragePooling{
    {"AveragePooling", "average_pooling", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The mean of each window, accumulated in fp32.
class AveragePooling : public Pooling {
 public:
  using Pooling::Pooling;
  bool grad_depends_input_data(int) const override { return false; }
};

namespace decl {
/// SumPooling's declaration.
inline constexpr FunctionDeclOf<PoolingArgs> SumPooling{
    {"SumPooling", "sum_pooling", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The sum of each window, accumulated in fp32 (NNabla's SumPooling; its
/// arguments are AveragePooling's, including_pad aside: padding adds 0).
class SumPooling : public Pooling {
 public:
  using Pooling::Pooling;
  bool grad_depends_input_data(int) const override { return false; }
};

struct GlobalAveragePoolingOptions {};

namespace decl {
/// GlobalAveragePooling's declaration.
inline constexpr FunctionDeclOf<GlobalAveragePoolingOptions>
    GlobalAveragePooling{{"GlobalAveragePooling",
                          "global_average_pooling",
                          {Port{"x"}},
                          {Port{"y"}}}};
}  // namespace decl

/// x (N, C, ...) -> y (N, C, 1, 1): the mean over every axis after the
/// second, accumulated in fp32.
class GlobalAveragePooling : public Function {
 public:
  explicit GlobalAveragePooling(const GlobalAveragePoolingOptions&) {}
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t rows_ = 0, size_ = 0;  // N * C, and the elements averaged per row
};

namespace functions {
/// Max pooling over the last len(kernel) axes (stride defaults to kernel).
VariablePtr max_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                        const PoolingOptions& opts = {});
/// Average pooling over the last len(kernel) axes (stride defaults to
/// kernel).
VariablePtr average_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                            const PoolingOptions& opts = {});
/// Sum pooling over the last len(kernel) axes (stride defaults to kernel).
VariablePtr sum_pooling(const VariablePtr& x, std::vector<int64_t> kernel,
                        const PoolingOptions& opts = {});
/// The mean over the spatial axes: (N, C, ...) -> (N, C, 1, 1).
VariablePtr global_average_pooling(const VariablePtr& x);
}  // namespace functions

}  // namespace mg
