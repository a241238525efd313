// How ONNX's LSTM, GRU and RNN lay out their gates and biases beside ours:
// the one place the importer (ONNX -> ours) and the exporter (ours -> ONNX)
// read it from. Internal.
#pragma once

#include <cstdint>
#include <vector>

namespace mg::onnx_io {

enum class RecurrentKind { rnn, lstm, gru };

/// The gate blocks, G: RNN 1, LSTM 4, GRU 3.
inline int64_t recurrent_gates(RecurrentKind kind) {
  return kind == RecurrentKind::lstm ? 4 : kind == RecurrentKind::gru ? 3 : 1;
}

/// ONNX's number of each of our gate blocks, in our order. LSTM: ONNX i, o,
/// f, c and ours i, f, g (c), o; GRU: ONNX z, r, h and ours r, z, n.
inline std::vector<int> onnx_gates(RecurrentKind kind) {
  if (kind == RecurrentKind::lstm) return {0, 2, 3, 1};
  if (kind == RecurrentKind::gru) return {1, 0, 2};
  return {0};
}

/// The inverse: our number of each of ONNX's gate blocks, in ONNX's order.
inline std::vector<int> our_gates(RecurrentKind kind) {
  const std::vector<int> onnx = onnx_gates(kind);
  std::vector<int> ours(onnx.size());
  for (size_t g = 0; g < onnx.size(); ++g) ours[onnx[g]] = static_cast<int>(g);
  return ours;
}

/// Our bias (L, D, G_b, H) has one row per gate, the sum of ONNX's input
/// (Wb) and hidden (Rb) biases, except GRU's candidate: its input bias in
/// row 2 (ONNX's Wbh) and its hidden bias apart in row 3 (ONNX's Rbh, read
/// inside the reset gate: linear_before_reset 1, which is PyTorch's GRU).
inline int64_t recurrent_bias_rows(RecurrentKind kind) {
  return kind == RecurrentKind::gru ? 4 : recurrent_gates(kind);
}
/// GRU's row of the candidate's hidden bias, and ONNX's gate it belongs to.
inline constexpr int64_t kGruHiddenBiasRow = 3;
inline constexpr int kGruCandidateGate = 2;

}  // namespace mg::onnx_io
