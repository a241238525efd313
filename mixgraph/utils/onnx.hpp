// ONNX models, written and read with the ONNX project's own library (its
// protobuf classes and its checker; Debian's libonnx-dev): a graph exported
// the way save_network writes YAML, and an ONNX model rebuilt into a
// runnable Network the way load_network does.
//
// Opset 17 (the newest ONNX 1.12, Debian 12's, knows). The types are the
// graph's: a graph built in a half context exports its functions in fp16
// (fp32 where the precision policy runs them in fp32) with Cast nodes where
// they meet, its parameters in the type they hold (convert them first with
// convert_parameters_for_inference for fp16 initializers), and float inputs
// and outputs, so that a converted model is a drop-in replacement.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/utils/yaml/network.hpp>

namespace mg {

/// The ONNX opset save_onnx writes.
inline constexpr int kOnnxOpset = 17;

/// Whether the library was built with ONNX (MIXGRAPH_ONNX); without it
/// save_onnx and load_onnx throw, saying how to get it.
bool onnx_available();

/// How save_onnx writes a network.
struct SaveOnnxOptions {
  /// The inputs' (and outputs') first dimension written as the symbol "N"
  /// instead of its size; a Reshape to a shape whose first entry is its
  /// input's batch size then copies that dimension (ONNX's 0).
  bool free_batch = false;
};

/// Writes the graph that computes `outputs` (named) as an ONNX model: leaves
/// found in `params` become initializers under their names, the other
/// leaves the model's inputs (named by Variable::name() or "x0", "x1", ...).
/// Inference semantics: Dropout is the identity; batch normalization must
/// use its running statistics (batch_stat false). A function with no ONNX
/// equivalent (a loss, a stochastic function) or arguments ONNX cannot
/// express is std::invalid_argument naming it; the model is checked with
/// ONNX's checker before it is written. A failed write is
/// std::runtime_error.
void save_onnx(const std::string& path, const std::string& name,
               const std::vector<std::pair<std::string, VariablePtr>>& outputs,
               const ParameterScope& params,
               const SaveOnnxOptions& options = {});
/// The same, as the serialized ModelProto.
std::string network_to_onnx(
    const std::string& name,
    const std::vector<std::pair<std::string, VariablePtr>>& outputs,
    const ParameterScope& params, const SaveOnnxOptions& options = {});

/// Rebuilds an ONNX model (ours, or another tool's: the onnx Python helper,
/// PyTorch's exporter) in the default context. Initializers become
/// parameters in `params` under their names, with their values (a
/// parameter the scope already holds with the same shape keeps its object
/// and takes the file's values); a symbolic first input dimension, and any
/// dimension named as one, is set to options.batch_size. A node whose
/// inputs are all known then (constants, shapes, integer initializers) is
/// folded into a constant by running our functions on them (integer data
/// exactly, in int64). Elementwise operators and Where broadcast as ONNX
/// says. LSTM, GRU and RNN run our fused functions, their weights converted
/// once into the parameters "<node>/weight_l0" and "<node>/bias" (the node's
/// name without a leading '/': "rnn/LSTM/weight_l0"). Types in
/// the file (Cast to float16 included) do not decide the precision: the
/// context does, as for every graph. An operator that has no mixgraph
/// equivalent, or attributes outside what is mapped, is
/// std::invalid_argument naming the node and the operator; so is a file
/// that is not a valid model.
Network load_onnx(const std::string& path, ParameterScope& params,
                  const NetworkOptions& options = {});
Network network_from_onnx(const std::string& bytes, ParameterScope& params,
                          const std::string& source = "<bytes>",
                          const NetworkOptions& options = {});

/// The functions save_onnx maps, and the ONNX operators load_onnx reads
/// (for docs/onnx.md and for checking a network before training it).
std::vector<std::string> onnx_exportable_functions();
std::vector<std::string> onnx_importable_operators();

}  // namespace mg
