// Functions that make an array from their arguments alone, with no input:
// Constant, Arange and Linspace (NNabla's). They have nothing to
// differentiate; their outputs are leaves of the graph's grad.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct ConstantOptions {
  /// The value of every element.
  float val = 0.0f;
  /// y's shape; () makes a scalar.
  Shape shape;

  MG_FIELDS(val, shape);
};

namespace decl {
/// Constant's declaration.
inline constexpr FunctionDeclOf<ConstantOptions> Constant{
    {"Constant", "constant", {}, {Port{"y"}}}};
}  // namespace decl

/// y = val everywhere, in the context's type (val rounded to it; -inf and
/// inf stay what they are, so a Constant makes an additive mask).
class Constant : public FunctionWith<ConstantOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct ArangeOptions {
  float start = 0.0f;
  /// Excluded: y holds start, start + step, ... while below stop (above it
  /// for a negative step).
  float stop = 0.0f;
  /// Not 0.
  float step = 1.0f;

  MG_FIELDS(start, stop, step);
};

namespace decl {
/// Arange's declaration.
inline constexpr FunctionDeclOf<ArangeOptions> Arange{
    {"Arange",
     "arange",
     {},
     {Port{"y"}},
     // fp32 under half and bfloat16: positions and indices made by Arange
     // are exact integers up to 2^24 in fp32, but only up to 2048 in half
     // and 256 in bfloat16 (a positional encoding or a causal mask over a
     // longer sequence would silently merge positions). The functions that
     // read y convert it at their edge.
     Precision::float32}};
}  // namespace decl

/// y[i] = start + i * step for i in [0, ceil((stop - start) / step)): a 1-D
/// array, empty when the range is; each element computed from i (not by
/// repeated adding, whose error would grow along y).
class Arange : public FunctionWith<ArangeOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct LinspaceOptions {
  float start = 0.0f;
  /// Included: the last element is exactly stop (for num >= 2).
  float stop = 0.0f;
  /// The number of elements, 0 or more.
  int num = 0;

  MG_FIELDS(start, stop, num);
};

namespace decl {
/// Linspace's declaration.
inline constexpr FunctionDeclOf<LinspaceOptions> Linspace{
    {"Linspace",
     "linspace",
     {},
     {Port{"y"}},
     // fp32 under half and bfloat16, as Arange: a grid's points keep fp32's
     // spacing; the functions that read y convert it at their edge.
     Precision::float32}};
}  // namespace decl

/// y = num evenly spaced values from start to stop, both included (num = 1
/// gives start alone, num = 0 an empty array): y[i] = start + i * (stop -
/// start) / (num - 1), computed in double.
class Linspace : public FunctionWith<LinspaceOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// The value of element i of an Arange or Linspace: the one formula the CPU
/// kernels (and any other backend) use.
inline double arange_value(const ArangeOptions& o, int64_t i) {
  return static_cast<double>(o.start) + static_cast<double>(i) * o.step;
}
inline double linspace_value(const LinspaceOptions& o, int64_t i) {
  if (o.num < 2) return o.start;
  if (i == o.num - 1) return o.stop;  // exact, whatever the rounding
  return o.start + (static_cast<double>(o.stop) - o.start) * i / (o.num - 1);
}

namespace functions {
/// An array of `shape` filled with val (NNabla's Constant).
VariablePtr constant(float val, const Shape& shape);
/// [start, start + step, ...) below stop (NNabla's Arange; numpy.arange).
VariablePtr arange(float start, float stop, float step = 1.0f);
/// num values from start to stop, both included (NNabla's Linspace).
VariablePtr linspace(float start, float stop, int num);
}  // namespace functions

}  // namespace mg
