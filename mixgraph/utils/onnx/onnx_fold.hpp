// Constant folding of ONNX's elementwise operators on integer data, for the
// importer. Internal. Our elementwise functions compute in the context's
// floating type, which rounds int64 shapes above 2^24 (2048 in half), so
// shape arithmetic on integers is computed here, exactly, in int64.
#pragma once

#include <string>
#include <vector>

#include <mixgraph/utils/onnx/onnx_tensor.hpp>

namespace mg::onnx_io {

/// Whether fold_integer computes `op_type` (Add, Sub, Mul, Div, Mod, Max,
/// Min, Sum, Neg, Abs, comparisons, Not, And, Or, Xor, Where).
bool folds_integers(const std::string& op_type);

/// `op_type` on the constant inputs `in` (NumPy broadcasting, as ONNX's),
/// in int64 (wrapping on overflow, as NumPy's int64): integer results are
/// i64, comparisons and logical ones b8.
/// Where takes its branches' type from x_true. `fmod`: Mod's attribute.
/// An input that does not broadcast, or an integer division by zero, is
/// std::invalid_argument saying so (the caller names the node).
Tensor fold_integer(const std::string& op_type, const std::vector<Tensor>& in,
                    bool fmod = false);

/// `t` converted to `to` as ONNX's Cast does (floats to integers truncate
/// toward zero); integers stay exact, floating data becomes f32 (the
/// context decides its precision later), bool 0 or 1.
Tensor cast_tensor(const Tensor& t, Dtype to);

}  // namespace mg::onnx_io
