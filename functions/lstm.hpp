// LSTM: NNabla's fused LSTM function (multi-layer, bidirectional, with
// initial states) whose recurrent state is carried in fp32, the parametric
// PF::lstm over it, and PF::lstm_cell, one step composed of Affine, Split
// and elementwise functions.
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/variable.hpp>
#include <tuple>
#include <utility>
#include <vector>

namespace mg {

struct LSTMOptions {
  /// Stacked layers; layer l > 0 reads the outputs of layer l - 1.
  int num_layers = 1;
  /// NNabla's dropout between layers: only 0 is implemented (apply
  /// F::dropout to y instead); another value is an error, never ignored.
  float dropout = 0.0f;
  /// A second direction per layer, run from the last step to the first; y
  /// holds both directions' h side by side.
  bool bidirectional = false;
  /// NNabla's flag: whether grads will be taken. Kept for the codec; the
  /// function keeps what backward needs either way.
  bool training = true;
};

/// The fields, for writing and reading the function's arguments.
template <class V>
void visit_fields(LSTMOptions& o, V&& v) {
  v("num_layers", o.num_layers);
  v("dropout", o.dropout);
  v("bidirectional", o.bidirectional);
  v("training", o.training);
}

namespace decl {
/// LSTM's declaration, NNabla's inputs: x (T, B, I), h and c (L, D, B, H),
/// weight_l0 (D, 4, H, I + H), then weight (L - 1, D, 4, H, D H + H) when
/// L > 1, then bias (L, D, 4, H), each optional. With five inputs the fifth
/// is weight when L > 1, else bias (NNabla's rule).
inline constexpr FunctionDeclOf<LSTMOptions> LSTM{
    {"LSTM",
     "lstm",
     {Port{"x"}, Port{"h"}, Port{"c"}, Port{"weight_l0"},
      Port{"weight", Port::floating, true, true},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}, Port{"h_n"}, Port{"c_n"}}}};
}  // namespace decl

/// NNabla's LSTM: per layer and direction, for each step t the gates
/// [i, f, g, o] = [x_t, h] W^T + b (W's gate order, NNabla's), c = sigmoid(f)
/// c + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c). y (T, B, D H) holds the
/// last layer's h at every step, h_n and c_n (L, D, B, H) the last states.
///
/// Mixed precision: x, the weights and the outputs are in the storage type,
/// but the whole recurrence runs in fp32: h and c are carried in fp32 from
/// step to step (never rounded to half at each step, where a long sequence
/// would drift), the gates are computed with fp32 GEMMs on the weights'
/// fp32 masters, and backward through time accumulates in fp32. Only y,
/// h_n, c_n and the input grads are rounded, once. The weights' grads are
/// fp32 for fp32 masters, as every parametric function's.
class LSTM : public Function {
 public:
  explicit LSTM(const LSTMOptions& opts) : opts_(opts) {}
  int num_outputs() const override { return 3; }
  const LSTMOptions& options() const { return opts_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const LSTMOptions opts_;
  // Set up by setup_impl.
  int64_t steps_ = 0, batch_ = 0, input_size_ = 0, hidden_ = 0;
  int directions_ = 1;
  int weight_index_ = -1, bias_index_ = -1;  // -1: not given
};

namespace functions {
/// NNabla's LSTM function (see mg::LSTM): returns (y, h_n, c_n). weight is
/// required when num_layers > 1; weight and bias may be null.
std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(
    const VariablePtr& x, const VariablePtr& h, const VariablePtr& c,
    const VariablePtr& weight_l0, const VariablePtr& weight,
    const VariablePtr& bias, const LSTMOptions& options = {});
}  // namespace functions

}  // namespace mg

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

/// A one-layer LSTM over a sequence x (T, N, I): the fused LSTM function
/// (fp32 recurrent state), with NNabla's PF.lstm parameters "weight_l0" (1,
/// 4, hidden, I + hidden) and "bias" (1, 1, 4, hidden) in `scope`, both
/// drawn uniformly from +-1/sqrt(hidden) (PyTorch's rule). h0 and c0 (N,
/// hidden) may be null (zeros). Returns (y (T, N, hidden): every step's h,
/// the last h, the last c).
std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(const VariablePtr& x,
                                                       const VariablePtr& h0,
                                                       const VariablePtr& c0,
                                                       int64_t hidden,
                                                       ParameterScope scope);

}  // namespace mg::parametric_functions
