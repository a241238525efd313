// Mixed precision inference models: a trained float network's parameters
// cast once to fp16 or bf16 where the precision policy runs the functions
// that read them in the reduced type, and kept fp32 where it does not
// (what MXNet's amp.convert_model does; NNabla and PyTorch have no C++ form).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mixgraph/contexts/context.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

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
