// PF::lstm over the fused LSTM function (functions/recurrent.hpp: fp32
// recurrent state), and PF::lstm_cell, one step composed of Affine, Split
// and elementwise functions.
#pragma once

#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/variable.hpp>
#include <tuple>
#include <utility>

namespace mg::parametric_functions {

/// One LSTM step, as NNabla's PF.lstm_cell: x (N, I), h and c (N,
/// state_size). The gates [i, o, f, g] come from one affine layer on
/// concat(x, h) with NNabla's "W" (I + state_size, 4, state_size) and "b"
/// (4, state_size) in `scope`/lstm/affine; c' = sigmoid(f) c + sigmoid(i)
/// tanh(g), h' = sigmoid(o) tanh(c'). Returns (h', c').
std::pair<VariablePtr, VariablePtr> lstm_cell(const VariablePtr& x,
                                              const VariablePtr& h,
                                              const VariablePtr& c,
                                              int64_t state_size,
                                              ParameterScope scope);

/// A one-layer LSTM over a sequence x (T, N, I): the fused LSTM function
/// (fp32 recurrent state), with NNabla's PF.lstm parameters "weight_l0" (1,
/// 4, hidden, I + hidden) and "bias" (1, 1, 4, hidden) in `scope`/lstm, both
/// drawn uniformly from +-1/sqrt(hidden) (PyTorch's rule). h0 and c0 (N,
/// hidden) may be null (zeros). Returns (y (T, N, hidden): every step's h,
/// the last h, the last c).
std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(const VariablePtr& x,
                                                       const VariablePtr& h0,
                                                       const VariablePtr& c0,
                                                       int64_t hidden,
                                                       ParameterScope scope);

}  // namespace mg::parametric_functions
