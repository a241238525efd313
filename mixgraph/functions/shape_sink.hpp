// Shape and Sink, as NNabla's: functions about the graph rather than the
// values in it. Shape reads an input's shape into an int32 array; Sink ends
// a graph at several variables, so one forward and one backward call reach
// them all.
#pragma once

#include <cstdint>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ShapeOptions {
  /// The first axis of the slice of x's shape (negative counts from the
  /// end; past the end gives an empty slice).
  int64_t start = 0;
  /// One past the last axis (negative counts from the end); 0 means the
  /// end, as NNabla's.
  int64_t end = 0;

  MG_FIELDS(start, end);
};

namespace decl {
/// Shape's declaration: x of any type (only its shape is read), the shape
/// int32 (NNabla writes it in the context's type; half would round sizes
/// past 2048).
inline constexpr FunctionDeclOf<ShapeOptions> Shape{
    {"Shape",
     "shape",
     {Port{"x", Port::any, false}},
     {Port{"shape", Port::integer}}}};
}  // namespace decl

/// shape (e - s,): x's sizes from axis s to e, with NNabla's rules (a
/// negative start or end counts from the end, a start past the end and an
/// end of 0 or past the end clamp to ndim); empty (0,) where e <= s. No
/// grad. Named ShapeOf because mg::Shape is the shape type.
class ShapeOf : public FunctionWith<ShapeOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t begin_ = 0, end_ = 0;  // the axes [begin_, end_) of x
};

struct SinkOptions {
  /// Backward sets each input's grad to ones (NNabla's default); false
  /// leaves the grads as they are, for grads the caller set by hand.
  bool one_input_grad = true;

  MG_FIELDS(one_input_grad);
};

namespace decl {
/// Sink's declaration: any number of inputs of any shape, one dummy
/// output of shape ().
inline constexpr FunctionDeclOf<SinkOptions> Sink{{"Sink",
                                                   "sink",
                                                   {Port{"x"}},
                                                   {Port{"y"}},
                                                   Precision::reduced,
                                                   /*variadic=*/true}};
}  // namespace decl

/// y () is 0: forward computes nothing (its inputs are computed on the way,
/// which is the point), backward ignores dy and, with one_input_grad, gives
/// every input a grad of ones (added to a grad that accumulates: NNabla
/// overwrites it, which makes the result depend on the order backward
/// visits the input's readers).
class Sink : public FunctionWith<SinkOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// x's shape from axis start to end (exclusive; 0 the end), as int32.
VariablePtr shape(const VariablePtr& x, int64_t start = 0, int64_t end = 0);
/// A dummy () output whose forward and backward run every one of xs.
VariablePtr sink(std::vector<VariablePtr> xs, bool one_input_grad = true);
}  // namespace functions

}  // namespace mg
