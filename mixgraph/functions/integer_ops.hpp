// Mod2 and BitShift, as NNabla's: elementwise integer arithmetic with
// broadcasting, integer data computed exactly in the type it is held in.
#pragma once

#include <string>

#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

struct Mod2Options {
  /// numpy.fmod (the remainder takes x0's sign) for integer data; else
  /// numpy.mod (it takes x1's sign). Floating data is always fmod, as
  /// NNabla's.
  bool fmod = false;

  MG_FIELDS(fmod);
};

namespace decl {
/// Mod2's declaration: x0 and x1 of any type (x0's decides: integers stay
/// exact), no grads (NNabla has none).
inline constexpr FunctionDeclOf<Mod2Options> Mod2{
    {"Mod2",
     "mod2",
     {Port{"x0", Port::any, false}, Port{"x1", Port::any, false}},
     {Port{"y", Port::any}}}};
}  // namespace decl

/// y = x0 mod x1 with NumPy broadcasting. Integer x0 (int32, int64, uint8):
/// computed in its type, x1 converted to it, numpy.mod or with fmod
/// numpy.fmod; a zero divisor is an error (NNabla's C++ % is undefined
/// there). Floating x0: std::fmod in fp32 on the converted values (exact:
/// the remainder is representable in the input's type), nan for a zero
/// divisor.
class Mod2 : public FunctionWith<Mod2Options> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  BroadcastPlan plan_;
};

struct BitShiftOptions {
  /// "LEFT" or "RIGHT".
  std::string direction = "LEFT";

  MG_FIELDS(direction);
};

namespace decl {
/// BitShift's declaration: integer x and shift, integer y, no grads.
inline constexpr FunctionDeclOf<BitShiftOptions> BitShift{
    {"BitShift",
     "bit_shift",
     {Port{"x", Port::integer, false}, Port{"shift", Port::integer, false}},
     {Port{"y", Port::integer}}}};
}  // namespace decl

/// y = x << shift or x >> shift with NumPy broadcasting, on x's bits as an
/// unsigned integer of its width (NNabla takes unsigned types only: int32
/// data shifts as uint32, so a right shift brings in zeros), shift
/// converted to it; a shift below 0 or of the width or more gives 0, as
/// NNabla's. y has x's integer type (uint8, int32, int64); x held as
/// floating data must hold whole numbers and gives int32.
class BitShift : public FunctionWith<BitShiftOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  BroadcastPlan plan_;
  bool left_ = true;
};

namespace functions {
/// The remainder of x0 by x1 (numpy.mod, or numpy.fmod with fmod; floating
/// data always fmod).
VariablePtr mod2(const VariablePtr& x0, const VariablePtr& x1,
                 bool fmod = false);
/// x's bits shifted by shift ("LEFT" or "RIGHT").
VariablePtr bit_shift(const VariablePtr& x, const VariablePtr& shift,
                      const std::string& direction = "LEFT");
}  // namespace functions

}  // namespace mg
