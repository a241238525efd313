// Inference models: a training graph turned into its inference form
// (inference_graph), and a trained float network's parameters cast once to
// fp16 or bf16 where the precision policy runs the functions that read them
// in the reduced type, and kept fp32 where it does not (what MXNet's
// amp.convert_model does; NNabla and PyTorch have no C++ form).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

/// The graph below `outputs` in its inference form, computing what the
/// trained model computes at test time (what PyTorch's model.eval() and
/// NNabla's batch_stat=False give), on the same leaves (inputs and
/// parameters: set an input's data, or reshape it for another batch size,
/// and run forward):
/// - batch normalization (BatchNormalization, FusedBatchNormalization,
///   SyncBatchNormalization) normalises with the running mean and variance
///   (batch_stat false; SyncBatchNormalization becomes BatchNormalization);
/// - Dropout, RandomFlip, RandomShift and RandomErase are the identity, and
///   RandomCrop and ImageAugmentation (without padding) the centre crop to
///   their output's size;
/// - an output computed from losses (SoftmaxCrossEntropy, SquaredError, ...,
///   through a mean or a sum) is replaced by the variable its losses read
///   as their prediction (their first input): pass the loss or the
///   prediction alike.
/// The functions above a changed one are rebuilt in the default context
/// (call it in the context the graph was built in); the rest of the graph
/// is shared with the training graph. Not mapped, std::invalid_argument
/// naming the function: VATNoise, an ImageAugmentation that pads, and
/// losses that read more than one prediction.
std::vector<VariablePtr> inference_graph(
    const std::vector<VariablePtr>& outputs);
VariablePtr inference_graph(const VariablePtr& output);
/// The same for named outputs (as save_network and save_onnx take them).
std::vector<std::pair<std::string, VariablePtr>> inference_graph(
    const std::vector<std::pair<std::string, VariablePtr>>& outputs);

/// The functions below `outputs` that behave differently in training and
/// in inference, each once, as "Dropout" or "BatchNormalization (batch_stat
/// true)": empty when the graph is in its inference form. save_network
/// refuses a graph where this is not empty (SaveNetworkOptions::training).
std::vector<std::string> training_only_functions(
    const std::vector<VariablePtr>& outputs);

/// What a conversion did.
struct InferenceConversion {
  std::string type_config;                    // "half" or "bfloat16"
  std::vector<std::string> reduced;           // cast to the reduced type
  std::vector<std::string> kept_float;        // read in fp32 by some function
  int64_t bytes_before = 0, bytes_after = 0;  // of the parameters' data
};

/// Casts the parameters (in `params`) that the graph below `outputs` reads
/// to the type its functions compute in, once: the graph must have been
/// built in the target context (cpu:half, cudnn:bfloat16, ...), where the
/// precision policy decided each function's type. A parameter stays fp32
/// when any function reads it in fp32 (a float-policy function, or an fp32
/// port such as batch normalization's running mean and variance); integer
/// parameters and those the graph does not read are left as they are.
/// save_parameters then writes each in its new type.
InferenceConversion convert_parameters_for_inference(
    const std::vector<VariablePtr>& outputs, const ParameterScope& params);

/// The same from files: the network (save_network's YAML) and its float
/// parameters are loaded in `context`, converted, and written to h5_out
/// (yaml_out gets the network, which does not depend on the types). Load
/// the result with load_trained_network in the same type_config. A free
/// batch dimension is set to 1 while converting (the file keeps it free).
InferenceConversion convert_network_for_inference(const std::string& yaml_in,
                                                  const std::string& h5_in,
                                                  const std::string& yaml_out,
                                                  const std::string& h5_out,
                                                  const Context& context);

}  // namespace mg
