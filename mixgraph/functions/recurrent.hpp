// NNabla's fused recurrent functions, RNN, LSTM and GRU: multi-layer,
// bidirectional, with initial states, and a recurrent state carried in fp32
// whatever the type_config.
//
// Mixed precision: x, the weights and the outputs are in the storage type,
// but the whole recurrence runs in fp32: h (and LSTM's c) go from step to
// step in fp32 (never rounded to half at each step, where a long sequence
// would drift), the gates come from fp32 GEMMs on the weights' fp32
// masters, and backward through time accumulates in fp32. Only the outputs
// and the input grads are rounded, once. The weights' grads are fp32 for
// fp32 masters, as every parametric function's. One driver for the CPU and
// CUDA (functions/ops/recurrent_driver.hpp).
#pragma once

#include <string>
#include <tuple>

#include <mixgraph/graph/function.hpp>

namespace mg {

/// LSTM's and GRU's arguments (NNabla's).
struct RecurrentOptions {
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

  MG_FIELDS(num_layers, dropout, bidirectional, training);
};
using LSTMOptions = RecurrentOptions;
using GRUOptions = RecurrentOptions;

/// RNN's arguments (NNabla's): LSTM's and the nonlinearity.
struct RNNOptions {
  int num_layers = 1;
  /// "tanh" or "relu".
  std::string nonlinearity = "tanh";
  float dropout = 0.0f;
  bool bidirectional = false;
  bool training = true;

  MG_FIELDS(num_layers, nonlinearity, dropout, bidirectional, training);
};

/// What the three share: the inputs x (T, B, I), h (and c) (L, D, B, H),
/// weight_l0 (D, G, H, I + H), then weight (L - 1, D, G, H, D H + H) when
/// L > 1, then bias (L, D, G_b, H), each optional (with one optional input
/// given, it is weight when L > 1, else bias: NNabla's rule); outputs y (T,
/// B, D H), h_n (and c_n) (L, D, B, H). G gates (RNN 1, LSTM 4, GRU 3) and
/// G_b bias rows (GRU 4: its candidate has separate input and hidden
/// biases).
class Recurrent : public Function {
 public:
  /// The layout of one of the three.
  struct Layout {
    int gates;
    int bias_gates;
    bool cell;  // LSTM's c beside h
  };
  Recurrent(int num_layers, float dropout, bool bidirectional, Layout layout)
      : num_layers_(num_layers),
        dropout_(dropout),
        directions_(bidirectional ? 2 : 1),
        layout_(layout) {}
  int num_outputs() const override { return layout_.cell ? 3 : 2; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The index of weight_l0 among the inputs (after x, h and c).
  int w0_index() const { return layout_.cell ? 3 : 2; }

  const int num_layers_;
  const float dropout_;
  const int directions_;
  const Layout layout_;
  // Set up by setup_impl.
  int64_t steps_ = 0, batch_ = 0, input_size_ = 0, hidden_ = 0;
  int weight_index_ = -1, bias_index_ = -1;  // -1: not given
};

namespace decl {
/// RNN's declaration.
inline constexpr FunctionDeclOf<RNNOptions> RNN{
    {"RNN",
     "rnn",
     {Port{"x"}, Port{"h"}, Port{"weight_l0"},
      Port{"weight", Port::floating, true, true},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}, Port{"h_n"}}}};
/// LSTM's declaration.
inline constexpr FunctionDeclOf<LSTMOptions> LSTM{
    {"LSTM",
     "lstm",
     {Port{"x"}, Port{"h"}, Port{"c"}, Port{"weight_l0"},
      Port{"weight", Port::floating, true, true},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}, Port{"h_n"}, Port{"c_n"}}}};
/// GRU's declaration.
inline constexpr FunctionDeclOf<GRUOptions> GRU{
    {"GRU",
     "gru",
     {Port{"x"}, Port{"h"}, Port{"weight_l0"},
      Port{"weight", Port::floating, true, true},
      Port{"bias", Port::floating, true, true}},
     {Port{"y"}, Port{"h_n"}}}};
}  // namespace decl

/// NNabla's RNN (Elman): h = act([x_t, h] W^T + b), act tanh or relu;
/// NNabla's weight_l0 (D, H, I + H), weight (L - 1, D, H, D H + H) and bias
/// (L, D, H), or the same with the gate axis of size 1 that LSTM and GRU
/// have ((D, 1, H, I + H), ...): the data is the same either way.
class RNN : public FunctionWith<RNNOptions, Recurrent> {
 public:
  explicit RNN(const RNNOptions& opts)
      : FunctionWith(opts, opts.num_layers, opts.dropout, opts.bidirectional,
                     Layout{1, 1, false}) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// NNabla's LSTM: gates [i, f, g, o] = [x_t, h] W^T + b (W's gate order,
/// NNabla's), c = sigmoid(f) c + sigmoid(i) tanh(g), h = sigmoid(o)
/// tanh(c); weight_l0 (D, 4, H, I + H), bias (L, D, 4, H).
class LSTM : public FunctionWith<LSTMOptions, Recurrent> {
 public:
  explicit LSTM(const LSTMOptions& opts)
      : FunctionWith(opts, opts.num_layers, opts.dropout, opts.bidirectional,
                     Layout{4, 4, true}) {}
};

/// NNabla's GRU: r = sigmoid([x_t, h] W_r^T + b_r), z likewise, n =
/// tanh(x_t W_nx^T + b_n + r (h W_nh^T + b_nh)), h = (1 - z) n + z h;
/// weight_l0 (D, 3, H, I + H) rows [r, z, n], bias (L, D, 4, H) rows [b_r,
/// b_z, b_n, b_nh].
class GRU : public FunctionWith<GRUOptions, Recurrent> {
 public:
  explicit GRU(const GRUOptions& opts)
      : FunctionWith(opts, opts.num_layers, opts.dropout, opts.bidirectional,
                     Layout{3, 4, false}) {}
};

namespace functions {
/// NNabla's RNN function (see mg::RNN): returns (y, h_n). weight is
/// required when num_layers > 1; weight and bias may be null.
std::tuple<VariablePtr, VariablePtr> rnn(const VariablePtr& x,
                                         const VariablePtr& h,
                                         const VariablePtr& weight_l0,
                                         const VariablePtr& weight,
                                         const VariablePtr& bias,
                                         const RNNOptions& options = {});
/// NNabla's LSTM function (see mg::LSTM): returns (y, h_n, c_n).
std::tuple<VariablePtr, VariablePtr, VariablePtr> lstm(
    const VariablePtr& x, const VariablePtr& h, const VariablePtr& c,
    const VariablePtr& weight_l0, const VariablePtr& weight,
    const VariablePtr& bias, const LSTMOptions& options = {});
/// NNabla's GRU function (see mg::GRU): returns (y, h_n).
std::tuple<VariablePtr, VariablePtr> gru(const VariablePtr& x,
                                         const VariablePtr& h,
                                         const VariablePtr& weight_l0,
                                         const VariablePtr& weight,
                                         const VariablePtr& bias,
                                         const GRUOptions& options = {});
}  // namespace functions

}  // namespace mg
