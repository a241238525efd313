// Without ONNX (MIXGRAPH_ONNX=OFF, or libonnx-dev missing at configure
// time) the ONNX entry points say how to get it; utils/onnx/ holds the real
// ones.
#include <mixgraph/utils/onnx.hpp>

#ifndef MIXGRAPH_WITH_ONNX

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

[[noreturn]] void no_onnx(const char* what) {
  throw std::runtime_error(
      msg("[", what,
          "] mixgraph was built without ONNX: apt-get install libonnx-dev "
          "libprotobuf-dev and configure with MIXGRAPH_ONNX=AUTO or ON"));
}

}  // namespace

bool onnx_available() { return false; }

void save_onnx(const std::string&, const std::string&,
               const std::vector<std::pair<std::string, VariablePtr>>&,
               const ParameterScope&, const SaveOnnxOptions&) {
  no_onnx("save_onnx");
}

std::string network_to_onnx(
    const std::string&, const std::vector<std::pair<std::string, VariablePtr>>&,
    const ParameterScope&, const SaveOnnxOptions&) {
  no_onnx("save_onnx");
}

Network load_onnx(const std::string&, ParameterScope&, const NetworkOptions&) {
  no_onnx("load_onnx");
}

Network network_from_onnx(const std::string&, ParameterScope&,
                          const std::string&, const NetworkOptions&) {
  no_onnx("load_onnx");
}

std::vector<std::string> onnx_exportable_functions() { return {}; }
std::vector<std::string> onnx_importable_operators() { return {}; }

}  // namespace mg

#endif  // MIXGRAPH_WITH_ONNX
