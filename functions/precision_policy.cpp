#include <mixgraph/functions/precision_policy.hpp>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mg {

const std::string& default_policy_yaml() {
  static const std::string yaml = R"(# mixgraph's default precision policy.
# reduced: fp16/bf16 in and out. accumulate_float: reduced storage, fp32 sums.
# float: fp32 in and out under every type_config.
reduced: [Affine, Convolution, Deconvolution, MaxPooling, AveragePooling,
          GlobalAveragePooling, ReLU, LeakyReLU, Sigmoid, Tanh, ELU, GELU,
          Add2, Sub2, Mul2, Div2, AddScalar, MulScalar, Reshape, Transpose,
          Concatenate, Slice, Dropout, Identity, Max, Cast,
          BatchMatmul, Embed, SoftPlus, Swish, HardTanh, ClipByValue, Sqrt,
          Rsqrt, Abs, Erf, Maximum2, Minimum2, Where, Split, Stack,
          Broadcast, Pad, Flip, OneHot, Gather, Min, ArgMax, ArgMin]
accumulate_float: [Sum, Mean, Softmax, LogSoftmax, SoftmaxCrossEntropy,
                   SigmoidCrossEntropy, SquaredError, BatchNormalization,
                   TopNError, LayerNormalization, GroupNormalization,
                   InstanceNormalization]
float: [Exp, Log, PowScalar]
)";
  return yaml;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::reduced: return "reduced";
    case Precision::accumulate_float: return "accumulate_float";
    case Precision::float32: return "float";
  }
  return "invalid";
}

PrecisionPolicy& PrecisionPolicy::instance() {
  static PrecisionPolicy policy;
  return policy;
}

PrecisionPolicy::PrecisionPolicy() { reset(); }

void PrecisionPolicy::reset() { load_string(default_policy_yaml(), "<default>"); }

void PrecisionPolicy::load_string(const std::string& yaml,
                                  const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("[PrecisionPolicy] " + source + ":" +
                                std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) {
    throw std::invalid_argument(
        "[PrecisionPolicy] " + source +
        ": expected a map with keys reduced, accumulate_float and float");
  }
  std::map<std::string, Precision> table;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    Precision p;
    if (key == "reduced") {
      p = Precision::reduced;
    } else if (key == "accumulate_float") {
      p = Precision::accumulate_float;
    } else if (key == "float") {
      p = Precision::float32;
    } else {
      throw std::invalid_argument(
          "[PrecisionPolicy] " + source + ":" +
          std::to_string(kv.first.Mark().line + 1) + ": unknown key '" + key +
          "'; expected reduced, accumulate_float or float");
    }
    if (!kv.second.IsSequence()) {
      throw std::invalid_argument("[PrecisionPolicy] " + source + ":" +
                                  std::to_string(kv.second.Mark().line + 1) +
                                  ": '" + key +
                                  "' must be a list of function names");
    }
    for (const auto& name : kv.second) {
      table[name.as<std::string>()] = p;
    }
  }
  table_ = std::move(table);
}

void PrecisionPolicy::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument("[PrecisionPolicy] cannot open '" + path + "'");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  load_string(ss.str(), path);
}

void PrecisionPolicy::set(const std::string& function, Precision precision) {
  table_[function] = precision;
}

Precision PrecisionPolicy::get(const std::string& function) const {
  auto it = table_.find(function);
  return it == table_.end() ? Precision::reduced : it->second;
}

std::string PrecisionPolicy::to_yaml() const {
  std::map<Precision, std::vector<std::string>> groups;
  for (const auto& kv : table_) groups[kv.second].push_back(kv.first);
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (Precision p : {Precision::reduced, Precision::accumulate_float,
                      Precision::float32}) {
    out << YAML::Key << precision_name(p) << YAML::Value << YAML::Flow
        << groups[p];
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace mg
