// Elementwise functions: the shape rules shared by every backend.
//
// An elementwise function is a small functor (its math, host and device)
// plus one of these classes. Op is also the function's options: it carries
// its arguments (LeakyReLU's alpha) and its name (Op::name).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

namespace detail {
/// An op's default precision: Op::precision where it declares one, else
/// reduced.
template <class Op, class = void>
struct OpPrecision {
  static constexpr Precision value = Precision::reduced;
};
template <class Op>
struct OpPrecision<Op, std::void_t<decltype(Op::precision)>> {
  static constexpr Precision value = Op::precision;
};
/// Whether an op has a grad: false where Op declares has_grad = false
/// (comparisons and logical ops, as NNabla's: backward leaves their inputs'
/// grads alone), else true.
template <class Op, class = void>
struct OpHasGrad {
  static constexpr bool value = true;
};
template <class Op>
struct OpHasGrad<Op, std::void_t<decltype(Op::has_grad)>> {
  static constexpr bool value = Op::has_grad;
};
/// Whether both of a binary op's grads are dy itself (Op::grads_are_dy:
/// Add2), so that either input's grad may be written over dy's buffer.
template <class Op, class = void>
struct OpGradsAreDy : std::false_type {};
template <class Op>
struct OpGradsAreDy<Op, std::void_t<decltype(Op::grads_are_dy)>>
    : std::bool_constant<Op::grads_are_dy> {};
/// Whether an op checks its arguments: `std::string invalid() const`,
/// returning why they are unusable or "".
template <class Op, class = void>
struct OpChecks : std::false_type {};
template <class Op>
struct OpChecks<Op, std::void_t<decltype(std::declval<const Op&>().invalid())>>
    : std::true_type {};

}  // namespace detail

namespace decl {
/// The declaration of a unary elementwise function: names and precision
/// from its functor Op, input x, output y.
template <class Op>
inline constexpr FunctionDeclOf<Op> unary{
    {Op::name,
     Op::snake,
     {Port{"x", Port::floating, detail::OpHasGrad<Op>::value}},
     {Port{"y"}},
     detail::OpPrecision<Op>::value}};
/// The declaration of a binary elementwise function: inputs x0 and x1.
template <class Op>
inline constexpr FunctionDeclOf<Op> binary{
    {Op::name,
     Op::snake,
     {Port{"x0", Port::floating, detail::OpHasGrad<Op>::value},
      Port{"x1", Port::floating, detail::OpHasGrad<Op>::value}},
     {Port{"y"}},
     detail::OpPrecision<Op>::value}};
}  // namespace decl

/// y = op(x). Op: operator()(float) and grad(x, y, dy), with the flags
/// grad_uses_x / grad_uses_y saying what backward reads.
template <class Op>
class UnaryFunction : public Function {
 public:
  explicit UnaryFunction(const Op& op) : op_(op) {}
  bool grad_depends_input_data(int) const override { return Op::grad_uses_x; }
  bool grad_depends_output_data(int) const override { return Op::grad_uses_y; }
  /// dx[i] depends on dy[i] alone (the drivers read a block before writing
  /// it), so dx may overwrite dy.
  bool inplace_grad(int) const override { return true; }
  /// y[i] depends on x[i] alone (likewise), so y may overwrite x.
  bool inplace_data(int) const override { return true; }
  const Op& op() const { return op_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    if constexpr (detail::OpChecks<Op>::value) {
      const std::string why = op_.invalid();
      if (!why.empty()) throw std::invalid_argument(msg(tag(), why));
    }
    out[0]->reshape(in[0]->shape());
  }
  const Op op_;
};

/// How two shapes broadcast (NumPy rules, aligned on the right).
struct BroadcastPlan {
  Shape out_shape;
  std::vector<int64_t> stride0;  // per output axis; 0 where x0 broadcasts
  std::vector<int64_t> stride1;
};

/// Throws std::invalid_argument "<tag>x0 with shape ... and x1 with shape
/// ... cannot broadcast: ..." when they do not.
BroadcastPlan broadcast_plan(const Shape& a, const Shape& b,
                             const std::string& tag);

/// y = op(x0, x1) with broadcasting. Op: operator()(a, b), grad0 and grad1
/// (a, b, y, dy), and the flag grad_uses_y.
template <class Op>
class BinaryFunction : public Function {
 public:
  explicit BinaryFunction(const Op& op) : op_(op) {}
  bool grad_depends_input_data(int) const override { return Op::grad_uses_x; }
  bool grad_depends_output_data(int) const override { return Op::grad_uses_y; }
  /// Where both grads are dy (Add2: a residual's), dx0 or dx1 may be dy's
  /// buffer: whichever input takes it writes dy's own values there, so the
  /// other reads dy unchanged, in either order, and the one that takes it
  /// needs no copy. Under clear_buffer backward then holds two buffers
  /// where it held three.
  bool inplace_grad(int) const override {
    return detail::OpGradsAreDy<Op>::value;
  }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    plan_ = broadcast_plan(in[0]->shape(), in[1]->shape(), tag());
    out[0]->reshape(plan_.out_shape);
  }
  const Op op_;
  BroadcastPlan plan_;
};

}  // namespace mg
