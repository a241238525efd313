// LSTM cells and sequences, composed of Affine, Split and elementwise
// functions (so every precision and backend that has those runs them).
#pragma once

#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/variable.hpp>
#include <tuple>
#include <utility>

namespace mg::parametric_functions {

/// One LSTM step, as NNabla's PF.lstm_cell: x (N, I), h and c (N,
/// state_size). The gates [i, o, f, g] come from one affine layer on
/// concat(x, h) with "W" and "b" in `scope`; c' = sigmoid(f) c + sigmoid(i)
/// tanh(g), h' = sigmoid(o) tanh(c'). Returns (h', c').
std::pair<VariablePtr, VariablePtr> lstm_cell(const VariablePtr& x,
                                              const VariablePtr& h,
                                              const VariablePtr& c,
                                              int64_t state_size,
                                              ParameterScope scope);

/// A one-layer LSTM over a sequence x (T, N, I), unrolled into T cells that
/// share their parameters. h0 and c0 (N, hidden) may be null (zeros).
/// Returns (y (T, N, hidden): every step's h, the last h, the last c).
std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(const VariablePtr& x,
                                                       const VariablePtr& h0,
                                                       const VariablePtr& c0,
                                                       int64_t hidden,
                                                       ParameterScope scope);

}  // namespace mg::parametric_functions
